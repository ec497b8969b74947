"""The connectivity guard's logic, without the network: the share test, references through a
fake probe, the cache and single flight, and the lost/restored signal."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field

import pytest

from monitor.scheduler.connectivity import (
    UNSURE,
    Change,
    Guard,
    Outage,
    Verdict,
    parse_reference,
    references_verdict,
    settle,
    share_verdict,
)

pytestmark = pytest.mark.timeout(10)


@dataclass
class FakeProbe:
    """Answers from ``errors`` (a target missing answers None); counts calls; ``gate``, when
    set, holds every probe until it is opened; ``hang`` targets never answer."""

    errors: dict[str, str | None] = field(default_factory=dict)
    calls: Counter[str] = field(default_factory=Counter)
    gate: asyncio.Event | None = None
    hang: frozenset[str] = frozenset()

    async def __call__(self, target: str) -> str | None:
        self.calls[target] += 1
        if self.gate is not None:
            await self.gate.wait()
        if target in self.hang:
            await asyncio.Event().wait()
        return self.errors.get(target)


# -- the share test ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("failing", "seen", "verdict"),
    [
        (0, 0, UNSURE),
        (4, 4, UNSURE),  # fewer than min_monitors (5): no conclusion, even with all failing
        (5, 5, "5 of 5 monitors failing at once"),
        (4, 5, "4 of 5 monitors failing at once"),  # exactly the share
        (3, 5, None),
        (7, 10, None),
        (8, 10, "8 of 10 monitors failing at once"),
        (799, 1000, None),
        (800, 1000, "800 of 1000 monitors failing at once"),
        (0, 1000, None),
    ],
)
def test_share_verdict(failing: int, seen: int, verdict: Verdict) -> None:
    assert share_verdict(failing, seen, min_monitors=5, failing_share=0.8) == verdict


@pytest.mark.parametrize(("failing", "seen", "share"), [(7, 10, 0.7), (3, 10, 0.3), (1, 3, 1 / 3)])
def test_share_verdict_at_exactly_the_share(failing: int, seen: int, share: float) -> None:
    # Compared as a ratio, so a share written in decimal is reached by the counts it names.
    assert share_verdict(failing, seen, min_monitors=1, failing_share=share) is not None


def _recorded(*checks: tuple[int, bool, float], **kwargs: float) -> Guard:
    guard = Guard(**kwargs)  # type: ignore[arg-type]
    for monitor_id, ok, at in checks:
        guard.record(monitor_id, ok, at)
    return guard


@pytest.mark.parametrize(
    ("checks", "now", "counts"),
    [
        ([], 100, (0, 0)),
        ([(1, False, 100), (2, True, 100)], 100, (1, 2)),
        # The latest result of a monitor counts, not every result.
        ([(1, False, 100), (1, False, 110), (1, True, 120)], 120, (0, 1)),
        ([(1, True, 100), (1, False, 110)], 110, (1, 1)),
        # A result older than the monitor's latest (a slow check from before) is ignored.
        ([(1, False, 110), (1, True, 100)], 110, (1, 1)),
        # Out of the window (60 s): gone, also when the monitor's latest result leaves.
        ([(1, False, 100), (2, False, 130)], 161, (1, 1)),
        ([(1, False, 100), (2, False, 130)], 160, (2, 2)),  # exactly 60 s old: still in
        ([(1, False, 100), (1, True, 150), (2, False, 150)], 200, (1, 2)),
        ([(1, False, 100), (1, True, 150), (2, False, 150)], 211, (0, 0)),
        # Recording expires too: the first failure left before the second monitor's check.
        ([(1, False, 100), (2, True, 200)], 200, (0, 1)),
    ],
)
def test_counts_keep_each_monitors_latest_result_in_the_window(
    checks: list[tuple[int, bool, float]], now: float, counts: tuple[int, int]
) -> None:
    assert _recorded(*checks, window=60).counts(now) == counts


async def test_share_test_needs_min_monitors_and_expires() -> None:
    guard = Guard(window=60, min_monitors=5, failing_share=0.8)
    for monitor_id in range(4):
        guard.record(monitor_id, False, 100)
    assert await guard.cut_off(100) is None  # 4 monitors: too few to conclude
    guard.record(4, False, 101)
    assert await guard.cut_off(101) == "5 of 5 monitors failing at once"
    guard.record(5, True, 102)
    assert await guard.cut_off(102) == "5 of 6 monitors failing at once"
    guard.record(6, True, 103)
    assert await guard.cut_off(103) is None  # 5 of 7 < 0.8: back
    assert guard.outage is None


async def test_many_monitors_some_up_through_the_outage() -> None:
    # 100 monitors, 15 on the LAN keep answering while the 85 on the internet fail.
    guard = Guard(window=60)
    for monitor_id in range(100):
        guard.record(monitor_id, True, 1000 + monitor_id * 0.5)
    for monitor_id in range(100):
        guard.record(monitor_id, monitor_id < 15, 1050 + monitor_id * 0.5)
    assert await guard.cut_off(1100) == "85 of 100 monitors failing at once"


# -- references ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("errors", "verdict"),
    [
        ([], None),
        ([("a:1", None)], None),
        ([("a:1", "refused"), ("https://b/", None)], None),
        ([("a:1", "refused")], "references failing: a:1: refused"),
        (
            [("a:1", "refused"), ("https://b/", "timed out after 5s")],
            "references failing: a:1: refused; https://b/: timed out after 5s",
        ),
    ],
)
def test_references_verdict(errors: list[tuple[str, str | None]], verdict: str | None) -> None:
    assert references_verdict(errors) == verdict


@pytest.mark.parametrize(
    ("errors", "reason"),
    [
        ({"a:1": "refused", "b:2": "unreachable"}, "references failing: a:1: refused; b:2: unreachable"),
        ({"a:1": "refused", "b:2": None}, None),
        ({"a:1": None, "b:2": None}, None),
    ],
)
async def test_references_all_failing_vs_one_working(
    errors: dict[str, str | None], reason: str | None
) -> None:
    guard = Guard(["a:1", "b:2"], FakeProbe(errors))
    assert await guard.cut_off(100) == reason
    assert (guard.outage is not None) == (reason is not None)


async def test_one_answering_reference_is_enough_without_waiting_for_the_others() -> None:
    probe = FakeProbe({"a:1": None}, hang=frozenset({"b:2"}))
    guard = Guard(["a:1", "b:2"], probe, probe_timeout=60)
    async with asyncio.timeout(1):
        assert await guard.cut_off(100) is None


async def test_a_probe_is_bounded_by_its_timeout() -> None:
    probe = FakeProbe({"a:1": "refused"}, hang=frozenset({"b:2"}))
    guard = Guard(["a:1", "b:2"], probe, probe_timeout=0.05)
    assert await guard.cut_off(100) == "references failing: a:1: refused; b:2: timed out after 0.05s"


async def test_a_crashing_probe_counts_as_failing() -> None:
    async def probe(target: str) -> str | None:
        raise RuntimeError("bug")

    guard = Guard(["a:1"], probe)
    assert await guard.cut_off(100) == "references failing: a:1: internal error: RuntimeError"


@pytest.mark.parametrize(
    ("second_at", "rounds"),
    [(100, 1), (104.9, 1), (105, 2), (200, 2)],
)
async def test_probes_are_cached_for_a_few_seconds(second_at: float, rounds: int) -> None:
    probe = FakeProbe({"a:1": "refused"})
    guard = Guard(["a:1"], probe, cache_seconds=5)
    first = await guard.cut_off(100)
    assert await guard.cut_off(second_at) == first
    assert probe.calls["a:1"] == rounds


async def test_concurrent_callers_share_one_round() -> None:
    probe = FakeProbe({"a:1": "refused", "b:2": "refused"}, gate=asyncio.Event())
    guard = Guard(["a:1", "b:2"], probe)
    callers = [asyncio.create_task(guard.cut_off(100 + i * 0.01)) for i in range(20)]
    await asyncio.sleep(0.01)
    assert probe.gate is not None
    probe.gate.set()
    reasons = await asyncio.gather(*callers)
    assert set(reasons) == {"references failing: a:1: refused; b:2: refused"}
    assert probe.calls == {"a:1": 1, "b:2": 1}


async def test_a_caller_cancelled_does_not_cancel_the_round() -> None:
    probe = FakeProbe({"a:1": "refused"}, gate=asyncio.Event())
    changes: list[Change] = []
    guard = Guard(["a:1"], probe, on_change=changes.append)
    first = asyncio.create_task(guard.cut_off(100))
    second = asyncio.create_task(guard.cut_off(100))
    await asyncio.sleep(0.01)
    first.cancel()
    assert probe.gate is not None
    probe.gate.set()
    assert await second == "references failing: a:1: refused"
    assert probe.calls["a:1"] == 1 and [c.kind for c in changes] == ["lost"]


async def test_close_cancels_a_round_in_flight() -> None:
    probe = FakeProbe(hang=frozenset({"a:1"}))
    guard = Guard(["a:1"], probe, probe_timeout=60)
    caller = asyncio.create_task(guard.cut_off(100))
    await asyncio.sleep(0.01)
    await guard.close()
    with pytest.raises(asyncio.CancelledError):
        await caller


def test_references_need_a_probe() -> None:
    with pytest.raises(ValueError, match="probe"):
        Guard(["a:1"])


async def test_record_does_nothing_with_references() -> None:
    guard = Guard(["a:1"], FakeProbe())
    guard.record(1, False, 100)
    assert guard.counts(100) == (0, 0)


# -- the state and its signal ----------------------------------------------------------------

OUT = Outage("references failing: a:1: refused", 100)


@pytest.mark.parametrize(
    ("outage", "verdict", "after", "change"),
    [
        (None, None, None, None),
        (None, UNSURE, None, None),
        (
            None,
            "5 of 5 monitors failing at once",
            Outage("5 of 5 monitors failing at once", 130),
            Change("lost", "5 of 5 monitors failing at once", 130, 130),
        ),
        (OUT, "references failing: a:1: timed out", OUT, None),  # first reason and since kept
        (OUT, UNSURE, OUT, None),
        (OUT, None, None, Change("restored", OUT.reason, 100, 130)),
    ],
)
def test_settle(outage: Outage | None, verdict: Verdict, after: Outage | None, change: Change | None) -> None:
    assert settle(outage, verdict, 130) == (after, change)


async def test_lost_and_restored_are_signalled_once_each() -> None:
    probe = FakeProbe({"a:1": "refused"})
    changes: list[Change] = []
    guard = Guard(["a:1"], probe, cache_seconds=5, on_change=changes.append)
    for now in (100, 101, 106, 112):
        assert await guard.cut_off(now) == "references failing: a:1: refused"
    probe.errors["a:1"] = None
    for now in (118, 119, 125):
        assert await guard.cut_off(now) is None
    assert changes == [
        Change("lost", "references failing: a:1: refused", 100, 100),
        Change("restored", "references failing: a:1: refused", 100, 118),
    ]
    assert changes[1].lasted == 18


async def test_share_test_signals_once_and_keeps_the_state_while_unsure() -> None:
    changes: list[Change] = []
    guard = Guard(window=60, min_monitors=5, on_change=changes.append)
    for monitor_id in range(5):
        guard.record(monitor_id, False, 100)
    assert await guard.cut_off(100) == "5 of 5 monitors failing at once"
    assert await guard.cut_off(150) == "5 of 5 monitors failing at once"
    # Every result has left the window: nothing says the network is back, so it is still cut off.
    assert await guard.cut_off(200) == "5 of 5 monitors failing at once"
    assert guard.counts(200) == (0, 0)
    for monitor_id in range(5):
        guard.record(monitor_id, True, 210)
    assert await guard.cut_off(210) is None
    assert [(c.kind, c.since, c.at) for c in changes] == [("lost", 100, 100), ("restored", 100, 210)]


async def test_run_notices_the_return_without_a_check_asking() -> None:
    probe = FakeProbe({"a:1": "refused"})
    changes: list[Change] = []
    restored = asyncio.Event()

    def on_change(change: Change) -> None:
        changes.append(change)
        if change.kind == "restored":
            restored.set()

    clock = iter(range(1000, 2000, 10))
    guard = Guard(["a:1"], probe, cache_seconds=5, on_change=on_change)
    runner = asyncio.create_task(guard.run(every=0.01, clock=lambda: next(clock)))
    try:
        await asyncio.sleep(0.05)
        assert probe.calls["a:1"] == 0  # connected: the loop does not probe
        assert await guard.cut_off(100) is not None
        probe.errors["a:1"] = None
        async with asyncio.timeout(2):
            await restored.wait()
    finally:
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)
    assert [c.kind for c in changes] == ["lost", "restored"] and guard.outage is None
    assert changes[1].since == 100 and changes[1].at >= 1000


async def test_a_failing_signal_handler_does_not_reach_the_caller() -> None:
    def on_change(change: Change) -> None:
        raise RuntimeError("outbox down")

    guard = Guard(["a:1"], FakeProbe({"a:1": "refused"}), on_change=on_change)
    assert await guard.cut_off(100) == "references failing: a:1: refused"
    assert guard.outage is not None


# -- reference targets -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "url", "host", "port"),
    [
        ("https://example.com/ping", "https://example.com/ping", "example.com", 443),
        (" http://10.0.0.1:8080/ ", "http://10.0.0.1:8080/", "10.0.0.1", 8080),
        ("1.1.1.1:53", None, "1.1.1.1", 53),
        ("Dns.Google:443", None, "dns.google", 443),
        ("[2606:4700:4700::1111]:53", None, "2606:4700:4700::1111", 53),
    ],
)
def test_parse_reference(text: str, url: str | None, host: str, port: int) -> None:
    reference = parse_reference(text)
    assert (reference.url, reference.host, reference.port) == (url, host, port)


@pytest.mark.parametrize(
    "text",
    [
        "example.com",
        "example.com:",
        "example.com:http",
        "1.1.1.1:0",
        "1.1.1.1:70000",
        "example.com:80/path",
        "user@example.com:80",
        "2606:4700:4700::1111:53",
        "0x7f.1:80",
        "ftp://example.com/",
        "https://user:pw@example.com/",
        "",
    ],
)
def test_parse_reference_refuses(text: str) -> None:
    with pytest.raises(ValueError, match=repr(text) if text else "neither"):
        parse_reference(text)
