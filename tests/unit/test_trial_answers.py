"""A trial check's verdict and answer (``scheduler/trials.py``), and the answer as the faces
show it (``domain/trials.render``): pure, row by row."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from monitor.domain.schemas.trials import TrialResult
from monitor.domain.trials import render, wait_for
from monitor.keys import TRIAL_WAIT_MAX_SECONDS
from monitor.models import CheckResult, Failure, MonitorSpec
from monitor.scheduler.trials import answer, verdict

AT = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
SPEC = MonitorSpec(0, "trial", "http", "https://shop.example/", 60.0, 10.0, 1, False)
OK = CheckResult(0, AT, ok=True, status_code=200, latency_ms=40.0, timings={"ttfb_ms": 30.0})


def cert(days: float) -> dict[str, object]:
    return {"certificate": {"not_after": (AT + timedelta(days=days)).isoformat()}}


# (case, spec, result, status, why degraded)
VERDICTS = [
    ("a success", SPEC, OK, "up", None),
    ("slower than allowed", replace(SPEC, degraded_above_ms=10), OK, "degraded",
     "response time 40 ms above 10 ms"),
    ("fast enough", replace(SPEC, degraded_above_ms=100), OK, "up", None),
    ("a certificate expiring soon", SPEC, replace(OK, details=cert(3)), "degraded",
     "certificate expires in 3 days (2026-12-04)"),
    ("a certificate with time left", SPEC, replace(OK, details=cert(60)), "up", None),
    ("a failure", replace(SPEC, degraded_above_ms=10),
     replace(OK, ok=False, error="keyword missing", failure=Failure.ASSERTION), "down", None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("spec", "result", "status", "why"), [v[1:] for v in VERDICTS], ids=[v[0] for v in VERDICTS]
)
def test_verdict(spec: MonitorSpec, result: CheckResult, status: str, why: str | None) -> None:
    assert verdict(spec, result) == (status, why)


def test_the_answer_reads_back_as_the_checks_api_shows_a_check() -> None:
    outcomes = [{"assertion": "keyword", "ok": False, "message": "no"}]
    failed = replace(
        OK, ok=False, error="keyword missing", failure=Failure.ASSERTION, details={"assertions": outcomes}
    )
    shown = render(answer(SPEC, failed, 0.0412, "eu"))
    assert TrialResult.model_validate(shown)  # as the OpenAPI document says
    assert (shown["status"], shown["failure"], shown["duration_ms"]) == ("down", "assertion", 41.2)
    check = shown["check"]
    assert (check["time"], check["checked_from"], check["error"]) == (
        "2026-12-01T12:00:00Z",
        "eu",
        "keyword missing",
    )
    assert check["timings"] == {"dns_ms": None, "connect_ms": None, "tls_ms": None, "ttfb_ms": 30.0}
    assert check["details"]["assertions"][0]["ok"] is False


@pytest.mark.parametrize(("timeout", "waited"), [(1, 9), (10, 18), (30, 38), (120, TRIAL_WAIT_MAX_SECONDS)])
def test_the_wait_is_the_timeout_and_a_margin_within_a_cap(timeout: float, waited: float) -> None:
    assert wait_for(timeout) == waited
