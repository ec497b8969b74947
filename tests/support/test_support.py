"""The test helpers themselves: the fake Telegram, the target and wait_for do what they say.

Fault tests lean on these fakes; a fake that answered wrongly would make them prove nothing.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from .alerts import said
from .fake_telegram import FakeTelegram
from .locations import via
from .procs import free_port
from .status_target import status
from .target import TargetServer
from .waiting import wait_for


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(trust_env=False) as session:
        yield session


async def send(
    http: aiohttp.ClientSession, fake: FakeTelegram, chat_id: Any, text: str = "hi", token: str | None = None
) -> tuple[int, dict[str, Any]]:
    url = f"{fake.base_url}/bot{token or fake.token}/sendMessage"
    async with http.post(url, json={"chat_id": chat_id, "text": text, "parse_mode": "HTML"}) as resp:
        return resp.status, await resp.json()


# -- fake Telegram ---------------------------------------------------------------------------


async def test_fake_telegram_records_and_answers_like_the_bot_api(http: aiohttp.ClientSession) -> None:
    async with FakeTelegram() as fake:
        status, body = await send(http, fake, -100123, "<b>down</b>")
        assert status == 200 and body["ok"] is True
        assert body["result"]["chat"]["id"] == -100123 and body["result"]["message_id"] == 1
        [message] = fake.messages
        assert (message.chat_id, message.text, message.parse_mode, message.token_ok) == (
            "-100123",
            "<b>down</b>",
            "HTML",
            True,
        )
        assert fake.messages_to("-100123") == fake.messages_to(-100123) == [message]

        status, body = await send(http, fake, 5, token="999:wrong")
        assert (status, body["error_code"], body["description"]) == (401, 401, "Unauthorized")
        assert fake.requests[-1].token_ok is False
        assert len(fake.messages) == 1

        # Form-encoded parameters, as some clients send them.
        async with http.post(
            f"{fake.base_url}/bot{fake.token}/sendMessage", data={"chat_id": "7", "text": "x"}
        ) as r:
            assert r.status == 200
        assert fake.messages[-1].chat_id == "7"


async def test_fake_telegram_scripted_failures(http: aiohttp.ClientSession) -> None:
    async with FakeTelegram() as fake:
        fake.fail_next(429, times=2, retry_after=3)
        fake.fail_next(403, chat_id=9)
        for _ in range(2):
            status, body = await send(http, fake, 1)
            assert status == 429 and body["parameters"] == {"retry_after": 3}, body
        assert (await send(http, fake, 1))[0] == 200
        # The chat-specific script waits for its chat.
        assert (await send(http, fake, 9))[1]["description"] == "Forbidden: bot was blocked by the user"
        assert (await send(http, fake, 9))[0] == 200

        fake.reject_chat(13)
        assert [(await send(http, fake, 13))[0] for _ in range(3)] == [400, 400, 400]
        fake.reset()
        assert (await send(http, fake, 13))[0] == 200
        assert [m.chat_id for m in fake.messages] == ["1", "9", "13"]


async def test_fake_telegram_holds_requests_until_released(http: aiohttp.ClientSession) -> None:
    async with FakeTelegram() as fake:
        fake.hold()
        pending = asyncio.ensure_future(send(http, fake, 1))
        await wait_for(lambda: fake.held, timeout=5)
        assert not pending.done() and fake.messages == []
        fake.release()
        assert (await pending)[0] == 200
        assert len(fake.messages) == 1 and fake.held == []


async def test_fake_telegram_enforces_flood_limits(http: aiohttp.ClientSession) -> None:
    async with FakeTelegram(enforce_rate_limits=True) as fake:
        assert (await send(http, fake, 1))[0] == 200
        status, body = await send(http, fake, 1)
        assert status == 429 and body["parameters"]["retry_after"] == 1, body
        assert (await send(http, fake, 2))[0] == 200  # another chat is not held back

        # Groups (negative ids): 20 a minute, whatever the spacing.
        fake.per_chat_interval = 0.0
        answers = [(await send(http, fake, -5))[0] for _ in range(21)]
        assert answers == [200] * 20 + [429]
        assert 1 <= fake.requests[-1].response["parameters"]["retry_after"] <= 60  # type: ignore[index]


async def test_fake_telegram_wait_messages_times_out_with_what_it_saw() -> None:
    async with FakeTelegram() as fake:
        with pytest.raises(AssertionError, match="no requests"):
            await fake.wait_messages(1, timeout=0.2)


# -- target ----------------------------------------------------------------------------------


async def test_target_status_delay_and_counts(http: aiohttp.ClientSession) -> None:
    async with TargetServer() as target:
        async with http.get(target.url("/a")) as resp:
            assert resp.status == 200
        target.set(503)
        target.set(204, path="/b")
        async with http.get(target.url("/a")) as resp:
            assert resp.status == 503
        async with http.get(target.url("b")) as resp:
            assert resp.status == 204
        assert (target.received(), target.received("/a"), target.completed("/b")) == (3, 2, 1)

        target.set(200, delay=0.5, path="/slow")
        slow = asyncio.ensure_future(http.get(target.url("/slow")))
        await wait_for(lambda: target.in_flight("/slow"), timeout=5)
        assert target.completed("/slow") == 0
        async with await slow as resp:
            assert resp.status == 200
        [request] = target.for_path("/slow")
        assert request.completed_at is not None and request.completed_at - request.received_at >= 0.45
        assert target.in_flight() == []


# -- wait_for --------------------------------------------------------------------------------


async def test_wait_for_returns_the_truthy_value_of_sync_or_async_conditions() -> None:
    started = time.monotonic()
    deadline = started + 0.2

    async def later() -> str | None:
        return "done" if time.monotonic() >= deadline else None

    assert await wait_for(later, timeout=30) == "done"
    assert await wait_for(lambda: [1], timeout=30) == [1]
    assert time.monotonic() - started < 10  # at once, not at a deadline


async def test_wait_for_fails_with_the_message_and_last_value() -> None:
    with pytest.raises(AssertionError, match=r"the thing: not true after 0.1s \(last value: 0\)"):
        await wait_for(lambda: 0, timeout=0.1, message="the thing")


async def test_wait_for_retries_errors_but_not_assertions() -> None:
    calls = 0

    def flaky() -> bool:
        nonlocal calls
        calls += 1
        if calls < 3:
            raise ConnectionRefusedError("not yet")
        return True

    assert await wait_for(flaky, timeout=5) is True
    with pytest.raises(AssertionError, match="last error: ZeroDivisionError"):
        await wait_for(lambda: 1 / 0, timeout=0.1, retry_on=(ZeroDivisionError,))

    def asserts() -> bool:
        raise AssertionError("404, will not get better")

    started = time.monotonic()
    with pytest.raises(AssertionError, match="will not get better"):
        await wait_for(asserts, timeout=30)
    with pytest.raises(ValueError):
        await wait_for(lambda: int("x"), timeout=30, retry_on=(OSError,))
    assert time.monotonic() - started < 10  # at once, not at a deadline


def test_free_port_is_bindable() -> None:
    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("🔴 <b>shop &amp; co</b> is DOWN\nhttps://x/\nCause: HTTP 500", [("shop & co", "DOWN")]),
        ("🔔 <b>shop</b> is still DOWN\nhttps://x/", [("shop", "REMIND")]),
        ("🟢 <b>shop</b> is UP again\nRecovered", [("shop", "UP")]),
        ("👀 <b>shop</b> acknowledged by Ada\nNote: still DOWN", [("shop", "ACKNOWLEDGED")]),
        ("🟡 <b>shop</b> is DEGRADED\nslow", [("shop", "DEGRADED")]),
        ("🟢 <b>shop</b> is no longer degraded", [("shop", "DEGRADED_END")]),
        ("🟠 <b>shop</b> is FLAPPING", [("shop", "FLAPPING")]),
        ("🟢 <b>shop</b> stopped flapping; now UP", [("shop", "STABLE:UP")]),
        ("🔧 Maintenance for <b>shop</b>\nWindow: w", [("shop", "MAINTENANCE")]),
        ("🔧 Maintenance for <b>shop</b> ended\nWindow: w", [("shop", "MAINTENANCE_END")]),
        ("⚠️ The checker's network is down\nReason: x", [("", "NETWORK_DOWN")]),
        ("✅ The checker's network is back\nCut off for 1m", [("", "NETWORK_BACK")]),
        (
            "⚠️ 3 alerts: 2 down, 1 up\n🔴 <b>a</b> DOWN: HTTP 500, since 10:00 (https://a/)\n"
            "🟢 <b>b</b> UP after 5m (https://b/)\n🔔 <b>c</b> still DOWN: HTTP 500, since 9:00 (https://c/)",
            [("a", "DOWN"), ("b", "UP"), ("c", "REMIND")],
        ),
    ],
)
def test_said_reads_every_kind_of_alert(text: str, found: list[tuple[str, str]]) -> None:
    assert said(text) == found


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql://postgres@127.0.0.1:55432/monitor_x", "postgresql://postgres@10.0.0.1:7/monitor_x"),
        (
            "postgresql://u:p%40ss@127.0.0.1:5432/db?sslmode=disable",
            "postgresql://u:p%40ss@10.0.0.1:7/db?sslmode=disable",
        ),
        ("redis://127.0.0.1:56379/13", "redis://10.0.0.1:7/13"),
        ("redis://:secret@localhost:6379/0", "redis://:secret@10.0.0.1:7/0"),
    ],
)
def test_a_location_reaches_a_service_through_its_proxy_with_the_same_database(
    url: str, expected: str
) -> None:
    assert via(url, "10.0.0.1", 7) == expected


@pytest.mark.parametrize(
    ("written", "answered"),
    [
        (None, 200),
        ("500\n", 500),
        ("200", 200),
        ("503 ", 503),
        ("", 200),
        ("oops", 200),
        ("99", 200),
        ("600", 200),
    ],
)
def test_the_namespaced_target_answers_the_status_in_its_file(
    tmp_path: Path, written: str | None, answered: int
) -> None:
    path = tmp_path / "status"
    if written is not None:
        path.write_text(written)
    assert status(path) == answered
