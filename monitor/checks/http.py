"""HTTP(S) check: one GET through the SSRF-safe client, judged by expected statuses."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from monitor.checks.base import Check, CheckContext
from monitor.models import CheckResult, MonitorSpec
from monitor.net.client import fetch


class HttpCheck(Check):
    kind: ClassVar[str] = "http"

    async def run(self, monitor: MonitorSpec, ctx: CheckContext, started: datetime) -> CheckResult:
        got = await fetch(
            ctx.session,
            ctx.policy,
            monitor.url,
            timeout=monitor.timeout_seconds,
            follow_redirects=monitor.follow_redirects,
        )
        error = got.error
        ok = error is None and got.status is not None and monitor.expects(got.status)
        if error is None and not ok:
            error = f"unexpected status {got.status}"
        return CheckResult(
            monitor_id=monitor.id,
            time=started,
            ok=ok,
            status_code=got.status,
            latency_ms=round(got.elapsed_ms, 3),
            error=error,
            location=got.location,
            timings=got.timings,
        )
