"""The Chromium launcher: one headless Debian ``chromium`` per browser run, behind a vetting
proxy of its own, under a memory cap and a hard timeout, leaving nothing behind.

``Chromium.run(timeout)`` starts the run's ``VettingProxy`` (``monitor/net/proxy.py``), a
throwaway profile, and Chromium in a process group of its own, niced; it yields a
``ChromiumRun`` once Chromium has written its DevTools port. A watchdog reads the group's
memory from ``/proc`` (``process.memory_bytes``) and kills the whole group when it passes
``memory_mb``, or when ``timeout`` passes; the task in the run is then cancelled and the run
ends with ``BrowserFailed`` ("browser used more than 1024 MiB", "browser run cut off after
90 s"), the cause a check reports. However the run ends (its body returns or raises, its task
is cancelled from outside), the group is SIGKILLed, reaped, and the profile removed.

What Chromium may reach (docs/security.md, "Browser checks"): everything through the proxy,
loopback included (``--proxy-bypass-list=<-loopback>``), names never resolved by Chromium
(``--host-resolver-rules``: every name but the proxy's address maps to nothing), no QUIC, WebRTC
without UDP of its own, no prefetch, no background networking, sync, updates or extensions.

``page()`` drives the run through Playwright for Python connected over CDP to the run's
Chromium (no browser of Playwright's own is needed); the Playwright driver, a Node process, is
started once per ``Chromium`` object on the first ``page()`` and stopped by ``close()``.

Measured on this machine (2 cores): a run is up (DevTools port written) 0.2-0.4 s after it is
asked for, the first ``page()`` of a run takes 0.5 s (0.7 s more for the driver, once), ending
a run 0.05-0.3 s; a blank page's run uses about 340-370 MiB (Pss).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from monitor.net.proxy import VettingProxy
from monitor.net.resolver import VettedResolver

from . import BrowserFailed, process

if TYPE_CHECKING:
    from playwright.async_api import Browser as PlaywrightBrowser
    from playwright.async_api import Page, Playwright

__all__ = ["DEFAULT_EXECUTABLE", "Chromium", "ChromiumRun", "chromium_args"]

DEFAULT_EXECUTABLE = "/usr/bin/chromium"
START_TIMEOUT = 30.0  # Chromium writes its DevTools port within about a second on this machine
POLL_SECONDS = 0.2  # the watchdog's period: a page allocating 1 GiB/s passes the cap by 200 MiB at most
REAP_SECONDS = 10.0
CDP_TIMEOUT_MS = 15_000
STDERR_TAIL = 2000


def chromium_args(profile: Path, proxy_port: int, *, root: bool, extra: Sequence[str] = ()) -> list[str]:
    """The command line after the executable (docs/security.md lists why each is there)."""
    args = [
        "--headless=new",
        f"--user-data-dir={profile}",
        "--remote-debugging-address=127.0.0.1",
        "--remote-debugging-port=0",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--disable-extensions",
        "--disable-breakpad",
        "--disable-crash-reporter",
        "--disable-client-side-phishing-detection",
        "--disable-domain-reliability",
        "--metrics-recording-only",
        "--no-pings",
        "--mute-audio",
        "--disk-cache-size=67108864",  # 64 MiB: the profile's disk use is bounded too
        "--disable-quic",
        "--dns-prefetch-disable",
        "--disable-features=NetworkPrediction,AsyncDns,DnsOverHttps,MediaRouter,OptimizationHints",
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
        "--webrtc-ip-handling-policy=disable_non_proxied_udp",
        f"--proxy-server=http://127.0.0.1:{proxy_port}",
        "--proxy-bypass-list=<-loopback>",
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
    ]
    if root:
        args.append("--no-sandbox")  # Chromium's sandbox refuses to run as root
    args.extend(extra)
    args.append("about:blank")
    return args


class ChromiumRun:
    """One run's Chromium (``monitor.browser.BrowserRun``)."""

    def __init__(
        self, owner: Chromium, devtools_port: int, endpoint: str, proxy: VettingProxy, pid: int, marker: str
    ) -> None:
        self.devtools_port = devtools_port
        self.pid = pid  # the browser's, and its process group's
        self.marker = marker  # process.MARKER's value in the environment of each of its processes
        self.refusals = proxy.refusals  # the proxy's own list: refusals still arriving show up
        self.peak_memory_mb = 0.0  # the most the run's processes used together, as the watchdog read it
        self._owner = owner
        self._endpoint = f"ws://127.0.0.1:{devtools_port}{endpoint}"
        self._browser: PlaywrightBrowser | None = None
        self._lock = asyncio.Lock()

    async def page(self) -> Page:
        """A new page in the run's browser, through Playwright over CDP."""
        async with self._lock:
            if self._browser is None:
                playwright = await self._owner.playwright()
                self._browser = await playwright.chromium.connect_over_cdp(
                    self._endpoint, timeout=CDP_TIMEOUT_MS
                )
        contexts = self._browser.contexts
        context = contexts[0] if contexts else await self._browser.new_context()
        return await context.new_page()

    async def disconnect(self) -> None:
        browser, self._browser = self._browser, None
        if browser is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(2):
                    await browser.close()


class Chromium:
    """``monitor.browser.Browser`` on Debian's chromium. ``resolver`` judges every connection
    of every run (its policy is the operator's ``MONITOR_ALLOW_CIDRS``); ``memory_mb`` caps
    one run; ``nice`` is added to the worker's own nice level; ``flags`` come after ours."""

    def __init__(
        self,
        resolver: VettedResolver,
        *,
        executable: str = DEFAULT_EXECUTABLE,
        memory_mb: int = 1024,
        nice: int = 10,
        flags: Sequence[str] = (),
        poll_seconds: float = POLL_SECONDS,
        start_timeout: float = START_TIMEOUT,
    ) -> None:
        self.resolver = resolver
        self.executable = executable
        self.memory_mb = memory_mb
        self.nice = nice
        self.flags = tuple(flags)
        self.poll_seconds = poll_seconds
        self.start_timeout = start_timeout
        self._playwright: Playwright | None = None
        self._lock = asyncio.Lock()

    def run(self, timeout: float) -> _Run:
        return _Run(self, timeout)

    async def playwright(self) -> Playwright:
        """This object's Playwright driver, started on first use."""
        async with self._lock:
            if self._playwright is None:
                from playwright.async_api import async_playwright

                self._playwright = await async_playwright().start()
            return self._playwright

    async def close(self) -> None:
        """Stop the Playwright driver (runs end on their own)."""
        async with self._lock:
            driver, self._playwright = self._playwright, None
        if driver is not None:
            await driver.stop()


class _Run:
    """The context of one run: ``async with chromium.run(90) as run``."""

    def __init__(self, owner: Chromium, timeout: float) -> None:
        self._owner = owner
        self._timeout = timeout
        self._marker = uuid.uuid4().hex
        self._proxy = VettingProxy(owner.resolver)
        self._home: Path | None = None
        self._proc: asyncio.subprocess.Process | None = None
        self._run: ChromiumRun | None = None
        self._task: asyncio.Task[Any] | None = None
        self._cancelling = 0
        self._cut: str | None = None  # why the watchdog ended the run
        self._timer: asyncio.TimerHandle | None = None
        self._watch: asyncio.Task[None] | None = None

    async def __aenter__(self) -> ChromiumRun:
        loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        assert self._task is not None, "a browser run belongs to a task"
        self._cancelling = self._task.cancelling()
        self._timer = loop.call_later(
            self._timeout, self._trip, f"browser run cut off after {self._timeout:g} s"
        )
        try:
            return await self._start()
        except BaseException as exc:
            await self._end()
            self._raise_cut(exc)
            raise

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            await self._end()
        except asyncio.CancelledError as cancelled:
            self._raise_cut(cancelled)
            raise
        self._raise_cut(exc)

    def _raise_cut(self, exc: BaseException | None) -> None:
        """Turn the watchdog's cancellation (or whatever the dying browser made the body raise)
        into the run's cause."""
        if self._cut is None:
            return
        assert self._task is not None
        if self._task.uncancel() > self._cancelling and isinstance(exc, asyncio.CancelledError):
            return  # cancelled from outside as well: that wins
        raise BrowserFailed(self._cut) from (None if isinstance(exc, asyncio.CancelledError) else exc)

    async def _start(self) -> ChromiumRun:
        owner = self._owner
        await self._proxy.start()
        self._home = Path(tempfile.mkdtemp(prefix="monitor-browser-"))
        profile = self._home / "profile"
        profile.mkdir()
        argv = [
            owner.executable,
            *chromium_args(profile, self._proxy.port, root=os.geteuid() == 0, extra=owner.flags),
        ]
        with open(self._home / "stderr", "wb") as stderr:  # noqa: ASYNC230 - a new local file
            try:
                env = process.environment(self._home, self._marker)
                self._proc = await process.launch(argv, env=env, nice=owner.nice, stderr=stderr.fileno())
            except OSError as exc:
                raise BrowserFailed(f"cannot start {owner.executable}: {exc.strerror or exc}") from exc
        self._watch = asyncio.get_running_loop().create_task(self._watchdog())
        deadline = time.monotonic() + owner.start_timeout
        while (found := process.read_devtools_port(profile)) is None:
            if self._proc.returncode is not None:
                raise BrowserFailed(
                    f"chromium exited with status {self._proc.returncode} at start{self._stderr()}"
                )
            if time.monotonic() > deadline:
                raise BrowserFailed(
                    f"chromium did not start within {owner.start_timeout:g} s{self._stderr()}"
                )
            await asyncio.sleep(0.05)
        port, endpoint = found
        self._proxy.reserve(port)
        self._run = ChromiumRun(owner, port, endpoint, self._proxy, self._proc.pid, self._marker)
        return self._run

    def _stderr(self) -> str:
        assert self._home is not None
        try:
            text = (self._home / "stderr").read_bytes()[-STDERR_TAIL:].decode("utf-8", "replace").strip()
        except OSError:
            return ""
        return f": {text.splitlines()[-1]}" if text else ""

    async def _watchdog(self) -> None:
        assert self._proc is not None
        pgid = self._proc.pid
        cap = self._owner.memory_mb * 1024 * 1024
        while self._proc.returncode is None:
            used = await asyncio.to_thread(lambda: process.memory_bytes(process.members(pgid)))
            if self._run is not None:
                self._run.peak_memory_mb = max(self._run.peak_memory_mb, round(used / 1048576, 1))
            if used > cap:
                self._trip(f"browser used more than {self._owner.memory_mb} MiB")
                return
            await asyncio.sleep(self._owner.poll_seconds)

    def _trip(self, reason: str) -> None:
        if self._cut is not None:
            return
        self._cut = reason
        self._kill()
        assert self._task is not None
        self._task.cancel()

    async def _end(self) -> None:
        """Kill, reap, remove: run to the end even when the task is cancelled meanwhile."""
        if self._timer is not None:
            self._timer.cancel()
        if self._watch is not None:
            self._watch.cancel()
        steps = [self._stop_watch(), self._disconnect(), self._reap(), self._proxy.close()]
        for step in steps:
            try:
                await step
            except asyncio.CancelledError:
                # A second cancellation mid-cleanup: finish without waiting, then let it go on.
                for rest in steps:
                    rest.close()
                self._proxy.abort()
                self._kill_now()
                raise
        self._kill_now()

    async def _stop_watch(self) -> None:
        if self._watch is not None:
            await asyncio.gather(self._watch, return_exceptions=True)

    async def _disconnect(self) -> None:
        if self._run is not None:
            await self._run.disconnect()

    async def _reap(self) -> None:
        proc = self._proc
        if proc is None:
            return
        self._kill()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(REAP_SECONDS):
                await proc.wait()
                # The rest of the group (and the crash handler, in a session of its own) are not
                # the child asyncio waits for; after the reaping the marker alone names them.
                while process.members(-1, self._marker):  # noqa: ASYNC110
                    await asyncio.sleep(0.02)

    def _kill(self) -> None:
        if self._proc is not None:
            # Until the browser is reaped its pid cannot name another group.
            process.kill(self._proc.pid, self._marker, group=self._proc.returncode is None)

    def _kill_now(self) -> None:
        self._kill()
        home, self._home = self._home, None
        if home is not None:
            shutil.rmtree(home, ignore_errors=True)
