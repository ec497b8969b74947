"""One monitor's drift-free ticker.

Tick ``k`` is due at ``offset + k * interval`` seconds after the Unix epoch, where
``offset`` is a stable hash of the monitor id within the interval. Due times never
depend on how long earlier checks took, monitors created together are spread over
the interval, and a restarted scheduler keeps each monitor's rhythm. A check still
running at its next tick is not doubled: that tick is skipped and counted.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import time
from collections.abc import Callable
from datetime import UTC, datetime

from monitor import logging as mlog
from monitor.checks import REGISTRY, CheckContext
from monitor.models import CheckResult, MonitorSpec
from monitor.scheduler.state import State, Transition, step

log = mlog.get(__name__)

ResultSink = Callable[[MonitorSpec, CheckResult, State, Transition | None], None]


def stable_offset(monitor_id: int, interval: float) -> float:
    digest = hashlib.blake2b(str(monitor_id).encode(), digest_size=8).digest()
    return (int.from_bytes(digest, "big") % 1_000_000) / 1_000_000 * interval


def first_tick(now: float, offset: float, interval: float) -> int:
    """The index of the first tick due at or after ``now`` (epoch seconds)."""
    return math.ceil((now - offset) / interval)


class MonitorTicker:
    def __init__(
        self,
        spec: MonitorSpec,
        states: dict[int, State],
        *,
        ctx: CheckContext,
        sink: ResultSink,
        limit: asyncio.Semaphore,
        in_flight: set[asyncio.Task[None]],
    ) -> None:
        self.spec = spec
        # Shared with the ticker that replaces this one when the monitor is edited,
        # so a check still in flight from before the edit updates the same state.
        self._states = states
        self._ctx = ctx
        self._sink = sink
        self._limit = limit
        self._in_flight = in_flight
        self._current: asyncio.Task[None] | None = None
        self._task: asyncio.Task[None] | None = None
        self.skipped = 0

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"monitor-{self.spec.id}")

    def stop(self) -> None:
        """Stop ticking; a check in flight runs to its end and is still written."""
        if self._task is not None:
            self._task.cancel()

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        interval = self.spec.interval_seconds
        offset = stable_offset(self.spec.id, interval)
        # Map epoch due times onto the loop's monotonic clock once, so wall-clock
        # jumps do not bunch or stall ticks.
        mono_minus_wall = loop.time() - time.time()
        k = first_tick(time.time(), offset, interval)
        while True:
            due_wall = offset + k * interval
            delay = due_wall + mono_minus_wall - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            if self._current is not None and not self._current.done():
                self.skipped += 1
                log.warning("check.skipped", monitor_id=self.spec.id, reason="previous check still running")
            else:
                self._current = asyncio.create_task(self._check(due_wall), name=f"check-{self.spec.id}")
                self._in_flight.add(self._current)
                self._current.add_done_callback(self._in_flight.discard)
            k += 1
            # If the loop fell behind by more than a tick, skip the missed ones rather than burst.
            behind = first_tick(time.time(), offset, interval)
            if behind > k:
                self.skipped += behind - k
                k = behind

    async def _check(self, due_wall: float) -> None:
        spec = self.spec
        async with self._limit:
            started = time.time()
            lateness_ms = max(0.0, (started - due_wall) * 1000)
            at = datetime.fromtimestamp(started, UTC)
            try:
                # The check's own timeout covers the request; this bound covers everything else.
                async with asyncio.timeout(spec.timeout_seconds + 5):
                    result = await REGISTRY.get(spec.type).run(spec, self._ctx, at)
            except TimeoutError:
                result = CheckResult(
                    spec.id, at, ok=False, error=f"timed out after {spec.timeout_seconds:g}s"
                )
            except Exception as exc:  # a bug in a check must not kill the ticker
                log.exception("check.crashed", monitor_id=spec.id)
                result = CheckResult(spec.id, at, ok=False, error=f"internal error: {type(exc).__name__}")
        result.lateness_ms = round(lateness_ms, 3)
        state, transition = step(self._states.get(spec.id, State()), result.ok, at, spec.confirm_after)
        self._states[spec.id] = state
        self._sink(spec, result, state, transition)
        if transition is not None:
            log.info(
                "monitor.state_changed",
                monitor_id=spec.id,
                kind=transition.kind,
                status_code=result.status_code,
                error=result.error,
            )
