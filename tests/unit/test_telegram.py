"""Telegram channel: pure rendering, and the classification of send failures."""

import re
from datetime import UTC, datetime

import aiohttp
import pytest
from aioresponses import aioresponses
from pydantic import SecretStr

from monitor import channels
from monitor.channels import telegram
from monitor.channels.base import DeliveryError
from monitor.events import Event

TOKEN = "123456:SECRET-token"
CONFIG = telegram.TelegramConfig(SecretStr(TOKEN), "http://telegram.test")
SEND = re.compile(r"^http://telegram\.test/bot.*/sendMessage$")


def event(kind: str = "down", **overrides: object) -> Event:
    data = {
        "event_id": "e1",
        "kind": kind,
        "monitor_id": 7,
        "monitor_name": "<shop> & co",
        "monitor_url": "https://shop.example/?a=1&b=<2>",
        "telegram_chat_id": "42",
        "incident_id": 1,
        "at": "2026-01-01T10:00:00Z",
        "started_at": "2026-01-01T10:00:00Z",
        "ended_at": "2026-01-01T11:02:03Z" if kind == "up" else None,
        "duration_seconds": 3723.0 if kind == "up" else None,
        "cause": {"status_code": 503, "error": "unexpected status 503", "latency_ms": 12.0},
    }
    data.update(overrides)
    return Event(**data)  # type: ignore[arg-type]


def test_down_message_escapes_and_names_cause() -> None:
    text = telegram.render(event())
    assert "&lt;shop&gt; &amp; co" in text and "<shop>" not in text
    assert "unexpected status 503" in text and "DOWN" in text and "2026-01-01 10:00:00 UTC" in text


def test_recovery_message_says_how_long() -> None:
    assert "1h 2m 3s" in telegram.render(event("up"))


def test_long_names_stay_within_limit() -> None:
    text = telegram.render(event(monitor_name="x" * 5000, monitor_url="https://e.example/" + "&" * 3000))
    assert len(text) <= telegram.MAX_MESSAGE


@pytest.mark.parametrize(
    ("status", "body", "permanent", "retry_after"),
    [
        (
            429,
            {"ok": False, "description": "Too Many Requests", "parameters": {"retry_after": 2}},
            False,
            2.0,
        ),
        (500, {"ok": False, "description": "Internal"}, False, None),
        (400, {"ok": False, "description": "Bad Request: chat not found"}, True, None),
        (403, {"ok": False, "description": "Forbidden: bot was blocked by the user"}, True, None),
        (401, {"ok": False, "description": "Unauthorized"}, True, None),
        # A group upgraded to a supergroup: not permanent, the chat moved (DestinationMoved).
        (
            400,
            {
                "ok": False,
                "description": "Bad Request: group chat was upgraded to a supergroup chat",
                "parameters": {"migrate_to_chat_id": -1001234},
            },
            False,
            None,
        ),
    ],
)
async def test_send_failures_are_classified(
    status: int, body: dict, permanent: bool, retry_after: float
) -> None:
    with aioresponses() as mocked:
        mocked.post(SEND, status=status, payload=body)
        async with aiohttp.ClientSession() as session:
            with pytest.raises(DeliveryError) as info:
                await telegram.send(session, CONFIG, "42", "hi")
    assert info.value.permanent is permanent
    assert info.value.retry_after == retry_after
    assert TOKEN not in str(info.value)
    moved = body.get("parameters", {}).get("migrate_to_chat_id")
    assert getattr(info.value, "moved_to", None) == (str(moved) if moved else None)


async def test_send_ok() -> None:
    with aioresponses() as mocked:
        mocked.post(SEND, status=200, payload={"ok": True, "result": {"message_id": 1}})
        async with aiohttp.ClientSession() as session:
            await telegram.send(session, CONFIG, "42", "hi")
        (call,) = next(iter(mocked.requests.values()))
    assert call.kwargs["json"]["parse_mode"] == "HTML"


async def test_network_error_is_transient_and_hides_token() -> None:
    with aioresponses() as mocked:
        mocked.post(SEND, exception=aiohttp.ClientConnectionError("boom " + TOKEN))
        async with aiohttp.ClientSession() as session:
            with pytest.raises(DeliveryError) as info:
                await telegram.send(session, CONFIG, "42", "hi")
    assert not info.value.permanent and TOKEN not in str(info.value)


NOW = datetime(2026, 1, 3, 12, 0, tzinfo=UTC)  # two days after event()'s times
HOUR = 3600.0


@pytest.mark.parametrize(
    ("name", "events", "covered", "want", "absent"),
    [
        (
            "fresh alerts are sent as ever",
            [event(at="2026-01-03T11:59:00Z")],
            1,
            ["is DOWN"],
            ["older than"],
        ),
        (
            "one old alert is a summary: a DOWN from days ago must not read as news",
            [event()],
            1,
            ["🕓 1 alerts older than 1h", "&lt;shop&gt; &amp; co</b>: 1 down, 0 up; 🔴 last DOWN since"],
            ["is DOWN"],
        ),
        (
            "many old alerts of several monitors are one summary, each monitor's end said",
            [
                event(),
                event("up", at="2026-01-01T11:02:03Z"),
                event(monitor_id=8, monitor_name="api", at="2026-01-02T08:00:00Z"),
            ],
            3,
            [
                "🕓 3 alerts older than 1h",
                "(2026-01-01 10:00:00 UTC to 2026-01-02 08:00:00 UTC)",
                "co</b>: 1 down, 1 up; 🟢 last UP at 2026-01-01 11:02:03 UTC",
                "<b>api</b>: 1 down, 0 up; 🔴 last DOWN since",
            ],
            [],
        ),
        (
            "the old ones go first, alone; the fresh ones follow as usual",
            [event(), event(monitor_id=8, at="2026-01-03T11:59:00Z")],
            1,
            ["🕓 1 alerts older than 1h"],
            [],
        ),
    ],
)
def test_old_alerts_are_one_summary(
    name: str, events: list[Event], covered: int, want: list[str], absent: list[str]
) -> None:
    text, count = telegram.compose(events, max_age=HOUR, now=NOW)
    assert count == covered, name
    for part in want:
        assert part in text, (name, part, text)
    for part in absent:
        assert part not in text, (name, part, text)


def test_the_operators_chat_is_named_by_the_registry_like_a_stored_channel() -> None:
    """The scheduler's notices to the operator's chat and an alert to a stored channel naming
    that chat reach one destination, named in one place (the kind's ``destination``)."""
    row = {"id": 5, "kind": "telegram", "name": "On call", "config": {"chat_id": "-100123"}}
    stored = channels.carried(row)
    assert stored == {"id": 5, "kind": "telegram", "name": "On call", "chat_id": "-100123"}
    operator = telegram.operator_channel("-100123")
    assert channels.destination(operator) == channels.destination(stored) == "telegram:-100123"
    assert operator["id"] == 0
