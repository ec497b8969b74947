"""Two asyncio primitives for the check path, which every check pays for.

``Deadline`` keeps ``asyncio.timeout``'s contract and ``Slots`` ``asyncio.Semaphore``'s, each
for a fraction of the cost: at a hundred checks a second on one core, the standard library's
context managers, their loop look-ups and their coroutines were a measurable share of the
scheduler's CPU per check (issue 4).
"""

from __future__ import annotations

import asyncio
import collections


class Deadline:
    """Cancel the current task after ``delay`` seconds; on the CancelledError, ``caused()``
    tells whether this deadline (and nothing else) cancelled it, which makes it a timeout.
    Nests like ``asyncio.timeout`` (the count of pending cancellations decides). Always call
    ``cancel()`` when the guarded work ends."""

    __slots__ = ("_cancelling", "_handle", "_task", "expired")

    def __init__(self, loop: asyncio.AbstractEventLoop, delay: float) -> None:
        task = asyncio.current_task(loop)
        assert task is not None, "a Deadline guards a task"
        self._task = task
        self._cancelling = task.cancelling()
        self.expired = False
        self._handle = loop.call_later(delay, self._expire)

    def _expire(self) -> None:
        self.expired = True
        self._task.cancel()

    def cancel(self) -> None:
        self._handle.cancel()

    def caused(self) -> bool:
        """Call on CancelledError: True if the deadline (and nothing else) cancelled the task."""
        return self.expired and self._task.uncancel() <= self._cancelling


class Slots:
    """A semaphore whose uncontended path is one integer test, without a coroutine:
    ``if not slots.try_acquire(): await slots.acquire()``, then ``release()`` once.
    Waiters are served first come, first served."""

    __slots__ = ("_free", "_waiting")

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError("Slots needs at least one slot")
        self._free = size
        self._waiting: collections.deque[asyncio.Future[None]] = collections.deque()

    @property
    def free(self) -> int:
        return self._free

    def try_acquire(self) -> bool:
        """Take a slot if one is free now (and nobody waits for one)."""
        if self._free > 0 and not self._waiting:
            self._free -= 1
            return True
        return False

    async def acquire(self) -> None:
        if self.try_acquire():
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # the slot was handed over as we were cancelled: pass it on
            raise

    def release(self) -> None:
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot goes straight to the waiter
                return
        self._free += 1
