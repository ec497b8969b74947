"""Discord: settings, the embed renderer (escaping, Discord's limits, several alerts in one
message) and the classification of Discord's answers and rate-limit headers, without the
network."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, cast

import pytest
from pydantic import SecretStr, ValidationError
from support.fake_channels import _discord_errors

from monitor.channels import REGISTRY, discord
from monitor.channels.base import Bucket, DeliveryError, Reply, SendContext, config_values
from monitor.events import Event

URL = "https://discord.com/api/webhooks/123456789012345678/XXXXsecretXXXX-token_abc"
HOSTILE = "@everyone <@&123> **[click](https://evil.example)** `x` # h"


def event(kind: str = "down", n: int = 7, **overrides: Any) -> Event:
    data: dict[str, Any] = {
        "event_id": f"e{n}",
        "kind": kind,
        "monitor_id": n,
        "monitor_name": f"site {n}",
        "monitor_url": f"https://s{n}.example/?a=1&b=2",
        "telegram_chat_id": None,
        "incident_id": 100 + n,
        "at": "2026-01-01T11:02:03Z" if kind == "up" else "2026-01-01T10:00:00Z",
        "started_at": "2026-01-01T10:00:00Z",
        "ended_at": "2026-01-01T11:02:03Z" if kind == "up" else None,
        "duration_seconds": 3723.0 if kind == "up" else None,
        "cause": {"status_code": 503, "error": "unexpected status 503", "latency_ms": 12.0},
    }
    data.update(overrides)
    return Event(**data)


START = "<t:1767261600:f> (<t:1767261600:R>)"  # 2026-01-01T10:00:00Z
END = "<t:1767265323:f> (<t:1767265323:R>)"  # 2026-01-01T11:02:03Z


def assert_fits(payload: Mapping[str, Any]) -> None:
    """Within Discord's limits, as the fake checks them (and a little more here)."""
    assert _discord_errors(dict(payload)) == {}, payload
    assert payload["allowed_mentions"] == {"parse": []}
    embeds = payload["embeds"]
    assert 1 <= len(embeds) <= discord.MAX_EMBEDS
    assert sum(discord.embed_size(e) for e in embeds) <= discord.MAX_TOTAL
    for item in embeds:
        assert 1 <= len(item["title"]) <= discord.MAX_TITLE
        assert len(item.get("description", "")) <= discord.MAX_DESCRIPTION
        assert all(1 <= len(f["value"]) <= discord.MAX_FIELD_VALUE for f in item.get("fields", []))
        assert item.get("url", "https://").startswith(("http://", "https://"))


def test_registered_with_its_secret() -> None:
    assert REGISTRY["discord"] is discord.KIND and discord.KIND.secrets == {"url"}


# -- settings ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ({"url": URL}, {"url": URL, "username": None}),
        ({"url": URL, "username": " Uptime "}, {"url": URL, "username": "Uptime"}),
        (
            {"url": "http://127.0.0.1:9/api/webhooks/1/t"},
            {"url": "http://127.0.0.1:9/api/webhooks/1/t", "username": None},
        ),
    ],
)
def test_settings(given: dict[str, Any], stored: dict[str, Any]) -> None:
    settings = discord.DiscordSettings.model_validate(given)
    assert isinstance(settings.url, SecretStr) and "XXXXsecretXXXX" not in repr(settings)
    assert config_values(settings) == stored


@pytest.mark.parametrize(
    ("given", "reason"),
    [
        ({"url": "ftp://discord.com/api/webhooks/1/XXXXsecretXXXX"}, "scheme"),
        ({"url": "https://u:p@discord.com/api/webhooks/1/XXXXsecretXXXX"}, "credentials"),
        ({"url": URL, "username": ""}, "at least 1 character"),
        ({"url": URL, "username": "   "}, "1 to 80"),
        ({"url": URL, "username": "x" * 81}, "at most 80 characters"),
        ({"url": URL, "username": "My Discord bot"}, "discord"),
        ({"url": URL, "username": "clyde"}, "clyde"),
        ({"url": URL, "avatar": "x"}, "Extra inputs"),
    ],
)
def test_settings_refused(given: dict[str, Any], reason: str) -> None:
    with pytest.raises(ValidationError) as info:
        discord.DiscordSettings.model_validate(given)
    message = info.value.errors(include_url=False)[0]["msg"]
    assert reason in message and "XXXXsecretXXXX" not in message


# -- rendering -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "want"),
    [
        (
            "down",
            {
                "title": "🔴 site 7 is DOWN",
                "color": discord.RED,
                "description": "**Cause:** unexpected status 503",
                "fields": [{"name": "Since", "value": START, "inline": True}],
                "url": "https://s7.example/?a=1&b=2",
                "footer": {"text": "Monitor #7 · incident #107"},
                "timestamp": "2026-01-01T10:00:00Z",
            },
        ),
        (
            "up",
            {
                "title": "🟢 site 7 is UP again",
                "color": discord.GREEN,
                "description": "Outage lasted **1h 2m 3s**",
                "fields": [
                    {"name": "Since", "value": START, "inline": True},
                    {"name": "Recovered", "value": END, "inline": True},
                ],
                "url": "https://s7.example/?a=1&b=2",
                "footer": {"text": "Monitor #7 · incident #107"},
                "timestamp": "2026-01-01T11:02:03Z",
            },
        ),
        (
            "test",
            {
                "title": "✅ Test message from monitor",
                "description": "Channel **site 7** works.",
                "color": discord.BLURPLE,
            },
        ),
    ],
)
def test_one_event_is_one_embed(kind: str, want: dict[str, Any]) -> None:
    payload, covered = discord.compose([event(kind)])
    assert covered == 1
    assert_fits(payload)
    assert payload == {"embeds": [want], "allowed_mentions": {"parse": []}}


@pytest.mark.parametrize("kind", ["down", "up", "test"])
def test_hostile_names_ping_nobody_and_link_nowhere(kind: str) -> None:
    cause = {"error": "[login here](https://evil.example) <@123> ||spoiler||", "status_code": None}
    payload, _ = discord.compose([event(kind, monitor_name=HOSTILE, cause=cause)])
    assert_fits(payload)
    (item,) = payload["embeds"]
    # Mentions are never parsed (allowed_mentions), and the Markdown is made plain.
    assert payload["allowed_mentions"] == {"parse": []}
    text = item.get("description", "")
    assert not re.search(r"(?<!\\)[<>\[\]()|`]", text), text  # each one after a backslash
    if kind == "down":
        assert "\\[login here\\]\\(https://evil.example\\) \\<@123\\> \\|\\|spoiler\\|\\|" in text
    if kind == "test":
        assert "@everyone \\<@&123\\> \\*\\*\\[click\\]\\(https://evil.example\\)\\*\\*" in text
    else:
        # Titles: one line without links or mentions; their inline styles are made plain.
        assert item["title"].endswith(
            "@everyone <@&123> \\*\\*[click](https://evil.example)\\*\\* \\`x\\` # h"
            + (" is DOWN" if kind == "down" else " is UP again")
        )


def test_escape() -> None:
    assert discord.escape("a*b_c") == "a\\*b\\_c"
    assert discord.escape("****", 5) == "\\*\\*…"  # never a lone backslash at the cut
    assert discord.escape("abcdef", 4) == "abc…"


@pytest.mark.parametrize(
    ("url", "linked"),
    [
        ("https://s.example/a b<c>", "https://s.example/a%20b%3Cc%3E"),
        ("ftp://s.example/f", None),
        ("https://s.example/" + "x" * 3000, None),
    ],
)
def test_monitor_url_links_the_title_only_when_it_is_a_web_url(url: str, linked: str | None) -> None:
    payload, _ = discord.compose([event(monitor_url=url)])
    assert_fits(payload)
    assert payload["embeds"][0].get("url") == linked


@pytest.mark.parametrize(
    "overrides",
    [
        {"monitor_name": "*" * 2000},
        {"monitor_name": "x" * 5000, "cause": {"error": "_" * 9000, "status_code": 500}},
        {"monitor_name": "é🔥" * 400, "cause": {"error": "[" * 9000}},
    ],
)
@pytest.mark.parametrize("kind", ["down", "up", "test"])
def test_long_values_stay_within_discords_limits(overrides: dict[str, Any], kind: str) -> None:
    payload, covered = discord.compose([event(kind, **overrides)])
    assert covered == 1
    assert_fits(payload)
    for item in payload["embeds"]:
        for text in (item["title"], item.get("description", "")):
            assert not text.rstrip("…").endswith("\\") or text.rstrip("…").endswith("\\\\")


def test_events_waiting_together_are_embeds_of_one_message() -> None:
    payload, covered = discord.compose([event("down", 1), event("up", 2), event("test", 3)])
    assert covered == 3
    assert_fits(payload)
    assert payload["content"] == "⚠️ 3 alerts: 1 down, 2 up"
    assert [e["title"] for e in payload["embeds"]] == [
        "🔴 site 1 is DOWN",
        "🟢 site 2 is UP again",
        "✅ Test message from monitor",
    ]


@pytest.mark.parametrize(
    ("count", "cause", "per_message"),
    [
        (25, "unexpected status 503", 10),  # at most 10 embeds a message
        (25, "x" * 2000, 3),  # long causes: 6,000 characters in all
    ],
)
def test_a_backlog_fills_each_message_and_names_everyone(count: int, cause: str, per_message: int) -> None:
    events = [event("down", n, monitor_name=f"m{n:03d}", cause={"error": cause}) for n in range(count)]
    covered, sizes = 0, []
    while covered < count:
        payload, n = discord.compose(events[covered:])
        assert_fits(payload)
        titles = [e["title"] for e in payload["embeds"]]
        assert titles == [f"🔴 m{e.monitor_id:03d} is DOWN" for e in events[covered : covered + n]]
        covered += n
        sizes.append(n)
    assert max(sizes) == per_message and sum(sizes) == count


NOW = datetime(2026, 1, 3, 12, 0, tzinfo=UTC)  # two days after the events' times


@pytest.mark.parametrize(("monitors", "all_named"), [(1, True), (3, True), (500, False)])
def test_old_alerts_are_one_summary_embed(monitors: int, all_named: bool) -> None:
    old = [event(kind, n) for n in range(monitors) for kind in ("down", "up")]
    fresh = event("down", 999, at=NOW.isoformat().replace("+00:00", "Z"))
    payload, covered = discord.compose([*old, fresh], max_age=3600.0, now=NOW)
    assert covered == len(old)
    assert_fits(payload)
    (item,) = payload["embeds"]
    assert item["title"] == f"🕓 {len(old)} alerts older than 1h"
    assert f"**site 0**: 1 down, 1 up; 🟢 last UP at {END}" in item["description"]
    named = sum(f"**site {n}**: 1 down" in item["description"] for n in range(monitors))
    if all_named:
        assert named == monitors
    else:
        assert item["description"].endswith(f"… and {monitors - named} more monitors")


# -- Discord's answers ---------------------------------------------------------------------


def reply(status: int, body: Any = None, headers: dict[str, str] | None = None) -> Reply:
    raw = b"" if body is None else body.encode() if isinstance(body, str) else json.dumps(body).encode()
    return Reply(status, {k.lower(): (v,) for k, v in (headers or {}).items()}, raw)


LIMITED = {"message": "You are being rate limited.", "retry_after": 0.8, "global": False}


@pytest.mark.parametrize(
    ("status", "body", "headers", "outcome", "wait"),
    [
        (204, None, {"X-RateLimit-Remaining": "4", "X-RateLimit-Reset-After": "2.000"}, "sent", None),
        (200, {"id": "1"}, None, "sent", None),
        # The bucket's last request: sent, and the webhook held until it refills.
        (200, {"id": "1"}, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset-After": "1.432"}, "sent", 1.432),
        (204, None, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset-After": "0"}, "sent", None),
        (204, None, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset-After": "soon"}, "sent", None),
        (204, None, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset-After": "1e9"}, "sent", 60.0),
        (429, LIMITED, {"Retry-After": "1", "X-RateLimit-Scope": "user"}, "throttled", 0.8),
        (429, {**LIMITED, "global": True, "retry_after": 12.5}, None, "throttled", 12.5),
        (429, "<html>error code: 1015</html>", {"Retry-After": "30"}, "throttled", 30.0),  # Cloudflare
        (429, None, None, "throttled", 1.0),
        (404, {"message": "Unknown Webhook", "code": 10015}, None, "permanent", None),
        (401, {"message": "Invalid Webhook Token", "code": 50027}, None, "permanent", None),
        (400, {"message": "Invalid Form Body", "code": 50035, "errors": {}}, None, "permanent", None),
        (400, {"message": "Cannot send an empty message", "code": 50006}, None, "permanent", None),
        (403, {"message": "Missing Access", "code": 50001}, None, "permanent", None),
        (500, {"message": "500: Internal Server Error", "code": 0}, None, "retry", None),
        (502, "<html>Bad Gateway</html>", None, "retry", None),
        (503, None, {"Retry-After": "5"}, "retry", 5.0),
    ],
)
def test_answers_are_classified(
    status: int, body: Any, headers: dict[str, str] | None, outcome: str, wait: float | None
) -> None:
    answer = reply(status, body, headers)
    if outcome == "sent":
        assert discord.check(answer) == wait
        return
    with pytest.raises(DeliveryError) as info:
        discord.check(answer)
    got = "throttled" if info.value.throttled else "permanent" if info.value.permanent else "retry"
    assert (got, info.value.retry_after) == (outcome, wait)
    assert str(info.value).startswith(f"discord {status}")
    if isinstance(body, dict) and status != 429:
        assert f"{body['message']} (code {body['code']})" in str(info.value)


class FakeWeb:
    """``ctx.web``: records the posts, answers with ``answer``."""

    def __init__(self, answer: Reply) -> None:
        self.answer = answer
        self.posts: list[tuple[str, str, bytes, Mapping[str, str]]] = []

    async def post(self, what: str, url: str, body: bytes, headers: Mapping[str, str]) -> Reply:
        self.posts.append((what, url, body, headers))
        return self.answer


def context(web: FakeWeb) -> SendContext:
    return cast(SendContext, type("Ctx", (), {"web": web})())


@pytest.mark.parametrize(
    ("url", "posted", "username"),
    [
        (URL, URL + "?wait=true", None),
        (URL + "?thread_id=99", URL + "?thread_id=99&wait=true", "Uptime"),  # a thread's webhook
    ],
)
async def test_send_waits_for_the_saved_message(url: str, posted: str, username: str | None) -> None:
    web = FakeWeb(reply(200, {"id": "1"}, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset-After": "1.5"}))
    payload, _ = discord.compose([event()])
    channel = {"id": 1, "kind": "discord", "name": "ops", "url": url, "username": username}
    assert await discord.send(context(web), channel, payload) == 1.5
    ((what, got_url, body, headers),) = web.posts
    assert (what, got_url) == ("discord", posted)
    assert headers["Content-Type"] == "application/json"
    sent = json.loads(body)
    assert sent.pop("username", None) == username
    assert sent == payload


async def test_errors_never_carry_the_webhook_url() -> None:
    web = FakeWeb(reply(404, f"<html>{URL} not found</html>"))
    with pytest.raises(DeliveryError) as info:
        await discord.send(context(web), {"url": URL}, {"embeds": []})
    assert info.value.permanent and "XXXXsecretXXXX" not in str(info.value)


def test_limits_five_per_two_seconds_and_thirty_a_minute() -> None:
    assert discord.limits("discord:5") == [Bucket("discord:5", 5, 2.1), Bucket("discord:5:minute", 30, 61.0)]
    assert discord.KIND.destination_of({"id": 5, "kind": "discord", "url": "sealed"}) == "discord:5"


# -- the other kinds of events ----------------------------------------------------------------

CHECKER = {"monitor_id": None, "monitor_name": "", "monitor_url": None, "incident_id": 0, "cause": {}}
UNTIL = "<t:1767268800:f> (<t:1767268800:R>)"  # 2026-01-01T12:00:00Z


@pytest.mark.parametrize(
    ("kind", "overrides", "title", "color", "description", "fields"),
    [
        (
            "remind",
            {"details": {"reminder": 3, "reminder_max": None}, "at": "2026-01-01T10:30:00Z"},
            "🔴 site 7 is still DOWN",
            discord.RED,
            "Reminder 3\nDown for **30m**\n**Latest cause:** unexpected status 503",
            ["Since"],
        ),
        (
            "acknowledged",
            {"details": {"acknowledged_by": "Ada **bold**", "note": "on it"}, "at": "2026-01-01T10:30:00Z"},
            "👀 site 7 acknowledged by Ada \\*\\*bold\\*\\*",
            discord.BLUE,
            "**Note:** on it\nDown for **30m**\nReminders of this outage stop; its recovery is still sent",
            ["Since"],
        ),
        (
            "degraded",
            {"details": {"reason": "response time 812 ms above 500 ms"}},
            "🟡 site 7 is DEGRADED",
            discord.YELLOW,
            "**Reason:** response time 812 ms above 500 ms",
            ["Since"],
        ),
        (
            "degraded_end",
            {"duration_seconds": 90.0},
            "🟢 site 7 is no longer degraded",
            discord.GREEN,
            "Degraded for **1m 30s**",
            ["Since"],
        ),
        (
            "flapping",
            {"details": {"changes": 7, "window_minutes": 30}},
            "🟠 site 7 is FLAPPING",
            discord.YELLOW,
            "7 changes in 30 min; alerts paused until it is stable for 30 min",
            [],
        ),
        (
            "flapping_end",
            {"details": {"status": "up"}},
            "🟢 site 7 stopped flapping; now UP",
            discord.GREEN,
            None,
            [],
        ),
        (
            "maintenance_start",
            {"details": {"window": "Nightly", "until": "2026-01-01T12:00:00Z"}},
            "🔧 Maintenance for site 7",
            discord.BLUE,
            f"**Window:** Nightly until {UNTIL}",
            [],
        ),
        (
            "maintenance_end",
            {"details": {"window": "Nightly"}},
            "🔧 Maintenance for site 7 ended",
            discord.GREEN,
            "**Window:** Nightly",
            [],
        ),
        (
            "connectivity_lost",
            {**CHECKER, "details": {"reason": "no route"}},
            "⚠️ The checker's network is down",
            discord.YELLOW,
            "**Reason:** no route\nChecks are recorded as unknown; no monitor is marked down meanwhile",
            ["Since"],
        ),
        (
            "connectivity_restored",
            {**CHECKER, "duration_seconds": 60.0, "started_at": None},
            "✅ The checker's network is back",
            discord.GREEN,
            "Cut off for **1m**",
            [],
        ),
        ("brand_new", {}, "🔔 site 7: brand\\_new", discord.BLUE, None, ["At"]),
    ],
)
def test_other_kinds(
    kind: str,
    overrides: dict[str, Any],
    title: str,
    color: int,
    description: str | None,
    fields: list[str],
) -> None:
    payload, covered = discord.compose([event(kind, **overrides)])
    assert covered == 1
    assert_fits(payload)
    (item,) = payload["embeds"]
    assert (item["title"], item["color"], item.get("description")) == (title, color, description)
    assert [f["name"] for f in item.get("fields", [])] == fields
    about_monitor = "monitor_id" not in overrides
    assert ("footer" in item, "url" in item) == (about_monitor, about_monitor)
    assert item["timestamp"] == event(kind, **overrides).at


def test_several_kinds_in_one_message_are_counted_by_level() -> None:
    events = [event("down", 1), event("flapping", 2), event("maintenance_start", 3), event("test", 4)]
    payload, covered = discord.compose(events)
    assert covered == 4
    assert payload["content"] == "⚠️ 4 alerts: 1 down, 1 up, 1 warning, 1 notice"
