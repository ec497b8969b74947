"""The sign-in benchmark's open-loop schedule and its options (bench/signin.py)."""

from __future__ import annotations

import pytest

from bench import signin


def test_schedule_sends_every_one_over_rate_seconds() -> None:
    times = signin.schedule(20, 2)
    assert len(times) == 40
    assert times[0] == 0 and times[1] == pytest.approx(0.05) and times[-1] == pytest.approx(1.95)


def test_options_and_their_bounds() -> None:
    args = signin.parse_args(["--rate", "5", "--duration", "30", "--api-core", "-1"])
    assert (args.rate, args.duration, args.api_core, args.harness_core) == (5, 30, None, 1)
    assert args.db_name == "monitor_bench_signin"
    with pytest.raises(SystemExit):
        signin.parse_args(["--rate", "0"])
