"""Signal handling and ordered, time-bounded shutdown shared by the three processes.

A process is a :class:`Service` with three steps: ``start`` (open resources, start
work), ``drain`` (stop intake and let in-flight work finish) and ``close`` (flush and
release). :func:`serve` runs it until SIGINT or SIGTERM, then drains within the
shutdown timeout; whatever is still running after that is cancelled and named in
one summary line.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from monitor import logging as mlog

log = mlog.get(__name__)


class Service(Protocol):
    name: str

    async def start(self) -> None: ...

    async def drain(self) -> None:
        """Stop taking new work and wait for the work in hand."""

    def abandoned(self) -> list[str]:
        """What would be lost if drain were cut short now (for the summary line)."""

    async def close(self) -> None: ...


async def serve(service: Service, *, shutdown_timeout: float) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await service.start()
    except Exception as exc:
        log.error("service.start_failed", service=service.name, error=str(exc))
        await _bounded(service.close, shutdown_timeout)
        return 1
    log.info(f"{service.name}.started")
    await stop.wait()
    log.info(f"{service.name}.stopping", timeout_s=shutdown_timeout)
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
    return 0


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
