"""Browser journeys (``type: browser``): a start page and declarative steps run in a real
Chromium, each timed; the first failing step is the cause, with a screenshot of the moment.

A heavy check (``checks/heavy.py``): the scheduler queues it, a ``monitor worker`` runs
``execute`` in a Chromium of its own (``ctx.browser``, ``monitor/browser``) whose every
connection goes through the vetting proxy, and the result comes back to the same judging.
The steps are data (``browser_steps.py``: goto, click, fill, wait_for, expect_text,
expect_selector, expect_url), done through Playwright's page API (``browser_actions.py``);
no user string is ever evaluated in the page.

Up means the start page's document loaded with a status below 400 and every step passed.
The cause names the failing step by its number from 1 and says what went wrong in a line
(``step 3 click '#buy': no element matches within 5 s``; ``open 'https://shop.example/':
answered 503``; ``open 'http://10.0.0.7/': blocked: 10.0.0.7 (private-use 10.0.0.0/8)``
when the vetting proxy refused the document itself). ``details.steps`` holds every step,
the page load first (entry 0), with ``ok`` (null: not run), ``duration_ms`` and ``error``;
``details.refusals`` what the proxy refused during the run (a subresource refused is no
failure by itself: a page that still passes its steps is up). A screenshot of the failure,
and of the end where the monitor keeps screenshots (``visual.compare``), goes to
``ctx.screenshots`` (``monitor.visual.ScreenshotKeeper``; what it kept is
``details.screenshot``): a passing run whose page changed past the threshold is down with the
visual verdict as its cause ("page changed 23.4 % (threshold 5 %)"), or degraded
(``details.degraded``), as ``visual.severity`` says.

Time: ``timeout_seconds`` (default 60 s for the type) bounds the whole run, Chromium's start
included (``Browser.run`` kills it past that); each step waits at most its own
``timeout_seconds`` (default 10 s), cut to what is left, less ``RESERVE_SECONDS`` kept for
the screenshot. A step cut by the journey's deadline fails as a timeout, one that ran out of
its own time as an assertion (the page was there, not as expected).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from monitor.browser import BrowserFailed
from monitor.checks import browser_stored
from monitor.checks.base import STORED, CheckContext, ResultDetails
from monitor.checks.browser_actions import Clock, StepFailed, load, run_step
from monitor.checks.browser_steps import DEFAULT_STEP_TIMEOUT_SECONDS, BrowserSettings, name, start_name, urls
from monitor.checks.browser_wording import (
    REFUSALS_KEPT,
    STEP_ERROR_CHARS,
    cause,
    document_refusal,
    reduced,
    scrub,
    seconds,
)
from monitor.checks.heavy import HeavyCheck
from monitor.models import CheckResult, Failure, MonitorSpec
from monitor.net.client import clip_error
from monitor.net.policy import parse_target_url
from monitor.visual import ScreenshotKeeper, verdict_of

KIND = "browser"
# Kept of the journey's time for the screenshot of its end (Chromium takes ~0.1-0.3 s).
RESERVE_SECONDS = 1.5
# Past the journey's timeout, how long ``execute`` waits for the browser to end before it
# gives up on it (the launcher kills it at the timeout).
GRACE_SECONDS = 5.0
DEFAULT_TIMEOUT_SECONDS = 60.0


class StepOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="the step as written: click '#buy'; entry 0 is the start page")
    ok: bool | None = Field(description="null: not run (a step before it failed)")
    duration_ms: float | None = None
    error: str | None = None


class BrowserDetails(ResultDetails):
    """browser: every step with its timing and the failing one's error"""

    steps: list[StepOutcome] | None = Field(None, description="the start page's load first, then each step")
    failed_step: int | None = Field(None, description="the failing step's number (0: the start page)")
    final_url: str | None = Field(None, description="the page's URL when the journey ended")
    refusals: list[str] | None = Field(None, description="connections the vetting proxy refused in the run")
    screenshot: dict[str, Any] | None = Field(
        None, description="the screenshot kept of the run, and its comparison with the baseline"
    )
    degraded: str | None = Field(None, description="why the run is degraded: the page changed")


@dataclass(frozen=True)
class JourneyOptions:
    """A browser monitor's runtime form: its settings whole, secret fill values included."""

    settings: BrowserSettings
    secrets: tuple[str, ...] = field(default=(), repr=False)

    @classmethod
    def of(cls, settings: dict[str, Any] | None, secrets: dict[str, Any] | None) -> JourneyOptions:
        whole = browser_stored.whole(settings, secrets)
        valid = BrowserSettings.model_validate(whole, context=STORED)
        hidden = tuple(v for _, v in (secrets or {}).get(browser_stored.FILLS, ()) if isinstance(v, str))
        return cls(valid, hidden)


class BrowserCheck(HeavyCheck):
    kind: ClassVar[str] = KIND
    Settings: ClassVar[type[BaseModel]] = BrowserSettings
    secrets: ClassVar[frozenset[str]] = frozenset({"steps"})
    Details: ClassVar[type[ResultDetails] | None] = BrowserDetails
    default_timeout_seconds: ClassVar[float | None] = DEFAULT_TIMEOUT_SECONDS
    screenshots: ClassVar[bool] = True

    def target(self, settings: BrowserSettings) -> str:
        return settings.url

    def hosts(self, settings: BrowserSettings) -> tuple[str, ...]:
        found = [parse_target_url(url).raw_host or "" for _, url in urls(settings)]
        return tuple(dict.fromkeys(found))

    def to_stored(self, settings: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
        return browser_stored.to_stored(settings)

    def whole(
        self, url: str, settings: dict[str, Any] | None, secrets: dict[str, Any] | None
    ) -> dict[str, Any]:
        return {"url": url, **browser_stored.whole(settings, secrets)}

    def unmask(self, given: dict[str, Any], stored: dict[str, Any]) -> dict[str, Any]:
        return browser_stored.unmask(given, stored)

    def shown(
        self, url: str | None, settings: dict[str, Any] | None, view: dict[str, Any] | None
    ) -> dict[str, Any]:
        masked = browser_stored.shown(settings)
        try:
            # Without the optional fields left unset (a step's timeout, an expect_text's selector):
            # a client, and the dashboard's form, send the steps back as they read them.
            valid = BrowserSettings.model_validate(masked, context=STORED)
            fields = valid.model_dump(mode="json", exclude_none=True)
        except ValueError:
            fields = masked
        return {**fields, "url": url or fields.get("url")}

    def options(self, settings: dict[str, Any] | None, secrets: dict[str, Any] | None) -> JourneyOptions:
        return JourneyOptions.of(settings, secrets)

    async def execute(self, monitor: MonitorSpec, ctx: CheckContext, started: datetime) -> CheckResult:
        options: JourneyOptions = monitor.options or JourneyOptions.of({"url": monitor.url}, None)
        if ctx.browser is None:
            return _failed(monitor, started, "internal error: no browser in this process", Failure.CHECKER)
        journey = Journey(options, monitor.timeout_seconds)
        try:
            async with asyncio.timeout(monitor.timeout_seconds + GRACE_SECONDS):
                async with ctx.browser.run(monitor.timeout_seconds) as run:
                    page = await run.page()
                    await journey.walk(page)
                    journey.refusals = list(run.refusals)
                    if ctx.screenshots is not None and (not journey.ok or _keeps(ctx, monitor)):
                        journey.screenshot = await _screenshot(ctx, monitor, started, page, journey.ok)
        except TimeoutError:
            journey.cut_off(f"the browser did not end within {seconds(monitor.timeout_seconds)}")
        except BrowserFailed as exc:  # cut off by the launcher: its time limit, its memory cap
            if not journey.entries:
                return _failed(monitor, started, f"browser: {exc}", Failure.CHECKER)
            journey.cut_off(str(exc))
        except Exception as exc:  # Chromium failed to start or died: the checker's failure
            if not journey.entries:
                return _failed(monitor, started, f"browser: {reduced(str(exc))}", Failure.CHECKER)
            journey.cut_off(reduced(str(exc)))
        return journey.result(monitor, started)


class Journey:
    """One run's steps as they happened; its result (pure once the steps are done)."""

    def __init__(self, options: JourneyOptions, timeout: float) -> None:
        self.settings = options.settings
        self.secrets = options.secrets
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout - RESERVE_SECONDS
        self.entries: list[dict[str, Any]] = []
        self.status: int | None = None
        self.final_url: str | None = None
        self.refusals: list[str] = []
        self.screenshot: dict[str, Any] | None = None
        self.failed: int | None = None
        self.failure: Failure | None = None
        self.error: str | None = None
        self.elapsed_ms = 0.0
        self.finished = False  # every step done (passed, failed or skipped after a failure)

    @property
    def ok(self) -> bool:
        return self.failed is None

    async def walk(self, page: Any) -> None:
        began = time.monotonic()
        viewport = self.settings.viewport
        await page.set_viewport_size({"width": viewport.width, "height": viewport.height})
        clock = Clock(self.timeout, self.deadline)
        try:
            self.status = await load(page, self.settings.url, clock)
            self._done(start_name(self.settings.url), began, None)
        except StepFailed as exc:
            self.status = exc.status
            self._done(start_name(self.settings.url), began, exc, clock)
        for step in self.settings.steps:
            if self.failed is not None:
                self.entries.append({"name": name(step), "ok": None})
                continue
            at = time.monotonic()
            clock = Clock(step.timeout_seconds or DEFAULT_STEP_TIMEOUT_SECONDS, self.deadline)
            if clock.granted <= 0:
                ran_out = StepFailed(
                    f"the journey's {seconds(self.timeout)} ran out before it", timed_out=True
                )
                self._done(name(step), at, ran_out, clock)
                continue
            try:
                await run_step(page, step, clock)
                self._done(name(step), at, None)
            except StepFailed as exc:
                self._done(name(step), at, exc, clock)
        self.final_url = page.url
        self.elapsed_ms = (time.monotonic() - began) * 1000
        self.finished = True

    def _done(self, said: str, began: float, failed: StepFailed | None, clock: Clock | None = None) -> None:
        entry: dict[str, Any] = {"name": said, "ok": failed is None}
        entry["duration_ms"] = round((time.monotonic() - began) * 1000, 1)
        if failed is not None:
            entry["error"] = clip_error(scrub(str(failed), self.secrets), STEP_ERROR_CHARS)
            self.failed = len(self.entries)
            self.failure = _kind(self.failed, failed, clock)
            self.error = cause(self.failed, said, entry["error"])
        self.entries.append(entry)

    def cut_off(self, why: str) -> None:
        """The run ended before the journey did (its time limit, the browser gone); once every
        step is done, what ends the run after them (the screenshot cut short) changes nothing."""
        if self.failed is None and not self.finished:
            self.failed = len(self.entries)
            self.failure = Failure.TIMEOUT
            done = self.entries[-1]["name"] if self.entries else start_name(self.settings.url)
            self.error = clip_error(f"{why} (after {done})", 500) if self.entries else why

    def result(self, monitor: MonitorSpec, started: datetime) -> CheckResult:
        refusals = [clip_error(scrub(r, self.secrets), STEP_ERROR_CHARS) for r in self.refusals]
        error, failure = self.error, self.failure
        if self.failed == 0:
            # The start page itself refused, or the page it redirected the document to.
            refused = document_refusal(self.settings.url, refusals)
            if refused is None and self.final_url is not None:
                refused = document_refusal(self.final_url, refusals)
            if refused is not None:
                error, failure = cause(0, start_name(self.settings.url), refused), Failure.REFUSED
        details: dict[str, Any] = {"steps": self.entries}
        if self.failed is not None:
            details["failed_step"] = self.failed
        if self.final_url is not None:
            details["final_url"] = clip_error(scrub(self.final_url, self.secrets), 2048)
        if refusals:
            details["refusals"] = refusals[:REFUSALS_KEPT]
        if self.screenshot is not None:
            details["screenshot"] = self.screenshot
            changed, degraded = verdict_of(self.screenshot)
            if error is None and changed is not None:
                error, failure = clip_error(changed, 500), Failure.ASSERTION
            if degraded is not None:
                details["degraded"] = clip_error(degraded, 500)
        return CheckResult(
            monitor_id=monitor.id,
            time=started,
            ok=error is None,
            status_code=self.status,
            latency_ms=round(self.elapsed_ms, 3) if self.elapsed_ms else None,
            error=scrub(error, self.secrets) if error is not None else None,
            details=details,
            answered=self.status is not None,
            failure=failure,
        )


def _kind(number: int, failed: StepFailed, clock: Clock | None) -> Failure:
    """What kind of failure a failed step is: its time cut by the journey's deadline, a
    timeout; the start page not loaded, the network's (or a timeout); anything else, the page
    answering not as expected (a status of 400 or more too)."""
    if failed.timed_out and (number == 0 or clock is None or clock.cut):
        return Failure.TIMEOUT
    if number == 0 and failed.status is None:
        return Failure.NETWORK
    return Failure.ASSERTION


def _failed(monitor: MonitorSpec, started: datetime, error: str, failure: Failure) -> CheckResult:
    return CheckResult(monitor.id, started, ok=False, error=clip_error(error, 500), failure=failure)


def _keeps(ctx: CheckContext, monitor: MonitorSpec) -> bool:
    """Whether the monitor keeps a screenshot of every run, not only of a failure."""
    store: ScreenshotKeeper = ctx.screenshots
    try:
        return bool(store.keeps(monitor))
    except Exception:  # a store that cannot say: the failure's screenshot only
        return False


async def _screenshot(
    ctx: CheckContext, monitor: MonitorSpec, started: datetime, page: Any, ok: bool
) -> dict[str, Any] | None:
    """The page as it is, handed to the screenshot store; what it says of it, for details."""
    store: ScreenshotKeeper = ctx.screenshots
    try:
        png = await page.screenshot(type="png", timeout=RESERVE_SECONDS * 1000)
        kept = await store.keep(monitor, png, at=started, failed=not ok)
    except Exception:  # a page gone, too slow to paint, a store away: no screenshot, the cause stands
        return None
    return dict(kept) if isinstance(kept, dict) else None
