"""What a worker may still do with a job it reads (``worker/jobs.py``): run it with the time its
deadline leaves, or answer NOT_RUN; and a result's JSON both ways (``checks/jobs.py``). Pure."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from monitor.checks.jobs import result_json, result_of, row_form
from monitor.models import CheckResult, Failure
from monitor.worker.jobs import Job, budget, cut_short

T = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
NOW = 1_000_000.0


def job(left: float, timeout: float = 60.0) -> Job:
    return Job("j", "pagespeed", "monitor:work:reply:x", T, NOW + left, {"id": 7, "timeout_seconds": timeout})


NOBODY = "not run: no worker was free"
STOPPED = "not run: the worker running it stopped, and {} s of its 60 s were left for another"


@pytest.mark.parametrize(
    ("left", "taken_over", "given", "why"),
    [
        pytest.param(60.0, False, 60.0, None, id="fresh-job-gets-its-whole-timeout"),
        pytest.param(59.9, False, 60.0, None, id="read-a-moment-later-still-the-whole-timeout"),
        pytest.param(58.0, False, 60.0, None, id="queued-within-the-grace-the-whole-timeout"),
        pytest.param(45.0, False, 47.0, None, id="read-late-runs-with-what-is-left-and-the-grace"),
        pytest.param(28.0, True, 30.0, None, id="taken-over-with-half-left-runs"),
        pytest.param(27.0, True, None, STOPPED.format(27), id="taken-over-too-late"),
        pytest.param(-3.0, True, None, STOPPED.format(0), id="taken-over-after-its-deadline"),
        pytest.param(-3.0, False, None, f"{NOBODY} before its deadline (3 s ago)", id="read-after-deadline"),
        pytest.param(10.0, False, None, f"{NOBODY} until 10 s of its 60 s were left", id="read-too-late"),
    ],
)
def test_budget(left: float, taken_over: bool, given: float | None, why: str | None) -> None:
    assert budget(job(left), NOW, taken_over=taken_over) == (given, why)


@pytest.mark.parametrize(
    ("given", "failure", "kept"),
    [
        pytest.param(60.0, Failure.TIMEOUT, True, id="timeout-with-the-whole-time-is-the-targets"),
        pytest.param(40.0, Failure.TIMEOUT, False, id="timeout-of-a-shortened-run-is-ours"),
        pytest.param(40.0, Failure.ASSERTION, True, id="other-failures-stand"),
        pytest.param(40.0, None, True, id="success-stands"),
    ],
)
def test_cut_short(given: float, failure: Failure | None, kept: bool) -> None:
    result = CheckResult(7, T, ok=failure is None, error="x" if failure else None, failure=failure)
    out = cut_short(job(60.0), given, result)
    assert (out is result) is kept
    if not kept:
        assert out.failure is Failure.NOT_RUN and out.error == (
            "not run: started late, it had 40 s of its 60 s and timed out"
        )


def test_a_result_goes_through_json_unchanged() -> None:
    result = CheckResult(
        7, T, ok=True, status_code=200, latency_ms=12.5, timings={"ttfb_ms": 3.0},
        details={"metrics": {"lcp_ms": 1200}}, answered=True,
    )  # fmt: skip
    assert result_of(result_json(result)) == result
    failed = CheckResult(7, T, ok=False, error="not run: x", failure=Failure.NOT_RUN)
    assert result_of(result_json(failed)) == failed


def test_the_row_form_keeps_what_makes_a_spec() -> None:
    row = {"id": 1, "type": "pagespeed", "tags": ("a",), "updated_at": T, "ping_token": "t", "settings": {}}
    assert row_form(row) == {"id": 1, "type": "pagespeed", "tags": ["a"], "settings": {}}
