"""Per-chat sending: order per monitor, batching, retries, rate limits (no network)."""

import asyncio
import time

import pytest
from support import wait_for

from monitor.alerter.channels import telegram
from monitor.alerter.channels.base import DeliveryError
from monitor.alerter.dispatch import ChatSender, Item, RetryPolicy
from monitor.alerter.ratelimit import BotLimiter, ChatLimiter, SlidingWindow, is_group
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


def sender(send, outcomes: list, retry: RetryPolicy | None = None) -> ChatSender:  # type: ignore[no-untyped-def]
    async def on_outcome(items: list[Item], outcome: str, error: str | None) -> None:
        outcomes.append((outcome, [i.event.event_id for i in items], error))

    return ChatSender(
        "42",
        send=send,
        compose=telegram.compose,
        on_outcome=on_outcome,
        bot_limiter=BotLimiter(),
        retry=retry or RetryPolicy(max_attempts=5, base=0.01, cap=0.02),
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

    async def send(chat: str, text: str) -> None:
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

    async def send(chat: str, text: str) -> None:
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

    async def send(chat: str, text: str) -> None:
        raise DeliveryError("telegram unreachable", permanent=False)

    s = sender(send, outcomes, RetryPolicy(max_attempts=3, base=0.01, cap=0.01))
    s._limiter = ChatLimiter("42", clock=lambda: 0.0)  # no pacing in this test
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
    now = [0.0]
    chat = ChatLimiter("42", clock=lambda: now[0])
    chat.record()
    assert chat.ready_at() > 1.0
    group = ChatLimiter("-100123", clock=lambda: now[0])
    for second in range(20):
        now[0] = second * 1.1
        assert group.ready_at() <= now[0]
        group.record()
    now[0] = 30.0
    assert group.ready_at() >= 61.0  # the 21st message of the minute waits
    window = SlidingWindow(2, 1.0)
    window.record(0.0)
    window.record(0.1)
    assert window.ready_at(0.5) == 1.0
    assert is_group("-1001") and is_group("@chan") and not is_group("42")


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
