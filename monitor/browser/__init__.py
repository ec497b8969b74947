"""A real browser for heavy checks: what a check type run by ``monitor worker`` is given.

Each run gets a Chromium of its own (a throwaway profile, niced, under the worker's memory cap
and the run's hard timeout) whose every connection goes through a vetting proxy of its own on
loopback (``monitor/net/proxy.py``): Chromium never resolves or dials a name itself (QUIC and
WebRTC off, loopback not bypassed), so a page that embeds or redirects to a denied address
never reaches it, and each refusal is kept in ``BrowserRun.refusals`` for the result's cause.

This module is the contract the check types code against (``checks/pagespeed.py`` drives the
run through Lighthouse on ``devtools_port``; ``checks/browser.py`` through Playwright on
``page()``); ``chromium.py`` is the launcher that keeps it.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from playwright.async_api import Page


class BrowserFailed(Exception):
    """The run could not go on: Chromium did not start, passed the memory cap or the run's
    timeout (and was killed). ``str()`` is the check's cause as it stands ("browser used more
    than 1024 MiB", "browser run cut off after 90 s")."""


class BrowserRun(Protocol):
    """One browser run: a Chromium started for it, ended when the run's context ends."""

    # The DevTools port on 127.0.0.1 (Lighthouse's ``--port``).
    devtools_port: int
    # Every connection the vetting proxy refused in this run, in order, each as a person reads
    # it ("blocked: 169.254.169.254 (link-local 169.254.0.0/16)"), with the URL or host asked for.
    refusals: list[str]

    async def page(self) -> Page:
        """A new Playwright page in this run's browser (connected over CDP)."""
        ...


class Browser(Protocol):
    """What a worker hands its heavy checks as ``CheckContext.browser``."""

    def run(self, timeout: float) -> AbstractAsyncContextManager[BrowserRun]:
        """A fresh Chromium for one check, cut off (killed, its profile removed) after
        ``timeout`` seconds or when it passes the memory cap: the task in the run is then
        cancelled and the run's context raises ``BrowserFailed`` with the reason."""
        ...


__all__ = ["Any", "Browser", "BrowserFailed", "BrowserRun"]
