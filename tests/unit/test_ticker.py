"""Tick offsets on the slot grid, and the hot path's small primitives (monitor/aio.py)."""

import asyncio
from types import SimpleNamespace
from typing import cast

import pytest

from monitor.aio import Deadline, Slots
from monitor.scheduler.judging import Judging, down_above
from monitor.scheduler.state import State
from monitor.scheduler.ticker import first_tick, stable_offset


def test_offsets_are_whole_slots_spread_over_the_interval_and_stable() -> None:
    offsets = [stable_offset(i, 10.0, 0.1) for i in range(1, 2001)]
    assert all(0 <= o < 10.0 for o in offsets)
    assert all(abs(o / 0.1 - round(o / 0.1)) < 1e-6 for o in offsets)
    assert len({round(o, 6) for o in offsets}) > 95  # nearly every one of the 100 slots is used
    assert offsets == [stable_offset(i, 10.0, 0.1) for i in range(1, 2001)]


def test_ticks_of_any_whole_slot_interval_fall_on_one_grid() -> None:
    # The grid is global: a 10 s and a 30 s monitor are due a whole number of slots apart,
    # so those in the same slot tick together.
    a, b = stable_offset(1, 10.0, 0.1), stable_offset(5, 30.0, 0.1)
    now = 1_800_000_000.0
    due_a = a + first_tick(now, a, 10.0) * 10.0
    due_b = b + first_tick(now, b, 30.0) * 30.0
    assert abs((due_a - due_b) / 0.1 - round((due_a - due_b) / 0.1)) < 1e-3


@pytest.mark.parametrize(
    ("interval", "slot"),
    [(10.0, 0.0), (0.05, 0.1), (7.25, 0.1)],
)
def test_offsets_without_a_grid_or_off_it_stay_within_the_interval(interval: float, slot: float) -> None:
    offsets = {stable_offset(i, interval, slot) for i in range(1, 500)}
    assert all(0 <= o < interval for o in offsets) and len(offsets) > 50


async def test_slots_are_served_in_order_and_handed_over() -> None:
    slots = Slots(1)
    assert slots.try_acquire() and not slots.try_acquire()
    order: list[str] = []

    async def take(name: str) -> None:
        await slots.acquire()
        order.append(name)

    first, second = asyncio.create_task(take("first")), asyncio.create_task(take("second"))
    await asyncio.sleep(0)
    slots.release()  # to the first waiter, not back to the pool
    await first
    assert order == ["first"] and slots.free == 0
    slots.release()
    await second
    slots.release()
    assert order == ["first", "second"] and slots.free == 1


async def test_a_deadline_turns_only_its_own_cancellation_into_a_timeout() -> None:
    loop = asyncio.get_running_loop()

    async def guarded(delay: float) -> str:
        deadline = Deadline(loop, delay)
        try:
            await asyncio.sleep(1)
            return "done"
        except asyncio.CancelledError:
            if not deadline.caused():
                raise
            return "timed out"
        finally:
            deadline.cancel()

    assert await guarded(0.01) == "timed out"
    task = asyncio.create_task(guarded(5))
    await asyncio.sleep(0.01)
    task.cancel()  # someone else's cancellation stays a cancellation
    with pytest.raises(asyncio.CancelledError):
        await task


# Monitors: 1 router; 2 server (on 1); 3 site (on 2); 4 mirror (on 1); 5 shop (on 3 and 4);
# 6 and 7 depend on each other (a cycle the API refuses, but the walk must survive it).
PARENTS = {2: (1,), 3: (2,), 4: (1,), 5: (3, 4), 6: (7,), 7: (6,)}


@pytest.mark.parametrize(
    ("states", "monitor", "blamed"),
    [
        ({}, 3, None),  # nothing known: nothing to blame
        ({1: State("up"), 2: State("up")}, 3, None),
        ({1: State("down"), 2: State("up")}, 3, 1),  # two levels up
        ({1: State("down"), 2: State("down")}, 3, 1),  # the furthest up, as the router's DOWN said
        ({1: State("up"), 2: State("down")}, 3, 2),
        ({1: State("up", failures=1), 2: State("up")}, 3, 1),  # failing, not yet confirmed
        ({1: State("up", failures=1), 2: State("down")}, 3, 1),
        ({1: State("up"), 2: State("up"), 4: State("down")}, 5, 4),  # a diamond: either branch
        ({1: State("down")}, 5, 1),
        ({6: State("down"), 7: State("down")}, 6, 7),
        ({}, 6, None),
    ],
)
def test_a_dependant_is_blamed_on_the_failing_monitor_furthest_up(
    states: dict[int, State], monitor: int, blamed: int | None
) -> None:
    judging = cast(Judging, SimpleNamespace(parents=PARENTS, states=states))
    assert down_above(PARENTS[monitor], judging, {monitor}) == blamed
