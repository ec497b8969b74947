"""Each journey step done in a Playwright page, within its time: the thin I/O part of
``checks/browser.py``.

A step that acts on an element waits for one to match first, so a cause can tell "no element
matches" (the button is gone) from "it matched and could not be clicked" (hidden, disabled,
covered). Every wait is Playwright's own auto-waiting with the step's timeout; texts and URLs
are compared in Python (``expect_url``'s expression with the regex package's time budget), and
no step evaluates anything in the page. A failing step raises :class:`StepFailed` with the
words of its cause (``browser_wording.py``); Playwright's own message never leaves here whole.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from monitor.checks.browser_steps import shown
from monitor.checks.browser_wording import blocking, net_error, reduced, seconds
from monitor.checks.observed import REGEX_BUDGET_SECONDS, compile_regex

if TYPE_CHECKING:
    from playwright.async_api import Locator, Page


class StepFailed(Exception):
    """A step that did not pass; its text is the cause's part after the step's name. Whether
    its time ran out (``timed_out``), and the status of a page that answered with an error."""

    def __init__(self, message: str, *, timed_out: bool = False, status: int | None = None) -> None:
        super().__init__(message)
        self.timed_out = timed_out
        self.status = status


def _errors() -> tuple[type[Exception], type[Exception]]:
    """Playwright's (Error, TimeoutError), imported where a browser runs (a worker) only."""
    from playwright.async_api import Error, TimeoutError

    return Error, TimeoutError


class Clock:
    """A step's time: its own timeout, never past the journey's deadline (monotonic)."""

    def __init__(self, timeout: float, deadline: float) -> None:
        self.granted = max(0.0, min(timeout, deadline - time.monotonic()))
        self.ends = time.monotonic() + self.granted
        self.cut = self.granted < timeout  # the journey's deadline, not the step's, set it

    @property
    def left_ms(self) -> float:
        return max(1.0, (self.ends - time.monotonic()) * 1000)

    @property
    def said(self) -> str:
        return seconds(self.granted)


async def load(page: Page, url: str, clock: Clock) -> int | None:
    """Go to ``url``; its document's status (None: no response, a same-document navigation)."""
    error, timeout = _errors()
    try:
        response = await page.goto(url, timeout=clock.left_ms, wait_until="load")
    except timeout:
        raise StepFailed(f"did not load within {clock.said}", timed_out=True) from None
    except error as exc:
        raise StepFailed(net_error(str(exc)) or reduced(str(exc))) from None
    status = response.status if response is not None else None
    if status is not None and status >= 400:
        raise StepFailed(f"answered {status}", status=status)
    return status


async def run_step(page: Page, step: Any, clock: Clock) -> None:
    """Do one step (``browser_steps.Step``) or raise :class:`StepFailed`."""
    error, timeout = _errors()
    try:
        await _do(page, step, clock)
    except StepFailed:
        raise
    except timeout:
        raise StepFailed(f"timed out after {clock.said}", timed_out=True) from None
    except error as exc:
        raise StepFailed(reduced(str(exc))) from None


async def _do(page: Page, step: Any, clock: Clock) -> None:
    match step.action:
        case "goto":
            await load(page, step.url, clock)
        case "click":
            await _act(await _found(page, step.selector, clock), "click", clock)
        case "fill":
            await _act(await _found(page, step.selector, clock), "fill", clock, step.value)
        case "wait_for" | "expect_selector":
            await _state(page, step.selector, getattr(step, "state", "visible"), clock)
        case "expect_text":
            await _text(page, step, clock)
        case "expect_url":
            await _url(page, step, clock)
        case _:  # the settings admit no other
            raise StepFailed(f"unknown action {step.action!r}")


async def _found(page: Page, selector: str, clock: Clock) -> Locator:
    """The first element ``selector`` matches, once there is one."""
    _, timeout = _errors()
    locator = page.locator(selector).first
    try:
        await locator.wait_for(state="attached", timeout=clock.left_ms)
    except timeout:
        raise StepFailed(f"no element matches within {clock.said}", timed_out=True) from None
    return locator


async def _act(locator: Locator, verb: str, clock: Clock, value: str | None = None) -> None:
    _, timeout = _errors()
    try:
        if value is None:
            await locator.click(timeout=clock.left_ms)
        else:
            await locator.fill(value, timeout=clock.left_ms)
    except timeout as exc:
        why = blocking(str(exc)) or "the element did not become ready"
        raise StepFailed(f"could not {verb} within {clock.said}: {why}", timed_out=True) from None


async def _state(page: Page, selector: str, state: str, clock: Clock) -> None:
    _, timeout = _errors()
    locator = page.locator(selector).first
    try:
        await locator.wait_for(state=state, timeout=clock.left_ms)  # type: ignore[arg-type]
    except timeout:
        if state == "hidden":
            said = f"still visible after {clock.said}"
        elif state == "visible" and await page.locator(selector).count():
            said = f"the element stayed hidden for {clock.said}"
        else:
            said = f"no element matches within {clock.said}"
        raise StepFailed(said, timed_out=True) from None


async def _text(page: Page, step: Any, clock: Clock) -> None:
    from playwright.async_api import expect

    where = await _found(page, step.selector, clock) if step.selector else page.locator("body")
    try:
        await expect(where).to_contain_text(step.text, timeout=clock.left_ms, use_inner_text=True)
    except AssertionError:
        raise StepFailed(f"text {shown(step.text)} not found within {clock.said}", timed_out=True) from None


def url_holds(step: Any, url: str) -> bool:
    """Whether ``url`` is what an ``expect_url`` step expects."""
    if step.equals is not None:
        return bool(url == step.equals)
    if step.contains is not None:
        return step.contains in url
    try:
        return compile_regex(step.matches).search(url, timeout=REGEX_BUDGET_SECONDS) is not None
    except TimeoutError:
        return False


async def _url(page: Page, step: Any, clock: Clock) -> None:
    _, timeout = _errors()
    if url_holds(step, page.url):
        return
    try:
        await page.wait_for_url(lambda url: url_holds(step, url), timeout=clock.left_ms, wait_until="commit")
    except timeout:
        raise StepFailed(f"the URL is {shown(page.url)} after {clock.said}", timed_out=True) from None
