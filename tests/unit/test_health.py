"""The event-loop watchdog: a blocked loop is counted and named; a busy one is not."""

import asyncio
import time

from prometheus_client import CollectorRegistry, Counter

from monitor.health import watch_loop


async def _watch(seconds_blocked: float) -> float:
    blocked = Counter("blocked", "test", registry=CollectorRegistry())
    watcher = asyncio.create_task(watch_loop(blocked))
    await asyncio.sleep(0.12)  # a couple of ticks first
    time.sleep(seconds_blocked)  # noqa: ASYNC251 - blocking the loop is the point
    await asyncio.sleep(0.12)
    watcher.cancel()
    await asyncio.gather(watcher, return_exceptions=True)
    return blocked._value.get()


async def test_a_loop_blocked_for_250_ms_is_counted() -> None:
    assert await _watch(0.25) == 1


async def test_a_loop_that_keeps_running_is_not() -> None:
    assert await _watch(0.0) == 0
