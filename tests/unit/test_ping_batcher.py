"""The ping route's Batcher: one call at a time, the items that arrived meanwhile together in the
next, each caller its own result or the call's exception, nobody left waiting on a cancel; and
a ping's body, bounded and stored as text."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from monitor.checks.heartbeat import MAX_BODY_BYTES
from monitor.domain.pings import Batcher, bounded_body


class Recorder:
    """A call that records its batches and answers each item doubled (or raises ``fail``)."""

    def __init__(self, fail: Exception | None = None) -> None:
        self.batches: list[list[int]] = []
        self.fail = fail
        self.gate = asyncio.Event()
        self.gate.set()

    async def __call__(self, items: list[int]) -> list[int]:
        self.batches.append(list(items))
        await self.gate.wait()
        if self.fail is not None:
            raise self.fail
        return [2 * item for item in items]


@pytest.mark.parametrize(
    ("first", "then", "max_batch", "batches"),
    [
        # A lone item goes at once, alone.
        ([1], [], 10, [[1]]),
        # Items submitted together (one loop iteration) share the first call.
        ([1, 2, 3], [], 10, [[1, 2, 3]]),
        # What arrives while a call runs waits for it, then goes together in the next.
        ([1], [2, 3, 4], 10, [[1], [2, 3, 4]]),
        # No call carries more than max_batch items.
        ([1, 2, 3, 4, 5], [], 2, [[1, 2], [3, 4], [5]]),
        ([1], [2, 3, 4], 2, [[1], [2, 3], [4]]),
    ],
)
async def test_batches_form_while_a_call_runs(
    first: list[int], then: list[int], max_batch: int, batches: list[list[int]]
) -> None:
    call = Recorder()
    call.gate.clear()
    batcher: Batcher[int, int] = Batcher(call, max_batch=max_batch)
    early = [asyncio.create_task(batcher.submit(i)) for i in first]
    await asyncio.sleep(0)  # the first call starts and waits at the gate
    await asyncio.sleep(0)
    late = [asyncio.create_task(batcher.submit(i)) for i in then]
    await asyncio.sleep(0)
    call.gate.set()
    assert await asyncio.gather(*early, *late) == [2 * i for i in [*first, *then]]
    assert call.batches == batches
    await batcher.close()


async def test_every_caller_of_a_failed_call_gets_its_exception_and_the_next_call_goes() -> None:
    call = Recorder(fail=OSError("connection refused"))
    batcher: Batcher[int, int] = Batcher(call)
    results = await asyncio.gather(*(batcher.submit(i) for i in (1, 2)), return_exceptions=True)
    assert [str(r) for r in results] == ["connection refused"] * 2
    assert all(isinstance(r, OSError) for r in results)
    call.fail = None
    assert await batcher.submit(3) == 6
    assert call.batches == [[1, 2], [3]]


async def test_a_caller_that_left_does_not_stop_the_others() -> None:
    call = Recorder()
    call.gate.clear()
    batcher: Batcher[int, int] = Batcher(call)
    gone = asyncio.create_task(batcher.submit(1))
    stays = asyncio.create_task(batcher.submit(2))
    await asyncio.sleep(0)
    gone.cancel()
    call.gate.set()
    assert await stays == 4
    with pytest.raises(asyncio.CancelledError):
        await gone
    assert call.batches == [[1, 2]]  # its item was still written


async def test_close_waits_for_the_call_under_way() -> None:
    call = Recorder()
    call.gate.clear()
    batcher: Batcher[int, int] = Batcher(call)
    callers = [asyncio.create_task(batcher.submit(i)) for i in (1, 2)]
    await asyncio.sleep(0)
    closing = asyncio.create_task(batcher.close())
    await asyncio.sleep(0)
    assert not closing.done()
    call.gate.set()
    await closing
    assert [c.result() for c in callers] == [2, 4]


@pytest.mark.parametrize("started", [False, True], ids=["before-it-ran", "during-a-call"])
async def test_a_cancelled_drain_frees_every_caller_and_the_next_submit_goes(started: bool) -> None:
    call = Recorder()
    call.gate.clear()
    batcher: Batcher[int, int] = Batcher(call)
    waiting = [asyncio.create_task(batcher.submit(i)) for i in (1, 2)]
    await asyncio.sleep(0)  # the callers have submitted; the drain is created, not yet run
    if started:
        await asyncio.sleep(0)
        assert call.batches == [[1, 2]]
    assert batcher._task is not None
    batcher._task.cancel()
    done = await asyncio.gather(*waiting, return_exceptions=True)
    assert all(isinstance(r, asyncio.CancelledError) for r in done)
    await asyncio.sleep(0)
    assert batcher._task is None
    call.gate.set()
    assert await asyncio.wait_for(batcher.submit(3), 5) == 6


def chunks(*parts: bytes) -> Callable[[int], Awaitable[bytes]]:
    """A body reader that hands out ``parts`` one per read (as a socket hands out what has
    arrived), each cut to what the read asked for."""
    left = list(parts)

    async def read(n: int) -> bytes:
        if not left:
            return b""
        part = left.pop(0)
        if len(part) > n:
            left.insert(0, part[n:])
        return part[:n]

    return read


@pytest.mark.parametrize(
    ("parts", "text", "truncated"),
    [
        ((), None, False),
        ((b"ok\n",), "ok\n", False),
        ((b"a" * 10, b"b" * 10), "a" * 10 + "b" * 10, False),  # read until the end
        ((b"x" * MAX_BODY_BYTES,), "x" * MAX_BODY_BYTES, False),
        ((b"x" * (MAX_BODY_BYTES - 1), b"yz"), "x" * (MAX_BODY_BYTES - 1) + "y", True),
        ((b"nul\x00\xff",), "nul\ufffd\ufffd", False),  # no NUL stored, bad UTF-8 replaced
    ],
)
def test_a_pings_body_is_bounded_text(parts: tuple[bytes, ...], text: str | None, truncated: bool) -> None:
    assert asyncio.run(bounded_body(chunks(*parts))) == (text, truncated)
