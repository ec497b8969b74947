"""Per-chat sending: order per monitor, batching, retries, rate limits (no network)."""

import asyncio
import time

import pytest
from support import wait_for

from monitor.alerter.dispatch import DestinationSender, Item, RetryPolicy, bounded_wait
from monitor.alerter.ratelimit import SlidingWindow
from monitor.channels import telegram
from monitor.channels.base import Bucket, DeliveryError
from monitor.events import Event


def event(n: int, kind: str = "down", monitor_id: int | None = None) -> Event:
    return Event(
        event_id=f"e{n}",
        kind=kind,
        monitor_id=monitor_id if monitor_id is not None else n,
        monitor_name=f"site {n}",
        monitor_url=f"https://s{n}.example/",
        telegram_chat_id="42",
        incident_id=n,
        at="2026-01-01T00:00:00Z",
        started_at="2026-01-01T00:00:00Z",
        ended_at="2026-01-01T00:05:00Z" if kind == "up" else None,
        duration_seconds=300.0 if kind == "up" else None,
        cause={"status_code": 500, "error": "unexpected status 500", "latency_ms": 3.0},
    )


def item(n: int, kind: str = "down", monitor_id: int | None = None, not_before: float = 0.0) -> Item:
    it = Item(f"{1000 + n}-0", event(n, kind, monitor_id), "telegram:42")
    it.not_before = not_before
    return it


def sender(send, outcomes: list, retry: RetryPolicy | None = None, pace=None) -> DestinationSender:  # type: ignore[no-untyped-def]
    async def on_outcome(items: list[Item], outcome: str, error: str | None) -> None:
        outcomes.append((outcome, [i.event.event_id for i in items], error))

    kwargs = {"pace": pace} if pace is not None else {}
    return DestinationSender(
        "telegram:42",
        send=send,
        compose=telegram.compose,
        on_outcome=on_outcome,
        retry=retry or RetryPolicy(max_attempts=5, base=0.01, cap=0.02),
        **kwargs,
    )


def test_eligible_keeps_each_monitors_order() -> None:
    s = sender(None, [])
    later = time.monotonic() + 60
    for it in [item(1, monitor_id=7, not_before=later), item(2, "up", monitor_id=7), item(3, monitor_id=8)]:
        s._items.append(it)
    # Monitor 7's recovery waits behind its outage in backoff; monitor 8 goes on.
    assert [i.event.event_id for i in s.eligible(time.monotonic())] == ["e3"]


def test_put_keeps_stream_order() -> None:
    s = sender(None, [])
    s._task = object()  # type: ignore[assignment]  # no loop needed for ordering
    for n in (3, 1, 2):
        s.put(item(n))
    assert [i.entry_id for i in s._items] == ["1001-0", "1002-0", "1003-0"]


async def test_events_waiting_together_are_combined() -> None:
    sent: list[str] = []
    outcomes: list = []
    gate = asyncio.Event()

    async def send(channel: object, text: str) -> None:
        sent.append(text)
        await gate.wait()

    s = sender(send, outcomes)
    s.put(item(0))
    await wait_for(lambda: sent, timeout=10)
    for n in range(1, 120):
        s.put(item(n))
    gate.set()
    await wait_for(lambda: sum(len(ids) for _, ids, _ in outcomes) >= 120, timeout=15)
    await s.stop()
    assert sum(len(ids) for _, ids, _ in outcomes) == 120
    assert len(sent) <= 5  # 1 alone, then 119 in as few 4096-character messages as fit
    assert all(len(t) <= telegram.MAX_MESSAGE for t in sent)
    assert "site 119" in sent[-1]


async def test_transient_failures_retry_then_permanent_dead_letters() -> None:
    calls = {"n": 0}
    outcomes: list = []

    async def send(channel: object, text: str) -> None:
        calls["n"] += 1
        if calls["n"] <= 2:
            raise DeliveryError("telegram 500", permanent=False)
        if "site 2" in text:
            raise DeliveryError("telegram 400: chat not found", permanent=True)

    s = sender(send, outcomes)
    s.put(item(1))
    await wait_for(lambda: outcomes, timeout=10)
    s.put(item(2))
    await wait_for(lambda: len(outcomes) >= 2, timeout=10)
    await s.stop()
    assert outcomes[0] == ("sent", ["e1"], None)
    assert outcomes[1][0] == "dead" and "chat not found" in outcomes[1][2]


async def test_budget_exhausted_goes_dead() -> None:
    outcomes: list = []

    async def send(channel: object, text: str) -> None:
        raise DeliveryError("telegram unreachable", permanent=False)

    s = sender(send, outcomes, RetryPolicy(max_attempts=3, base=0.01, cap=0.01))
    s.put(item(1))
    await wait_for(lambda: outcomes, timeout=10)
    await s.stop()
    assert outcomes == [("dead", ["e1"], "telegram unreachable")]


def test_retry_delay_honours_retry_after_and_grows() -> None:
    policy = RetryPolicy(max_attempts=10, base=1.0, cap=60.0)
    assert policy.delay(1, 2.0) >= 2.0
    assert 0.5 <= policy.delay(1, None) <= 1.0
    assert 8.0 <= policy.delay(5, None) <= 16.0
    assert policy.delay(30, None) <= 60.0


def test_limits() -> None:
    # Telegram's flood limits as the shared pacer's buckets: the chat first (a 429 blocks it).
    assert telegram.limits("telegram:42") == [Bucket("telegram:42", 1, 1.05), Bucket("telegram:bot", 30, 1.0)]
    assert Bucket("telegram:-100123:minute", 20, 61.0) in telegram.limits("telegram:-100123")
    window = SlidingWindow(2, 1.0)
    window.record(0.0)
    window.record(0.1)
    assert window.ready_at(0.5) == 1.0
    assert telegram.is_group("-1001") and telegram.is_group("@chan") and not telegram.is_group("42")


async def test_pacing_wait_is_no_attempt_and_a_429_blocks() -> None:
    outcomes: list = []
    waits = [0.05, 0.0, 0.0]
    blocked: list[float] = []
    calls = {"n": 0}

    async def pace() -> float:
        return waits.pop(0) if waits else 0.0

    async def send(channel: object, text: str) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            raise DeliveryError(
                "telegram 429: Too Many Requests", permanent=False, retry_after=0.05, throttled=True
            )

    s = sender(send, outcomes, RetryPolicy(max_attempts=1, base=0.01, cap=0.01), pace=pace)

    async def block(seconds: float) -> None:
        blocked.append(seconds)

    s._block = block
    s.put(item(1))
    await wait_for(lambda: outcomes, timeout=10)
    await s.stop()
    # With max_attempts=1 a counted failure would have dead-lettered it: a 429 is waiting.
    assert outcomes == [("sent", ["e1"], None)] and blocked == [0.05]


async def test_a_send_that_asks_for_a_wait_holds_the_destination() -> None:
    # Discord answers a message with X-RateLimit-Remaining: 0: sent, and the destination is
    # held (for every alerter, through block) for the X-RateLimit-Reset-After it gave.
    outcomes: list = []
    blocked: list[float] = []
    holds = [0.25, None, 0.0]

    async def send(channel: object, text: str) -> float | None:
        return holds.pop(0)

    async def block(seconds: float) -> None:
        # The hold is in place before the outcome is recorded.
        assert len(outcomes) == len(blocked)
        blocked.append(seconds)

    s = sender(send, outcomes)
    s._block = block
    for n in range(3):
        s.put(item(n))
        await wait_for(lambda n=n: len(outcomes) > n, timeout=10)
    await s.stop()
    assert outcomes == [("sent", [f"e{n}"], None) for n in range(3)]
    assert blocked == [0.25]


@pytest.mark.parametrize("count", [2, 50, 400])
def test_compose_fits_and_names_every_monitor(count: int) -> None:
    events = [event(n) for n in range(count)]
    covered = 0
    while covered < count:
        text, n = telegram.compose(events[covered:])
        assert len(text) <= telegram.MAX_MESSAGE and n >= 1
        for e in events[covered : covered + n]:
            assert e.monitor_name in text
        covered += n


async def test_a_retry_never_overtakes_an_older_fresh_alert_of_its_monitor() -> None:
    # The recovery failed once and waits to retry; its outage, reclaimed from another alerter
    # only now, is put ahead of it. The outage goes first, then the retry alone.
    sent: list[str] = []
    outcomes: list = []

    async def send(channel: object, text: str) -> None:
        sent.append(text)

    s = sender(send, outcomes)
    up = item(2, "up", monitor_id=7)
    up.attempts = 1
    up.event = Event(**{**up.event.to_dict(), "seq": 2})
    down = item(1, monitor_id=7)
    down.event = Event(**{**down.event.to_dict(), "seq": 1})
    s.put(up)
    s.put(down)
    await wait_for(lambda: len(outcomes) >= 2, timeout=10)
    await s.stop()
    assert [ids for _, ids, _ in outcomes] == [["e1"], ["e2"]]
    assert "DOWN" in sent[0] and "UP" in sent[1]


@pytest.mark.parametrize(
    ("given", "bounded"),
    [(None, None), (2.5, 2.5), (-1.0, 0.0), (1e300, 3600.0), (float("inf"), 3600.0), (float("nan"), None)],
)
def test_a_destinations_wait_is_bounded(given: float | None, bounded: float | None) -> None:
    # A Retry-After of "inf" (or Discord's retry_after: Infinity) once broke the pacer's block.
    assert bounded_wait(given) == bounded
