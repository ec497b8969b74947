"""The heartbeat's pure parts: schedules (period or cron in a zone, plus grace), the results of
pings and misses, tokens, and the settings a body may give."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from pydantic import ValidationError

from monitor.checks.heartbeat import (
    HeartbeatSettings,
    Schedule,
    missed,
    new_token,
    ping_result,
    plausible_token,
    schedule_of,
)

T = datetime(2026, 3, 28, 12, 0, tzinfo=UTC)
HOURLY = Schedule(interval=timedelta(hours=1), grace=timedelta(minutes=5))
BERLIN_3AM = Schedule(
    interval=timedelta(days=1), grace=timedelta(minutes=30), cron="0 3 * * *", tz=ZoneInfo("Europe/Berlin")
)


@pytest.mark.parametrize(
    ("schedule", "last_ping", "deadline"),
    [
        ("hourly", T, T + timedelta(hours=1, minutes=5)),
        # 03:00 Berlin is 02:00 UTC in winter (CET); the night of 29 March the clock springs to
        # CEST, so 03:00 that night is 01:00 UTC.
        ("03:00 Berlin", datetime(2026, 3, 27, 2, 10, tzinfo=UTC), datetime(2026, 3, 28, 2, 30, tzinfo=UTC)),
        ("03:00 Berlin", datetime(2026, 3, 28, 2, 10, tzinfo=UTC), datetime(2026, 3, 29, 1, 30, tzinfo=UTC)),
        # A ping a few seconds before 03:00 (the job's host clock runs fast) is that night's
        # run: the next is expected the night after, not at once (a false down at 03:30).
        (
            "03:00 Berlin",
            datetime(2026, 3, 28, 1, 59, 57, tzinfo=UTC),
            datetime(2026, 3, 29, 1, 30, tzinfo=UTC),
        ),
        # Earlier than the allowance (a minute), it is a run of its own: 03:00 is still due.
        ("03:00 Berlin", datetime(2026, 3, 28, 1, 58, tzinfo=UTC), datetime(2026, 3, 28, 2, 30, tzinfo=UTC)),
    ],
)
def test_the_deadline_after_a_ping(schedule: str, last_ping: datetime, deadline: datetime) -> None:
    chosen = HOURLY if schedule == "hourly" else BERLIN_3AM
    assert chosen.deadline(last_ping) == deadline


def test_misses_repeat_every_period() -> None:
    first = HOURLY.deadline(T)
    assert HOURLY.next_miss(first) == first + timedelta(hours=1)
    # On cron, the next run's time plus the grace: the job may still ping within it.
    berlin_first = BERLIN_3AM.deadline(datetime(2026, 3, 27, 2, 10, tzinfo=UTC))
    assert BERLIN_3AM.next_miss(berlin_first) == datetime(2026, 3, 29, 1, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("schedule", "text"),
    [
        (HOURLY, "expected every 1 h, grace 5 min"),
        (Schedule(timedelta(seconds=90), timedelta(seconds=2)), "expected every 90 s, grace 2 s"),
        (BERLIN_3AM, "expected on '0 3 * * *' (Europe/Berlin), grace 30 min"),
    ],
)
def test_the_schedule_in_words(schedule: Schedule, text: str) -> None:
    assert schedule.describe() == text


def test_a_miss_names_the_last_ping_and_the_schedule() -> None:
    result = missed(7, T, T - timedelta(hours=2), HOURLY)
    assert not result.ok and result.time == T
    assert result.error == "no ping since 2026-03-28T10:00:00Z (expected every 1 h, grace 5 min)"
    assert missed(7, T, None, HOURLY).error == "no ping yet (expected every 1 h, grace 5 min)"


@pytest.mark.parametrize(
    ("kind", "body", "started", "ok", "error", "details"),
    [
        ("ok", None, None, True, None, {"ping": "ok"}),
        ("ok", "42 files", T - timedelta(seconds=90), True, None,
         {"ping": "ok", "body": "42 files", "run_seconds": 90.0}),
        ("fail", "disk full\nrsync exited 23", None, False, "the job reported a failure: disk full",
         {"ping": "fail", "body": "disk full\nrsync exited 23"}),
        ("fail", None, None, False, "the job reported a failure", {"ping": "fail"}),
        # A start recorded after the ping (clocks of two api processes) gives no run time.
        ("ok", None, T + timedelta(seconds=1), True, None, {"ping": "ok"}),
    ],
)  # fmt: skip
def test_the_result_of_a_ping(
    kind: str, body: str | None, started: datetime | None, ok: bool, error: str | None, details: dict
) -> None:
    result = ping_result(3, T, kind, body, False, started)
    assert (result.ok, result.error, result.details) == (ok, error, {"heartbeat": details})


def test_a_cut_body_says_so() -> None:
    assert ping_result(3, T, "ok", "x" * 10, True, None).details == {
        "heartbeat": {"ping": "ok", "body": "x" * 10, "body_truncated": True}
    }


def test_tokens_are_random_and_have_one_shape() -> None:
    tokens = {new_token() for _ in range(1000)}
    assert len(tokens) == 1000 and all(plausible_token(t) for t in tokens)
    for bad in ("", "a" * 31, "a" * 33, "a" * 31 + "/", "a" * 31 + "é", "a" * 31 + "."):
        assert not plausible_token(bad)


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ({"cron": "0 3 * *"}, "4 fields"),
        ({"cron": "61 3 * * *"}, "cron"),
        ({"cron": "0 3 * * *", "timezone": "Mars/Olympus"}, "unknown time zone"),
        ({"timezone": "Europe/Berlin"}, "applies to a cron schedule"),
        ({"grace_seconds": 0}, "greater than or equal to 1"),
        ({"grace_seconds": 7 * 86400 + 1}, "less than or equal to"),
        ({"period": 60}, "Extra inputs"),
    ],
)
def test_settings_refuse(given: dict, problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        HeartbeatSettings.model_validate(given)


def test_settings_become_a_schedule() -> None:
    got = HeartbeatSettings.model_validate(
        {"cron": "0  3 * * *", "timezone": "Europe/Berlin", "grace_seconds": 1800}
    )
    assert schedule_of(got, 86400) == BERLIN_3AM
    assert schedule_of(HeartbeatSettings.model_validate({}), 3600) == Schedule(
        timedelta(hours=1), timedelta(seconds=300)
    )
