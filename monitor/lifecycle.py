"""Signal handling and ordered, time-bounded shutdown shared by the four processes.

A process is a :class:`Service` with three steps: ``start`` (open resources, start
work), ``drain`` (stop intake and let in-flight work finish) and ``close`` (flush and
release). :func:`serve` runs it until SIGINT or SIGTERM, then drains within the
shutdown timeout; whatever is still running after that is cancelled and named in
one summary line.

Under systemd (``Type=notify``) it says ``READY=1`` once started, feeds the watchdog from
the event loop, and says ``STOPPING=1`` when a stop begins (:mod:`monitor.sdnotify`).

A second signal never kills the process, nor cuts the drain short: supervisors send
several at once (honcho passes a terminal's Ctrl-C on to its children and then sends them
SIGTERM), so hurrying on the second would abandon the checks in flight at every Ctrl-C. It
is logged and ignored; the shutdown timeout bounds the stop. After the service stopped,
signals stay ignored until the process exits, so one arriving while the loop closes cannot
end it with 143 instead of 0.

Only the main thread takes SIGINT and SIGTERM: a signal that another thread took while the
handlers change at the end would meet the default action there and end the process (seen in
issue 29, once the api's start dialled the database: uvloop's resolver threads, which block
nothing). So the service starts with both signals blocked, and the threads it starts inherit
that (libuv's pool of worker threads among them, made here before the service's first use of
it); a pool made later blocks them itself (``block_stop_signals``, the passwords' hasher).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from monitor import logging as mlog
from monitor.sdnotify import Notifier

log = mlog.get(__name__)

STOPPING = frozenset({signal.SIGINT, signal.SIGTERM})


class Service(Protocol):
    name: str

    async def start(self) -> None: ...

    async def drain(self) -> None:
        """Stop taking new work and wait for the work in hand."""

    def abandoned(self) -> list[str]:
        """What would be lost if drain were cut short now (for the summary line)."""

    async def close(self) -> None: ...


async def serve(service: Service, *, shutdown_timeout: float, notifier: Notifier | None = None) -> int:
    """Run ``service`` until a signal, then stop it in order; the exit code. ``notifier``
    tells systemd (``Type=notify``) when it is ready and stopping, and feeds its watchdog."""
    notify = notifier or Notifier()
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        # Blocked while it starts: its threads block them for good; a signal meanwhile waits.
        signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING)
        try:
            await _worker_threads(loop)
            await service.start()
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING)
    except Exception as exc:
        log.error("service.start_failed", service=service.name, error=str(exc))
        await _bounded(service.close, shutdown_timeout)
        return 1
    log.info(f"{service.name}.started")
    notify.send("READY=1", f"STATUS={service.name} serving")
    notify.start_watchdog(loop)
    await stop.wait()
    log.info(f"{service.name}.stopping", timeout_s=shutdown_timeout)
    notify.send("STOPPING=1", f"STATUS={service.name} stopping")

    ignored: list[signal.Signals] = []

    def again(sig: signal.Signals) -> None:
        if not ignored:  # one line, however many a supervisor sends
            log.info(f"{service.name}.signal_ignored", signal=sig.name, reason="already stopping")
        ignored.append(sig)

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, again, sig)
    started = time.monotonic()
    drained = await _bounded(service.drain, shutdown_timeout)
    abandoned = [] if drained else service.abandoned()
    remaining = max(0.5, shutdown_timeout - (time.monotonic() - started))
    closed = await _bounded(service.close, remaining)
    log.info(
        f"{service.name}.stopped",
        clean=drained and closed,
        seconds=round(time.monotonic() - started, 3),
        abandoned=abandoned,
    )
    notify.stop_watchdog()
    # Closing the loop would restore the default action (termination) for these, and so does
    # removing a handler, for an instant before SIG_IGN is set: blocked meanwhile, a signal sent
    # in that instant waits, and SIG_IGN discards it (POSIX), so it cannot end the process.
    signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING)
    try:
        for sig in STOPPING:
            loop.remove_signal_handler(sig)
            signal.signal(sig, signal.SIG_IGN)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING)
    return 0


def block_stop_signals() -> None:
    """For a thread pool's ``initializer``: its threads leave SIGINT and SIGTERM to the main
    thread (the module's docstring)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING)


async def _worker_threads(loop: asyncio.AbstractEventLoop) -> None:
    """Make the loop's resolver threads now, while the stop signals are blocked: a look-up of
    ``localhost`` (the hosts file's) starts libuv's pool under uvloop, the default executor's
    threads under asyncio's loop."""
    with contextlib.suppress(OSError):
        await loop.getaddrinfo("localhost", None)


async def _bounded(step: Callable[[], Awaitable[None]], seconds: float) -> bool:
    try:
        async with asyncio.timeout(seconds):
            await step()
        return True
    except TimeoutError:
        return False
    except Exception as exc:
        log.error("service.step_failed", step=getattr(step, "__name__", "?"), error=str(exc))
        return False
