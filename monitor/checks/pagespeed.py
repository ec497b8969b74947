"""Page speed (``type: pagespeed``): a Lighthouse run of the URL in a real Chromium, its Core
Web Vitals and category scores kept in the check's details, assertions on any of them.

A heavy check (``checks/heavy.py``): the scheduler queues it, a ``monitor worker`` runs
``execute``: a Chromium of its own (``ctx.browser.run``: the vetting proxy in front of every
connection, niced, memory-capped, killed at the timeout) and the Lighthouse CLI driving it
over DevTools (``monitor/browser/lighthouse.py``), with the mobile profile (Lighthouse's
default: a mid-range phone on a slow 4G, simulated) or ``--preset=desktop``. What its report
says and the verdict are ``checks/lighthouse_report.py``'s, pure.

Up means Lighthouse loaded the page (no runtime error: a document answered 404, one that never
paints and one that cannot be fetched are down, named by Lighthouse's code) and every
``down`` assertion held; a failed ``degraded`` assertion makes it degraded
(``details["degraded"]``, read by judging as a slow answer is). An assertion names a metric
(``lcp_ms``, ``cls``, ``tbt_ms``, ``fcp_ms``, ``speed_index_ms``, ``ttfb_ms``: Lighthouse's
numbers, milliseconds but for CLS) or a category score (``performance``, ``accessibility``,
``best_practices``, ``seo``: 0 to 1 as Lighthouse gives them). A category an assertion names
is run even when ``categories`` leaves it out (the metrics are performance's).

``latency_ms`` is the LCP, so the monitor's response-time chart draws the LCP over time.

Cost, measured here (2 cores): a run of a small local page takes 12-13 s of wall time (Chromium
up in 0.3 s, Lighthouse 8-10 s, the load) and about 4 s of CPU (node 3.2 s, Chromium the
rest); Chromium's peak is about 480 MiB (Pss), node's about 230 MiB (RSS). Hence the
type's minimum interval of 300 s and its default timeout of 90 s.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from monitor.browser import BrowserFailed
from monitor.browser.lighthouse import LighthouseFailed, LighthouseRun, find_cli, run_lighthouse
from monitor.checks import lighthouse_report as lr
from monitor.checks.base import STORED, CheckContext, ResultDetails
from monitor.checks.heavy import HeavyCheck
from monitor.checks.http_settings import Url
from monitor.models import CheckResult, Failure, MonitorSpec
from monitor.net.client import clip_error
from monitor.net.policy import parse_target_url

KIND = "pagespeed"
DEFAULT_TIMEOUT_SECONDS = 90.0
# Past the timeout, how long ``execute`` waits for the run to end (the launcher kills it then).
GRACE_SECONDS = 5.0
# Of the timeout, what Lighthouse needs besides the page's load (config, its CPU benchmark, the
# audits: 8-10 s here) and Chromium's start: the rest is its --max-wait-for-load, at most 45 s.
OVERHEAD_SECONDS = 20.0
MAX_WAIT_FOR_LOAD_MS = 45_000
MIN_WAIT_FOR_LOAD_MS = 5_000
MAX_ASSERTIONS = 20
REFUSALS_KEPT = 20

Figure = Literal[
    "lcp_ms", "cls", "tbt_ms", "fcp_ms", "speed_index_ms", "ttfb_ms",
    "performance", "accessibility", "best_practices", "seo",
]  # fmt: skip
Category = Literal["performance", "accessibility", "best-practices", "seo"]
ALL_CATEGORIES: tuple[Category, ...] = ("performance", "accessibility", "best-practices", "seo")


class PageSpeedAssertion(BaseModel):
    """A bound on one of Lighthouse's figures: ``{"metric": "lcp_ms", "op": "<=", "value": 2500}``."""

    model_config = ConfigDict(extra="forbid")

    metric: Figure = Field(description="a metric (ms; cls has no unit) or a category score (0 to 1)")
    op: Literal["<=", "<", ">=", ">"]
    value: float = Field(ge=0, le=3_600_000, allow_inf_nan=False)
    severity: Literal["down", "degraded"] = Field(
        "down", description="what a failure makes the monitor: down, or degraded while it stays up"
    )

    @field_validator("value")
    @classmethod
    def _score_range(cls, value: float, info: ValidationInfo) -> float:
        if info.data.get("metric") in lr.SCORES and value > 1:
            raise ValueError("a score is from 0 to 1, as Lighthouse gives it (0.8 for 80)")
        return value


class PageSpeedSettings(BaseModel):
    """A page-speed monitor: Lighthouse runs ``url`` in Chromium; down when the page does not
    load or a ``down`` assertion fails, degraded when a ``degraded`` one does."""

    model_config = ConfigDict(extra="forbid")

    url: Url
    profile: Literal["mobile", "desktop"] = Field(
        "mobile", description="Lighthouse's mobile profile (a phone on slow 4G, simulated) or desktop preset"
    )
    categories: list[Category] = Field(
        default_factory=lambda: list(ALL_CATEGORIES),
        min_length=1,
        max_length=4,
        description="the Lighthouse categories run (those an assertion names are run anyway)",
    )
    assertions: list[PageSpeedAssertion] = Field(default_factory=list, max_length=MAX_ASSERTIONS)

    @field_validator("categories")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))


@dataclass(frozen=True)
class PageSpeedOptions:
    """A page-speed monitor's runtime form."""

    url: str
    profile: Literal["mobile", "desktop"]
    categories: tuple[str, ...]
    bounds: tuple[lr.Bound, ...]

    @classmethod
    def of(cls, settings: PageSpeedSettings) -> PageSpeedOptions:
        bounds = tuple(lr.Bound(a.metric, a.op, a.value, a.severity) for a in settings.assertions)
        needed = {"performance" if b.metric in lr.METRICS else lr.SCORES[b.metric] for b in bounds}
        categories = tuple(c for c in lr.CATEGORIES if c in settings.categories or c in needed)
        return cls(settings.url, settings.profile, categories, bounds)


# -- details -------------------------------------------------------------------------------


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PageSpeedMetrics(_Model):
    lcp_ms: float | None = None
    cls: float | None = None
    tbt_ms: float | None = None
    fcp_ms: float | None = None
    speed_index_ms: float | None = None
    ttfb_ms: float | None = None


class PageSpeedScores(_Model):
    performance: float | None = None
    accessibility: float | None = None
    best_practices: float | None = None
    seo: float | None = None


class PageSpeedOutcome(_Model):
    assertion: str = Field(description="lcp_ms <= 2500")
    ok: bool
    severity: Literal["down", "degraded"]
    value: float | None = None
    message: str | None = None


class FailedAudit(_Model):
    id: str
    title: str
    category: str
    score: float
    display_value: str | None = None


class RuntimeErrorModel(_Model):
    code: str
    message: str


class PageSpeedDetails(ResultDetails):
    """pagespeed: Lighthouse's metrics and scores, each assertion's outcome, the top failed audits"""

    profile: str | None = None
    lighthouse_version: str | None = None
    final_url: str | None = None
    metrics: PageSpeedMetrics | None = None
    scores: PageSpeedScores | None = None
    assertions: list[PageSpeedOutcome] | None = None
    failed_audits: list[FailedAudit] | None = Field(None, description="the costliest first, at most 10")
    runtime_error: RuntimeErrorModel | None = Field(None, description="Lighthouse's: the page did not load")
    warnings: list[str] | None = None
    refusals: list[str] | None = Field(None, description="connections the vetting proxy refused in the run")
    degraded: str | None = Field(None, description="the failed degraded assertions, when up")


# -- the check -----------------------------------------------------------------------------


class PageSpeedCheck(HeavyCheck):
    kind: ClassVar[str] = KIND
    Settings: ClassVar[type[BaseModel]] = PageSpeedSettings
    Details: ClassVar[type[ResultDetails] | None] = PageSpeedDetails
    default_timeout_seconds: ClassVar[float | None] = DEFAULT_TIMEOUT_SECONDS
    confirm_after: ClassVar[int] = 1  # a run is minutes apart: one failure is an outage

    def target(self, settings: PageSpeedSettings) -> str:
        return settings.url

    def hosts(self, settings: PageSpeedSettings) -> tuple[str, ...]:
        return (parse_target_url(settings.url).raw_host or "",)

    def options(self, settings: dict[str, Any] | None, secrets: dict[str, Any] | None) -> PageSpeedOptions:
        return PageSpeedOptions.of(PageSpeedSettings.model_validate(settings or {}, context=STORED))

    async def execute(self, monitor: MonitorSpec, ctx: CheckContext, started: datetime) -> CheckResult:
        options: PageSpeedOptions = monitor.options or self.options({"url": monitor.url}, None)
        timeout = monitor.timeout_seconds
        if ctx.browser is None:
            return _failed(monitor, started, "internal error: no browser in this process", Failure.CHECKER)
        cli = find_cli(ctx.lighthouse)
        if cli is None:
            why = "lighthouse is not installed (make browser-tools, or MONITOR_LIGHTHOUSE_PATH)"
            return _failed(monitor, started, why, Failure.CHECKER)
        asked = LighthouseRun(options.url, options.profile, options.categories, max_wait_for_load(timeout))
        refusals: list[str] = []
        try:
            async with asyncio.timeout(timeout + GRACE_SECONDS):
                async with ctx.browser.run(timeout) as run:
                    refusals = run.refusals
                    nice = getattr(ctx.browser, "nice", 10)
                    raw = await run_lighthouse(cli, asked, run.devtools_port, nice=nice)
                    refusals = list(run.refusals)
        except TimeoutError:
            return _failed(monitor, started, f"lighthouse did not end within {timeout:g} s", Failure.TIMEOUT)
        except BrowserFailed as exc:  # the run's time limit, its memory cap, a browser that did not start
            failure = Failure.TIMEOUT if "cut off" in str(exc) else Failure.CHECKER
            return _failed(monitor, started, f"browser: {exc}", failure, refusals)
        except LighthouseFailed as exc:
            return _failed(monitor, started, str(exc), Failure.CHECKER, refusals)
        try:
            report = lr.read(raw)
        except lr.NotAReport as exc:
            return _failed(monitor, started, str(exc), Failure.CHECKER, refusals)
        return result(monitor, started, options, report, refusals)


def max_wait_for_load(timeout: float) -> int:
    """Lighthouse's --max-wait-for-load for a run of ``timeout`` seconds (ms)."""
    wanted = int((timeout - OVERHEAD_SECONDS) * 1000)
    return max(MIN_WAIT_FOR_LOAD_MS, min(MAX_WAIT_FOR_LOAD_MS, wanted))


def result(
    monitor: MonitorSpec, started: datetime, options: PageSpeedOptions, report: lr.Report, refusals: list[str]
) -> CheckResult:
    """The check's result of Lighthouse's ``report`` (pure)."""
    verdict = lr.judge(report, options.bounds, options.url, refusals)
    details: dict[str, Any] = {"profile": options.profile, "lighthouse_version": report.version}
    if report.final_url:
        details["final_url"] = clip_error(report.final_url, 2048)
    if report.runtime_error is None:
        details["metrics"] = dict(report.metrics)
        run = options.categories
        details["scores"] = {k: v for k, v in report.scores.items() if k.replace("_", "-") in run}
        details["failed_audits"] = report.failed_audits
    else:
        code, message = report.runtime_error
        details["runtime_error"] = {"code": code, "message": message}
    if verdict.outcomes:
        details["assertions"] = verdict.outcomes
    if report.warnings:
        details["warnings"] = report.warnings
    if refusals:
        details["refusals"] = [clip_error(r, lr.TEXT_CHARS) for r in refusals[:REFUSALS_KEPT]]
    if verdict.degraded:
        details["degraded"] = verdict.degraded
    failure = None if verdict.ok else _failure(verdict, report, options.url, refusals)
    lcp = report.metrics.get("lcp_ms")
    return CheckResult(
        monitor_id=monitor.id,
        time=started,
        ok=verdict.ok,
        status_code=report.status_code,
        latency_ms=round(lcp, 1) if lcp is not None else None,
        error=verdict.error,
        details=details,
        answered=report.status_code is not None,
        failure=failure,
    )


def _failure(verdict: lr.Verdict, report: lr.Report, url: str, refusals: list[str]) -> Failure:
    if not verdict.runtime:
        return Failure.ASSERTION
    if lr.document_refusal(url, refusals):
        return Failure.REFUSED
    if report.status_code is None and report.runtime_error and "DOCUMENT_REQUEST" in report.runtime_error[0]:
        return Failure.NETWORK
    return Failure.ASSERTION


def _failed(
    monitor: MonitorSpec, started: datetime, error: str, failure: Failure, refusals: list[str] | None = None
) -> CheckResult:
    kept = [clip_error(r, lr.TEXT_CHARS) for r in (refusals or [])[:REFUSALS_KEPT]]
    details = {"refusals": kept} if kept else None
    return CheckResult(
        monitor.id, started, ok=False, error=clip_error(error, 500), failure=failure, details=details
    )
