"""ntfy channel: settings, rendering (one event, several, old ones), and ntfy's answers."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from monitor.channels import REGISTRY, ntfy
from monitor.channels.base import DeliveryError, Reply, SendContext
from monitor.events import Event

URL = "https://ntfy.example/alerts-Ops_1"
NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def event(kind: str = "down", **overrides: Any) -> Event:
    data: dict[str, Any] = {
        "event_id": "e1",
        "kind": kind,
        "monitor_id": 7,
        "monitor_name": "**Shop** <b>[x](https://evil.example)</b> ✓",
        "monitor_url": "https://shop.example/?a=1&b=<2>",
        "telegram_chat_id": None,
        "incident_id": 11,
        "at": "2026-01-01T11:59:00Z",
        "started_at": "2026-01-01T10:00:00Z",
        "ended_at": "2026-01-01T11:02:03Z" if kind == "up" else None,
        "duration_seconds": 3723.0 if kind == "up" else None,
        "cause": {"status_code": 503, "error": "unexpected status 503", "latency_ms": 12.5},
        "seq": 4,
    }
    if kind == "test":
        data.update(monitor_id=None, monitor_url=None, incident_id=0, started_at=None, cause={}, seq=None)
    data.update(overrides)
    return Event(**data)


# -- settings ------------------------------------------------------------------------------


def settings(**config: Any) -> ntfy.NtfySettings:
    return ntfy.NtfySettings.model_validate({"url": URL, **config})


@pytest.mark.parametrize(
    ("config", "problem"),
    [
        ({"url": "ftp://ntfy.example/t"}, "scheme"),
        ({"url": "https://u:p@ntfy.example/t"}, "credentials"),
        ({"url": "https://ntfy.example/"}, "topic"),
        ({"url": "https://ntfy.example"}, "topic"),
        ({"url": "https://ntfy.example/a/"}, "topic"),
        ({"url": "https://ntfy.example/bad.topic"}, "topic"),
        ({"url": "https://ntfy.example/" + "t" * 65}, "topic"),
        ({"url": "https://ntfy.example/t?auth=abc"}, "query"),
        ({"token": "tk with space"}, "visible ASCII"),
        ({"token": ""}, "visible ASCII"),
        ({"priority_down": 0}, "greater than or equal to 1"),
        ({"priority_up": 6}, "less than or equal to 5"),
        ({"priority_up": "loud"}, "valid integer"),
        ({"priority_down": True}, "not true or false"),
        ({"click": "x"}, "Extra inputs"),
    ],
)
def test_settings_refuse(config: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValidationError) as caught:
        settings(**config)
    assert problem in str(caught.value)


def test_settings_defaults_names_and_normalising() -> None:
    got = settings()
    assert (got.priority_down, got.priority_up, got.token) == (5, 3, None)
    named = settings(
        url="HTTPS://NTFY.Example./sub/mytopic", priority_down="high", priority_up="min", token="tk_1"
    )
    assert named.url == "https://ntfy.example/sub/mytopic"
    assert (named.priority_down, named.priority_up) == (4, 1)
    assert ntfy.split_topic_url(named.url) == ("https://ntfy.example/sub/", "mytopic")
    assert ntfy.split_topic_url("https://ntfy.sh/abc") == ("https://ntfy.sh/", "abc")


def test_kind_declares_secrets_and_limits() -> None:
    kind = REGISTRY["ntfy"]
    assert kind is ntfy.KIND and kind.secrets == {"url", "token"}
    first, second = kind.limits("ntfy:9")
    assert (first.key, first.count, first.per) == ("ntfy:9", 60, 300.0)
    assert (second.key, second.count, second.per) == ("ntfy:9:second", 1, 1.0)
    # Never more than ntfy.sh's visitor bucket (burst 60, one more every 5 s) in any window.
    assert first.count <= 60 + first.per / 5


# -- rendering -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "level", "title", "parts", "tags", "click"),
    [
        (
            "down",
            "down",
            "**Shop** <b>[x](https://evil.example)</b> ✓ is DOWN",
            [
                "https://shop.example/?a=1&b=<2>",
                "Cause: unexpected status 503",
                "Since: 2026-01-01 10:00:00 UTC",
            ],
            ("rotating_light",),
            "https://shop.example/?a=1&b=<2>",
        ),
        (
            "up",
            "up",
            "**Shop** <b>[x](https://evil.example)</b> ✓ is UP again",
            ["Outage lasted 1h 2m 3s (since 2026-01-01 10:00:00 UTC)"],
            ("white_check_mark",),
            "https://shop.example/?a=1&b=<2>",
        ),
        (
            "test",
            "test",
            "Test message from monitor",
            ["Channel **Shop** <b>[x](https://evil.example)</b> ✓ works."],
            ("bell",),
            None,
        ),
    ],
)
def test_one_event(
    kind: str, level: str, title: str, parts: list[str], tags: tuple[str, ...], click: str | None
) -> None:
    message, covered = ntfy.compose([event(kind)], max_age=3600, now=NOW)
    assert covered == 1
    assert (message.level, message.title, message.tags, message.click) == (level, title, tags, click)
    for part in parts:
        assert part in message.message


def test_click_only_for_web_urls() -> None:
    message, _ = ntfy.compose([event(monitor_url="javascript:alert(1)")])
    assert message.click is None


def test_several_events_one_message_with_a_count() -> None:
    events = [event("down", event_id="a"), event("up", event_id="b", monitor_name="api"), event("test")]
    message, covered = ntfy.compose(events, max_age=3600, now=NOW)
    assert covered == 3
    assert message.title == "3 alerts: 1 down, 1 up" and message.level == "down"
    lines = message.message.split("\n")
    assert lines[0].startswith("🔴 **Shop**") and "DOWN: unexpected status 503" in lines[0]
    assert lines[1] == "🟢 api UP after 1h 2m 3s (https://shop.example/?a=1&b=<2>)"
    assert lines[2].startswith("✅ test message")
    ups, _ = ntfy.compose([event("up"), event("up", event_id="x")])
    assert ups.level == "up" and ups.tags == ("white_check_mark",)


def test_many_events_fill_messages_within_4096_bytes() -> None:
    events = [
        event(
            event_id=str(i),
            monitor_name=f"név-{i}-" + "é" * 110,
            monitor_url="https://x.example/" + "ü" * 150,
        )
        for i in range(100)
    ]
    covered_total = 0
    while covered_total < len(events):
        message, covered = ntfy.compose(events[covered_total:])
        assert 1 <= covered
        assert len(message.message.encode()) <= ntfy.MAX_MESSAGE_BYTES
        assert len(message.title) <= ntfy.MAX_TITLE
        covered_total += covered
    assert covered_total == 100
    first, covered = ntfy.compose(events)
    assert 2 <= covered < 100 and first.message.count("\n") == covered - 1


def test_long_single_event_stays_within_limits() -> None:
    message, covered = ntfy.compose(
        [
            event(
                monitor_name="n" * 5000,
                monitor_url="https://e.example/" + "€" * 3000,
                cause={"error": "e" * 9000},
            )
        ]
    )
    assert covered == 1
    assert len(message.message.encode()) <= ntfy.MAX_MESSAGE_BYTES and message.message.endswith("…")
    assert len(message.title) <= ntfy.MAX_TITLE


def test_old_events_are_one_quiet_summary() -> None:
    old = [
        event("down", event_id="1", at="2026-01-01T08:00:00Z"),
        event("up", event_id="2", at="2026-01-01T08:05:00Z"),
        event("down", event_id="3", monitor_id=8, monitor_name="api", at="2026-01-01T09:00:00Z"),
    ]
    fresh = event("down", event_id="4")
    message, covered = ntfy.compose([*old, fresh], max_age=3600, now=NOW)
    assert covered == 3 and message.level == "summary" and message.tags == ("hourglass",)
    assert message.title == "3 alerts older than 1h"
    assert "1 down, 1 up; last UP at 2026-01-01 08:05:00 UTC" in message.message
    assert "api: 1 down, 0 up; last DOWN since 2026-01-01 10:00:00 UTC" in message.message
    nxt, covered = ntfy.compose([fresh], max_age=3600, now=NOW)
    assert covered == 1 and nxt.level == "down"


@pytest.mark.parametrize(("level", "priority"), [("down", 4), ("test", 4), ("up", 2), ("summary", 2)])
def test_priority_by_level(level: str, priority: int) -> None:
    channel = {"url": URL, "priority_down": 4, "priority_up": 2}
    message = ntfy.NtfyMessage(level, "t", "m", ("tag",), "https://x.example/")
    body = ntfy.publish_body(channel, message)
    assert body == {
        "topic": "alerts-Ops_1",
        "title": "t",
        "message": "m",
        "priority": priority,
        "tags": ["tag"],
        "click": "https://x.example/",
    }


def test_priority_defaults_when_the_channel_predates_them() -> None:
    message = ntfy.NtfyMessage("down", "t", "m", ())
    assert ntfy.publish_body({"url": URL}, message)["priority"] == 5
    assert "click" not in ntfy.publish_body({"url": URL}, message)


# -- answers -------------------------------------------------------------------------------


def reply(status: int, body: Any = None, **headers: str) -> Reply:
    raw = json.dumps(body).encode() if body is not None else b""
    return Reply(status, {k.replace("_", "-").lower(): (v,) for k, v in headers.items()}, raw)


def ntfy_error(code: int, status: int, error: str) -> dict[str, Any]:
    return {"code": code, "http": status, "error": error, "link": "https://ntfy.sh/docs/publish/#limitations"}


@pytest.mark.parametrize(
    ("answer", "outcome", "wait"),
    [
        (reply(200, {"id": "abc", "event": "message", "topic": "t"}), "sent", None),
        (reply(429, ntfy_error(42901, 429, "limit reached: too many requests")), "throttled", 5.0),
        (
            reply(429, ntfy_error(42908, 429, "limit reached: daily message quota reached")),
            "throttled",
            600.0,
        ),
        (reply(429, ntfy_error(42909, 429, "limit reached: too many auth failures")), "throttled", 60.0),
        (reply(429, ntfy_error(42901, 429, "x"), retry_after="9"), "throttled", 9.0),
        (reply(429), "throttled", 5.0),
        (reply(401, ntfy_error(40101, 401, "unauthorized")), "permanent", None),
        (reply(403, ntfy_error(40301, 403, "forbidden")), "permanent", None),
        (reply(400, ntfy_error(40007, 400, "invalid priority parameter")), "permanent", None),
        (reply(400, ntfy_error(40009, 400, "invalid request: topic invalid")), "permanent", None),
        (reply(404, ntfy_error(40401, 404, "page not found")), "permanent", None),
        (reply(413, ntfy_error(41303, 413, "JSON body too large")), "permanent", None),
        (reply(500, ntfy_error(50001, 500, "internal server error")), "retry", None),
        (reply(502), "retry", None),
        (reply(503, retry_after="20"), "retry", 20.0),
        (reply(507, ntfy_error(50701, 507, "cannot publish to UnifiedPush topic")), "retry", None),
    ],
)
def test_answers(answer: Reply, outcome: str, wait: float | None) -> None:
    if outcome == "sent":
        ntfy.judge(answer)
        return
    with pytest.raises(DeliveryError) as caught:
        ntfy.judge(answer)
    error = caught.value
    assert (error.permanent, error.throttled) == (outcome == "permanent", outcome == "throttled")
    assert error.retry_after == wait
    assert str(error).startswith(f"ntfy {answer.status}")
    body = answer.json()
    if isinstance(body, dict):
        assert str(body["code"]) in str(error)


@dataclass
class FakeWeb:
    replies: list[Reply]
    posts: list[tuple[str, str, bytes, dict[str, str]]] = field(default_factory=list)

    async def post(self, what: str, url: str, body: bytes, headers: Mapping[str, str]) -> Reply:
        self.posts.append((what, url, body, dict(headers)))
        return self.replies.pop(0)


async def test_send_publishes_json_to_the_server_root_with_the_token() -> None:
    token = "tk_abcdefghijklmnopqrstuvwxyz123"
    web = FakeWeb([reply(403, ntfy_error(40301, 403, "forbidden")), reply(200, {"id": "x"})])
    ctx = SendContext(http=None, web=web, settings=None)  # type: ignore[arg-type]
    channel = {"id": 2, "kind": "ntfy", "name": "n", "url": URL, "token": token, "priority_down": 5}
    message, _ = ntfy.compose([event()])
    with pytest.raises(DeliveryError) as caught:
        await ntfy.send(ctx, channel, message)
    assert caught.value.permanent
    assert (
        URL not in str(caught.value)
        and "alerts-Ops_1" not in str(caught.value)
        and token not in str(caught.value)
    )
    await ntfy.send(ctx, {**channel, "token": None}, message)
    (what, url, body, headers), (_, _, _, anonymous) = web.posts
    assert what == "ntfy" and url == "https://ntfy.example/"
    assert headers["Authorization"] == f"Bearer {token}" and "Authorization" not in anonymous
    assert headers["Content-Type"] == "application/json"
    published = json.loads(body)
    assert published["topic"] == "alerts-Ops_1" and published["priority"] == 5
    assert published["title"] == "**Shop** <b>[x](https://evil.example)</b> ✓ is DOWN"
    assert "markdown" not in published


# -- the other kinds of events ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "details", "level", "title", "part", "tags", "priority"),
    [
        (
            "remind",
            {"reminder": 2, "reminder_max": None},
            "down",
            "is still DOWN",
            "Reminder 2",
            ("repeat",),
            5,
        ),
        (
            "acknowledged",
            {"acknowledged_by": "Ada", "note": "on it"},
            "info",
            "acknowledged by Ada",
            "Note: on it",
            ("eyes",),
            3,
        ),
        (
            "degraded",
            {"reason": "response time 812 ms above 500 ms"},
            "warn",
            "is DEGRADED",
            "Reason: response time 812 ms above 500 ms",
            ("warning",),
            4,
        ),
        ("degraded_end", {}, "up", "is no longer degraded", "Degraded for ", ("white_check_mark",), 3),
        (
            "flapping",
            {"changes": 7, "window_minutes": 30},
            "warn",
            "is FLAPPING",
            "7 changes in 30 min; alerts paused until it is stable for 30 min",
            ("warning",),
            4,
        ),
        (
            "flapping_end",
            {"status": "down"},
            "down",
            "stopped flapping; now DOWN",
            "https://shop.example/",
            ("rotating_light",),
            5,
        ),
        (
            "maintenance_start",
            {"window": "Nightly", "until": "2026-01-01T13:00:00Z"},
            "info",
            "Maintenance for ",
            "Window: Nightly until 2026-01-01 13:00:00 UTC",
            ("wrench",),
            3,
        ),
        (
            "maintenance_end",
            {"window": "Nightly"},
            "up",
            "Maintenance for ",
            "Window: Nightly",
            ("wrench",),
            3,
        ),
        (
            "connectivity_lost",
            {"reason": "no route"},
            "warn",
            "The checker's network is down",
            "Checks are recorded as unknown",
            ("warning",),
            4,
        ),
        (
            "connectivity_restored",
            {},
            "up",
            "The checker's network is back",
            "Cut off for ",
            ("white_check_mark",),
            3,
        ),
        ("brand_new", {}, "info", ": brand_new", "https://shop.example/", ("information_source",), 3),
    ],
)
def test_other_kinds(
    kind: str,
    details: dict[str, Any],
    level: str,
    title: str,
    part: str,
    tags: tuple[str, ...],
    priority: int,
) -> None:
    message, covered = ntfy.compose([event(kind, details=details)], max_age=3600, now=NOW)
    assert covered == 1
    assert (message.level, message.tags) == (level, tags)
    assert title in message.title and part in message.message
    assert ntfy.publish_body({"url": URL}, message)["priority"] == priority


@pytest.mark.parametrize(
    ("down", "up", "levels"),
    [(5, 3, {"warn": 4, "info": 3}), (4, 2, {"warn": 3, "info": 2}), (2, 3, {"warn": 3, "info": 3})],
)
def test_a_warning_is_between_the_channels_priorities(down: int, up: int, levels: dict[str, int]) -> None:
    channel = {"url": URL, "priority_down": down, "priority_up": up}
    for level, priority in levels.items():
        assert ntfy.priority(channel, level) == priority


def test_several_kinds_in_one_message_take_the_most_urgent_level() -> None:
    events = [
        event("degraded", event_id="a", details={"reason": "slow"}),
        event("maintenance_start", event_id="b", monitor_id=8, details={"window": "W", "until": None}),
        event("up", event_id="c", monitor_id=9),
    ]
    message, covered = ntfy.compose(events, max_age=3600, now=NOW)
    assert covered == 3 and message.level == "warn" and message.tags == ("warning",)
    assert message.title == "3 alerts: 0 down, 1 up, 1 warning, 1 notice"
    assert message.message.split("\n")[0].startswith("🟡 **Shop**")
