"""One job's check run in a worker, and what its checks are given: the launcher of the browser
its runs use and the store of its screenshots."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from monitor import logging as mlog
from monitor.browser.chromium import Chromium
from monitor.checks import Registry
from monitor.checks.base import CheckContext
from monitor.checks.heavy import HeavyCheck
from monitor.checks.jobs import spec_of
from monitor.checks.tools import CheckTools
from monitor.config import Settings
from monitor.models import CheckResult, Failure
from monitor.secrets import SecretBox
from monitor.visual.store import ScreenshotStore
from monitor.worker.jobs import Job, cut_short, not_run

log = mlog.get(__name__)

# Past its given time, a check that does not stop itself is cut off this much later (within
# keys.WORK_REPLY_MARGIN_SECONDS - keys.WORK_RUN_GRACE_SECONDS: the reply is still awaited).
HARD_MARGIN_SECONDS = 0.5


async def execute(
    job: Job, given: float, *, box: SecretBox, registry: Registry, ctx: CheckContext
) -> CheckResult:
    """The job's check (its row made a spec with the type's options, its secrets opened with
    ``box``), run in ``given`` seconds at most and cut off just after; a crash is the checker's
    failure, a row this worker cannot read is NOT_RUN (a false down would alert)."""
    try:
        spec = spec_of(job.row, box, registry)
        check = registry.get(spec.type)
    except Exception as exc:  # another secret key than the scheduler's, a newer version's settings
        return not_run(job, f"not run: this worker cannot run it ({str(exc)[:200] or type(exc).__name__})")
    if not isinstance(check, HeavyCheck):
        return not_run(job, f"not run: {spec.type} is not a heavy check type in this worker")
    if given < spec.timeout_seconds:
        spec = replace(spec, timeout_seconds=given)
    cut = asyncio.timeout(given + HARD_MARGIN_SECONDS)
    try:
        async with cut:
            result = await check.execute(spec, ctx, job.at)
    except Exception as exc:  # a bug in a check must not kill the worker
        if isinstance(exc, TimeoutError) and cut.expired():
            error, failure = f"timed out after {given:g}s", Failure.TIMEOUT
        else:
            log.error("check.crashed", exc_info=exc)
            error, failure = f"internal error: {type(exc).__name__}", Failure.CHECKER
        result = CheckResult(spec.id, job.at, ok=False, error=error, failure=failure)
    return cut_short(job, given, result)


def default_browser(settings: Settings, tools: CheckTools) -> Chromium:
    """The Chromium launcher (``monitor.browser.Browser``) for this worker's runs: each run under
    ``MONITOR_WORKER_MEMORY_MB``, its every connection judged by the worker's own resolver (the
    operator's policy, as the scheduler's checks)."""
    return Chromium(tools.resolver, memory_mb=settings.worker_memory_mb)


async def default_screenshots(settings: Settings) -> ScreenshotStore | None:
    """The store browser checks keep their screenshots in and find their baselines in
    (``CheckContext.screenshots``: ``monitor/visual/store.py``, on a small pool of its own,
    closed with the worker); None without MONITOR_DATABASE_URL: the checks run, keeping no
    screenshot. The pool opens connections on demand, so a database away at start does not stop
    the worker; a store that fails leaves the check's own verdict standing."""
    if settings.database_url is None:
        log.warning("worker.no_screenshot_store", hint="MONITOR_DATABASE_URL unset: no screenshots kept")
        return None
    return await ScreenshotStore.open(settings)
