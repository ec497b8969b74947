"""``Fresh``: one build per key at a time, served from cache for ``ttl`` and never past it while
the database answers (the next build begun ahead of the period's end, and waited for after
it), the value before only while builds fail (for ``stale`` more) or one takes ``patience``,
errors to waiters only when nothing can be served, ``forget``, least recently used eviction,
``remaining``, ``close``.

The clock is a fake one (a list of readings); builds are held on events and observed through
queues, and every wait has a deadline: no test sleeps.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import pytest

from monitor.status.cache import Fresh

T = TypeVar("T")
TTL, STALE, RETRY = 10.0, 60.0, 1.0
DEADLINE = 5.0


class Clock:
    """Monotonic seconds: the last of ``readings``; ``advance`` appends the next."""

    def __init__(self) -> None:
        self.readings = [1000.0]

    def __call__(self) -> float:
        return self.readings[-1]

    def advance(self, seconds: float) -> None:
        self.readings.append(self.readings[-1] + seconds)


class Builder:
    """A build that counts its calls, answers ``"<key>#<call number>"``, waits on its own gate
    while ``hold`` is true (as set when it starts), and raises a new ``RuntimeError(fail)``
    when ``fail`` is set (as set when it starts): no test holds on to a build's error."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.hold = False
        self.fail: str | None = None
        self.gates: list[asyncio.Event] = []
        self.started: asyncio.Queue[int] = asyncio.Queue()
        self.finished: asyncio.Queue[int] = asyncio.Queue()
        self.cancelled: list[int] = []

    async def __call__(self, key: str) -> str:
        self.calls.append(key)
        n = len(self.calls)
        gate = asyncio.Event()
        if not self.hold:
            gate.set()
        self.gates.append(gate)
        fail = self.fail
        self.started.put_nowait(n)
        try:
            await gate.wait()
        except asyncio.CancelledError:
            self.cancelled.append(n)
            raise
        self.finished.put_nowait(n)
        if fail is not None:
            raise RuntimeError(fail)
        return f"{key}#{n}"

    def release(self, n: int) -> None:
        self.gates[n - 1].set()


async def within(aw: Awaitable[T]) -> T:
    return await asyncio.wait_for(aw, DEADLINE)


async def next_of(queue: asyncio.Queue[int]) -> int:
    return await within(queue.get())


async def first_value(fresh: Fresh[str, str], builder: Builder, key: str) -> str:
    """The value of a first, unheld build of ``key``, its start and end taken off the queues."""
    value = await within(fresh.get(key))
    n = await next_of(builder.started)
    assert await next_of(builder.finished) == n
    return value


Make = Callable[..., tuple[Fresh[str, str], Builder, Clock]]


@pytest.fixture
async def make() -> AsyncIterator[Make]:
    made: list[tuple[Fresh[str, str], Builder]] = []

    def factory(**options: Any) -> tuple[Fresh[str, str], Builder, Clock]:
        builder, clock = Builder(), Clock()
        fresh: Fresh[str, str] = Fresh(
            builder, options.pop("ttl", TTL), stale=options.pop("stale", STALE), clock=clock, **options
        )
        made.append((fresh, builder))
        return fresh, builder, clock

    yield factory
    for fresh, builder in made:
        for gate in builder.gates:
            gate.set()
        await within(fresh.close())


async def test_one_build_for_concurrent_gets(make: Make) -> None:
    fresh, builder, _ = make()
    builder.hold = True
    waiters = [asyncio.create_task(fresh.get("k")) for _ in range(100)]
    assert await next_of(builder.started) == 1
    assert not any(w.done() for w in waiters)
    builder.release(1)
    assert await within(asyncio.gather(*waiters)) == ["k#1"] * 100
    assert builder.calls == ["k"] and fresh.builds == 1


async def test_keys_build_apart(make: Make) -> None:
    fresh, builder, _ = make()
    got = await within(asyncio.gather(*(fresh.get(k) for k in ["a", "b", "a", "c", "b"])))
    assert got == ["a#1", "b#2", "a#1", "c#3", "b#2"]
    assert builder.calls == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("age", "expected"),
    [
        (0.0, "cached"),
        (TTL - 0.001, "cached"),
        # A period old: the new build is waited for, whatever the age (a quiet spell included).
        (TTL, "waits"),
        (TTL + 1, "waits"),
        (TTL + STALE - 0.001, "waits"),
        (TTL + STALE, "waits"),
        (10 * (TTL + STALE), "waits"),
    ],
)
async def test_by_age(make: Make, age: float, expected: str) -> None:
    fresh, builder, clock = make()
    assert await first_value(fresh, builder, "k") == "k#1"
    clock.advance(age)
    builder.hold = True
    gets = [asyncio.create_task(fresh.get("k")) for _ in range(100)]
    if expected == "cached":
        assert await within(asyncio.gather(*gets)) == ["k#1"] * 100
        assert builder.calls == ["k"]
        return
    assert await next_of(builder.started) == 2
    assert not any(g.done() for g in gets)
    builder.release(2)
    assert await within(asyncio.gather(*gets)) == ["k#2"] * 100
    assert builder.calls == ["k", "k"]
    # The new value is fresh for another ttl.
    clock.advance(TTL - 0.001)
    assert await within(fresh.get("k")) == "k#2"
    assert builder.calls == ["k", "k"]


async def held_build(fresh: Fresh[str, str], builder: Builder, clock: Clock, key: str, took: float) -> str:
    """A first value of ``key`` whose build took ``took`` seconds of the clock."""
    builder.hold = True
    waiter = asyncio.create_task(fresh.get(key))
    n = await next_of(builder.started)
    clock.advance(took)
    builder.release(n)
    value = await within(waiter)
    assert await next_of(builder.finished) == n
    builder.hold = False
    return value


@pytest.mark.parametrize(
    ("took", "age", "ahead"),
    [
        (1.0, TTL - 2.001, False),  # more than twice the last build's time before the end
        (1.0, TTL - 2.0, True),
        (1.0, TTL - 0.001, True),
        (0.0, TTL - 0.001, False),  # a build that took no time is not begun ahead
        (4.0, TTL / 2 - 0.001, False),  # never more than half the period ahead
        (4.0, TTL / 2, True),
    ],
)
async def test_the_next_build_begins_ahead_of_the_periods_end(
    make: Make, took: float, age: float, ahead: bool
) -> None:
    fresh, builder, clock = make()
    assert await held_build(fresh, builder, clock, "k", took) == "k#1"
    clock.advance(age)
    builder.hold = True
    # Answered at once with the value of the period still running, whatever is begun.
    assert await within(asyncio.gather(*(fresh.get("k") for _ in range(10)))) == ["k#1"] * 10
    if not ahead:
        assert builder.calls == ["k"]
        return
    assert await next_of(builder.started) == 2 and builder.calls == ["k", "k"]  # one, for them all
    builder.release(2)
    assert await next_of(builder.finished) == 2
    assert await within(fresh.get("k")) == "k#2"
    # Fresh for a period from its own end: past the old one's, no build, no wait.
    clock.advance(TTL - age)
    assert await within(fresh.get("k")) == "k#2" and builder.calls == ["k", "k"]


async def test_a_build_is_waited_for_no_longer_than_patience(make: Make) -> None:
    # A database that hangs: the request waits `patience` (real seconds here: 0.05), then is
    # answered with the value before; so is every request once the build has run that long.
    fresh, builder, clock = make(patience=0.05)
    assert await first_value(fresh, builder, "k") == "k#1"
    clock.advance(TTL)
    builder.hold = True
    assert await within(fresh.get("k")) == "k#1"
    assert await next_of(builder.started) == 2
    clock.advance(0.05)
    gets = [asyncio.create_task(fresh.get("k")) for _ in range(10)]
    assert await within(asyncio.gather(*gets)) == ["k#1"] * 10
    assert builder.calls == ["k", "k"]
    builder.release(2)
    assert await next_of(builder.finished) == 2
    assert await within(fresh.get("k")) == "k#2"


@pytest.mark.parametrize(
    ("age", "left"),
    [(0.0, TTL), (2.5, TTL - 2.5), (TTL - 0.001, 0.001), (TTL, 0.0), (TTL + STALE + 1, 0.0)],
)
async def test_remaining_is_what_is_left_of_the_period(make: Make, age: float, left: float) -> None:
    fresh, builder, clock = make()
    assert fresh.remaining("k") == 0.0  # nothing built
    assert await first_value(fresh, builder, "k") == "k#1"
    clock.advance(age)
    assert fresh.remaining("k") == pytest.approx(left)


async def test_failure_reaches_waiters_when_nothing_is_cached(make: Make) -> None:
    fresh, builder, clock = make()
    builder.hold, builder.fail = True, "database down"
    waiters = [asyncio.create_task(fresh.get("k")) for _ in range(10)]
    assert await next_of(builder.started) == 1
    builder.release(1)
    results = await within(asyncio.gather(*waiters, return_exceptions=True))
    assert isinstance(results[0], RuntimeError) and str(results[0]) == "database down"
    assert all(r is results[0] for r in results)  # the one build's error
    assert builder.calls == ["k"]
    # Within `retry` of the failure a get is answered with it, without a build.
    builder.hold, builder.fail = False, None
    with pytest.raises(RuntimeError, match="database down"):
        await within(fresh.get("k"))
    assert builder.calls == ["k"]
    # Nothing stored: past `retry` the next get builds again.
    clock.advance(RETRY)
    assert await within(fresh.get("k")) == "k#2"


async def test_stale_value_served_when_refresh_fails(make: Make, caplog: pytest.LogCaptureFixture) -> None:
    fresh, builder, clock = make()
    assert await first_value(fresh, builder, "k") == "k#1"
    clock.advance(TTL)
    builder.fail = "database down"
    # The build is waited for; it fails: the value before.
    assert await within(fresh.get("k")) == "k#1"
    assert await next_of(builder.finished) == 2
    # Still served; within `retry` of the failure without a new build, after it with one.
    assert await within(fresh.get("k")) == "k#1"
    assert len(builder.calls) == 2
    # After it, a build is begun, and not waited for while the last one failed.
    clock.advance(RETRY)
    builder.hold = True
    assert await within(fresh.get("k")) == "k#1"
    builder.release(3)
    builder.hold = False
    assert await next_of(builder.finished) == 3
    clock.advance(STALE - RETRY - 0.001)
    assert await within(fresh.get("k")) == "k#1"
    assert await next_of(builder.finished) == 4
    # Past ttl + stale the failure is the answer.
    clock.advance(0.001)
    with pytest.raises(RuntimeError, match="database down"):
        await within(fresh.get("k"))
    # A background build's error is not reported as a lost one.
    gc.collect()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    # And once the database is back, the next get's build (past `retry`) is stored.
    builder.fail = None
    clock.advance(RETRY)
    assert await within(fresh.get("k")) == "k#5"
    assert await within(fresh.get("k")) == "k#5"


async def test_cancelled_waiter_does_not_cancel_the_build(make: Make) -> None:
    fresh, builder, _ = make()
    builder.hold = True
    first, second = asyncio.create_task(fresh.get("k")), asyncio.create_task(fresh.get("k"))
    assert await next_of(builder.started) == 1
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await within(first)
    builder.release(1)
    assert await within(second) == "k#1"
    assert builder.cancelled == []


async def test_forget_builds_again(make: Make) -> None:
    fresh, builder, _ = make()
    assert await within(fresh.get("k")) == "k#1"
    assert await within(fresh.get("other")) == "other#2"
    fresh.forget("k", "never-asked")
    assert await within(fresh.get("k")) == "k#3"
    assert await within(fresh.get("other")) == "other#2"
    assert builder.calls == ["k", "other", "k"]


async def test_build_begun_before_forget_is_not_stored(make: Make) -> None:
    fresh, builder, _ = make()
    builder.hold = True
    before = asyncio.create_task(fresh.get("k"))
    assert await next_of(builder.started) == 1
    fresh.forget("k")
    after = asyncio.create_task(fresh.get("k"))
    assert await next_of(builder.started) == 2
    # The newer build ends first, then the older: the older must not replace it.
    builder.release(2)
    assert await within(after) == "k#2"
    builder.release(1)
    assert await within(before) == "k#1"  # its own waiters still get what it built
    assert await within(fresh.get("k")) == "k#2"
    assert builder.calls == ["k", "k"]


async def test_forget_while_building_alone_is_not_stored(make: Make) -> None:
    fresh, builder, _ = make()
    builder.hold = True
    before = asyncio.create_task(fresh.get("k"))
    assert await next_of(builder.started) == 1
    fresh.forget("k")
    builder.release(1)
    assert await within(before) == "k#1"
    builder.hold = False
    assert await within(fresh.get("k")) == "k#2"


@pytest.mark.parametrize(
    ("max_keys", "asked", "built"),
    [
        (2, "a b a b", "a b"),
        (2, "a b c a", "a b c a"),  # a was the least recently used
        (2, "a b a c a", "a b c"),  # a was asked again: b goes instead
        (2, "a b a c b", "a b c b"),
        (1, "a a b a", "a b a"),
        (3, "a b c a b c", "a b c"),
        (3, "a b c d a", "a b c d a"),
    ],
)
async def test_least_recently_used_evicted(make: Make, max_keys: int, asked: str, built: str) -> None:
    fresh, builder, _ = make(max_keys=max_keys)
    for key in asked.split():
        await within(fresh.get(key))
    assert builder.calls == built.split()


async def test_close_cancels_running_builds(make: Make) -> None:
    fresh, builder, clock = make()
    assert await held_build(fresh, builder, clock, "ahead", 1.0) == "ahead#1"
    clock.advance(TTL - 0.001)  # the next build is begun ahead
    builder.hold = True
    assert await within(fresh.get("ahead")) == "ahead#1"  # its rebuild runs in the background
    assert await next_of(builder.started) == 2
    waiter = asyncio.create_task(fresh.get("k"))
    assert await next_of(builder.started) == 3
    await within(fresh.close())
    assert sorted(builder.cancelled) == [2, 3]
    # The waiter is not left hanging.
    with pytest.raises(asyncio.CancelledError):
        await within(waiter)


async def test_values_weigh_at_most_max_weight(make: Make) -> None:
    # Each value weighs its length ("a#1" is 3): at most 7 kept means two of them.
    fresh, builder, _ = make(weigh=len, max_weight=7)
    for key in ("a", "b", "c"):
        assert await first_value(fresh, builder, key) == f"{key}#{len(builder.calls)}"
    assert fresh.weight == 6
    # "a" went first (least recently used): asking again builds it again.
    assert await first_value(fresh, builder, "a") == "a#4"
    assert await within(fresh.get("c")) == "c#3"  # still kept
    assert fresh.weight == 6


async def test_a_kept_failure_is_raised_afresh_without_piling_frames(make: Make) -> None:
    fresh, builder, _ = make()
    builder.fail = "database down"
    with pytest.raises(RuntimeError) as first:
        await within(fresh.get("k"))
    depths = []
    for _ in range(50):  # within `retry`: the kept failure, no build
        with pytest.raises(RuntimeError) as again:
            await within(fresh.get("k"))
        depths.append(len(traceback.extract_tb(again.value.__traceback__)))
    assert again.value is first.value and len(set(depths)) == 1
    assert builder.calls == ["k"]
    # An owner's change forgets the failure too: the next get builds.
    builder.fail = None
    fresh.forget("k")
    assert await within(fresh.get("k")) == "k#2"
