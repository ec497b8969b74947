"""Slack: settings, the Block Kit renderer (escaping, Slack's limits, combined messages) and
the classification of Slack's answers, without the network."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, cast

import pytest
from pydantic import SecretStr, ValidationError
from support.fake_channels import _slack_problem

from monitor.channels import REGISTRY, slack
from monitor.channels.base import Bucket, DeliveryError, Reply, SendContext, config_values
from monitor.events import Event

URL = "https://hooks.slack.com/services/T0001/B0001/XXXXsecretXXXX"
HOSTILE = "<!channel> & <https://evil.example|click> *x*"


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


def texts(payload: Mapping[str, Any]) -> list[str]:
    """Every text of a message: the fallback, then each block's texts, in order."""
    found = [payload["text"]]
    for block in payload["blocks"]:
        if "text" in block:
            found.append(block["text"]["text"])
        found += [f["text"] for f in block.get("fields", [])]
        found += [e["text"] for e in block.get("elements", [])]
    return found


def assert_fits(payload: Mapping[str, Any]) -> None:
    """Within Slack's limits (as the fake checks them, and more precisely here)."""
    assert _slack_problem(payload) is None, payload
    assert 1 <= len(payload["blocks"]) <= slack.MAX_BLOCKS
    assert 1 <= len(payload["text"]) <= slack.MAX_FALLBACK
    for block in payload["blocks"]:
        if block["type"] == "header":
            assert len(block["text"]["text"]) <= slack.MAX_HEADER
        if block["type"] == "section":  # a section's text is optional beside fields
            assert len(block.get("text", {}).get("text", "")) <= slack.MAX_SECTION
            assert all(len(f["text"]) <= slack.MAX_FIELD for f in block.get("fields", []))


def test_registered_with_its_secret() -> None:
    assert REGISTRY["slack"] is slack.KIND and slack.KIND.secrets == {"url"}


# -- settings ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        URL,
        "http://127.0.0.1:8065/hooks/abc123",  # Mattermost (any http(s) host: Slack-compatible)
        "https://chat.example.org/hooks/abc/def",  # Rocket.Chat
    ],
)
def test_settings_take_any_http_url_as_a_secret(url: str) -> None:
    settings = slack.SlackSettings.model_validate({"url": url})
    assert isinstance(settings.url, SecretStr) and "secret" not in repr(settings)
    assert config_values(settings) == {"url": url}


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://hooks.slack.com/services/T/B/XXXXsecretXXXX", "scheme"),
        ("https://user:pw@hooks.slack.com/services/T/B/XXXXsecretXXXX", "credentials"),
        ("hooks.slack.com/services/T/B/XXXXsecretXXXX", "scheme"),
        ("https:///services/T/B/XXXXsecretXXXX", "host"),
        ("https://hooks.slack.com/services/T/B/XXXXsecretXXXX " + "x", "whitespace"),
        ("https://hooks.slack.com/" + "a" * 3000 + "XXXXsecretXXXX", "longer than"),
    ],
)
def test_settings_refuse_other_urls_without_quoting_them(url: str, reason: str) -> None:
    with pytest.raises(ValidationError) as info:
        slack.SlackSettings.model_validate({"url": url})
    message = info.value.errors(include_url=False)[0]["msg"]
    assert reason in message and "XXXXsecretXXXX" not in message


def test_settings_refuse_unknown_fields() -> None:
    with pytest.raises(ValidationError):
        slack.SlackSettings.model_validate({"url": URL, "channel": "#ops"})


# -- rendering -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "header", "wanted"),
    [
        ("down", "🔴 site 7 is DOWN", ["*Cause*\nunexpected status 503", "*Since*\n2026-01-01 10:00:00 UTC"]),
        ("up", "🟢 site 7 is UP again", ["*Outage lasted*\n1h 2m 3s", "*Since*\n2026-01-01 10:00:00 UTC"]),
        ("test", "✅ Test message from monitor", ["Channel *site 7* works."]),
    ],
)
def test_one_event_is_one_message(kind: str, header: str, wanted: list[str]) -> None:
    payload, covered = slack.compose([event(kind)])
    assert covered == 1
    assert_fits(payload)
    assert payload["blocks"][0] == {
        "type": "header",
        "text": {"type": "plain_text", "text": header, "emoji": True},
    }
    found = texts(payload)
    for text in wanted:
        assert text in found
    if kind != "test":
        # The link to the monitor, its & escaped; the context names monitor and incident.
        assert "<https://s7.example/?a=1&amp;b=2|https://s7.example/?a=1&amp;b=2>" in found
        assert "Monitor #7 · incident #107" in found
    assert payload["text"].startswith(header.split(" is ")[0])


@pytest.mark.parametrize("kind", ["down", "up", "test"])
def test_hostile_names_are_escaped_everywhere(kind: str) -> None:
    payload, _ = slack.compose(
        [event(kind, monitor_name=HOSTILE, cause={"error": "<@U123> & <!here>", "status_code": None})]
    )
    assert_fits(payload)
    for text in texts(payload):
        # No mention, no forged link: Slack reads <...> only, and every < of the user's is &lt;.
        assert "<!channel>" not in text and "<!here>" not in text and "<@U123>" not in text
        assert "<https://evil" not in text
        assert "& " not in text.replace("&amp; ", "")
    assert any("&lt;!channel&gt; &amp; &lt;https://evil.example|click&gt;" in t for t in texts(payload))


@pytest.mark.parametrize(
    ("url", "linked"),
    [
        ("https://s.example/a|b>c<d", "<https://s.example/a%7Cb%3Ec%3Cd|"),
        ("https://s.example/?q=a b", "<https://s.example/?q=a%20b|"),
        ("ftp://s.example/file", None),  # not http(s): shown, not linked
        ("https://s.example/" + "&" * 400, None),  # too long once escaped: a cut link misleads
    ],
)
def test_monitor_link_cannot_break_out(url: str, linked: str | None) -> None:
    payload, _ = slack.compose([event(monitor_url=url)])
    assert_fits(payload)
    section = payload["blocks"][1]["text"]["text"]
    if linked is None:
        assert not section.startswith("<") and "|" not in section.replace("&amp;", "")
    else:
        assert section.startswith(linked)


@pytest.mark.parametrize(
    "overrides",
    [
        {"monitor_name": "&" * 2000},
        {"monitor_name": "x" * 5000, "monitor_url": "https://e.example/" + "<" * 3000},
        {"cause": {"error": "<>" * 6000, "status_code": 500}},
        {"monitor_name": "é🔥" * 400, "cause": {"error": "&" * 9000}},
    ],
)
@pytest.mark.parametrize("kind", ["down", "up", "test"])
def test_long_values_stay_within_slacks_limits(overrides: dict[str, Any], kind: str) -> None:
    payload, covered = slack.compose([event(kind, **overrides)])
    assert covered == 1
    assert_fits(payload)
    # Escaping never leaves half an entity at a cut.
    for text in texts(payload):
        assert not any(text.endswith(part) for part in ("&", "&a", "&am", "&amp", "&l", "&lt", "&g", "&gt"))


def test_escape_cuts_between_entities() -> None:
    assert slack.escape("a<b", 10) == "a&lt;b"
    assert slack.escape("<<<<", 10) == "&lt;&lt;…"
    assert slack.escape("abcdef", 4) == "abc…"


def test_events_waiting_together_share_one_message() -> None:
    events = [event("down", 1), event("up", 2, monitor_name=HOSTILE), event("test", 3)]
    payload, covered = slack.compose(events)
    assert covered == 3
    assert_fits(payload)
    header, *sections = payload["blocks"]
    assert header["text"]["text"] == "⚠️ 3 alerts: 1 down, 2 up"
    assert [s["text"]["text"] for s in sections] == [
        "🔴 *<https://s1.example/?a=1&amp;b=2|site 1>* DOWN: unexpected status 503, "
        "since 2026-01-01 10:00:00 UTC",
        "🟢 *<https://s2.example/?a=1&amp;b=2|"
        "&lt;!channel&gt; &amp; &lt;https://evil.example|click&gt; *x*>* UP after 1h 2m 3s",
        "✅ test message: channel *site 3* works",
    ]
    assert payload["text"].startswith("⚠️ 3 alerts: 1 down, 2 up: site 1, &lt;!channel&gt;")


@pytest.mark.parametrize("count", [2, 48, 49, 500])
def test_a_backlog_goes_in_as_few_messages_as_fit_and_names_everyone(count: int) -> None:
    events = [event("down" if n % 3 else "up", n, monitor_name=f"m{n:03d}" + "&" * 200) for n in range(count)]
    covered = 0
    messages = 0
    while covered < count:
        payload, n = slack.compose(events[covered:])
        assert_fits(payload)
        assert 1 <= n <= slack.MAX_COMBINED
        body = "\n".join(texts(payload)[1:])
        for e in events[covered : covered + n]:
            assert body.count(f"m{e.monitor_id:03d}") == 1
        covered += n
        messages += 1
    assert messages == -(-count // slack.MAX_COMBINED)


NOW = datetime(2026, 1, 3, 12, 0, tzinfo=UTC)  # two days after the events' times


@pytest.mark.parametrize(("monitors", "all_named"), [(1, True), (3, True), (400, True), (3000, False)])
def test_old_alerts_are_one_summary(monitors: int, all_named: bool) -> None:
    old = [event(kind, n) for n in range(monitors) for kind in ("down", "up")]
    fresh = event("down", 999, at=NOW.isoformat().replace("+00:00", "Z"))
    payload, covered = slack.compose([*old, fresh], max_age=3600.0, now=NOW)
    assert covered == len(old)
    assert_fits(payload)
    assert payload["blocks"][0]["text"]["text"] == f"🕓 {len(old)} alerts older than 1h"
    body = "\n".join(texts(payload))
    assert "*site 0*: 1 down, 1 up; 🟢 last UP at 2026-01-01 11:02:03 UTC" in body
    named = sum(f"*site {n}*: 1 down" in body for n in range(monitors))
    if all_named:
        assert named == monitors
    else:  # as many as 50 blocks take, and how many are left out
        assert payload["blocks"][-1]["elements"][0]["text"] == f"… and {monitors - named} more monitors"
    # The fresh one after them goes as news.
    payload, covered = slack.compose([fresh], max_age=3600.0, now=NOW)
    assert covered == 1 and payload["blocks"][0]["text"]["text"] == "🔴 site 999 is DOWN"


# -- Slack's answers -----------------------------------------------------------------------


def reply(status: int, body: str = "", headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, {k.lower(): (v,) for k, v in (headers or {}).items()}, body.encode())


@pytest.mark.parametrize(
    ("status", "body", "headers", "outcome", "wait"),
    [
        (200, "ok", None, "sent", None),
        (200, '{"success":true}', None, "sent", None),  # Rocket.Chat
        (400, "invalid_payload", None, "permanent", None),
        (400, "no_text", None, "permanent", None),
        (400, "invalid_blocks", None, "permanent", None),
        (403, "invalid_token", None, "permanent", None),
        (403, "action_prohibited", None, "permanent", None),
        (404, "no_service", None, "permanent", None),
        (404, "channel_not_found", None, "permanent", None),
        (410, "channel_is_archived", None, "permanent", None),
        (429, "rate_limited", {"Retry-After": "3"}, "throttled", 3.0),
        (429, "rate_limited", None, "throttled", 1.0),
        (500, "rollup_error", None, "retry", None),
        (503, "", {"Retry-After": "7"}, "retry", 7.0),
        (408, "", None, "retry", None),
    ],
)
def test_answers_are_classified(
    status: int, body: str, headers: dict[str, str] | None, outcome: str, wait: float | None
) -> None:
    answer = reply(status, body, headers)
    if outcome == "sent":
        slack.check(answer)
        return
    with pytest.raises(DeliveryError) as info:
        slack.check(answer)
    got = "throttled" if info.value.throttled else "permanent" if info.value.permanent else "retry"
    assert (got, info.value.retry_after) == (outcome, wait)
    assert str(info.value).startswith(f"slack {status}") and body in str(info.value)


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


async def test_send_posts_the_payload_as_json_to_the_webhook() -> None:
    web = FakeWeb(reply(200, "ok"))
    payload, _ = slack.compose([event(monitor_name="café")])
    assert (
        await slack.send(context(web), {"id": 1, "kind": "slack", "name": "ops", "url": URL}, payload) is None
    )
    ((what, url, body, headers),) = web.posts
    assert (what, url) == ("slack", URL)
    assert headers["Content-Type"].startswith("application/json")
    assert json.loads(body) == payload and "café".encode() in body


async def test_errors_never_carry_the_webhook_url() -> None:
    web = FakeWeb(reply(404, f"no_service for {URL}"))
    with pytest.raises(DeliveryError) as info:
        await slack.send(context(web), {"url": URL}, {"text": "x"})
    assert info.value.permanent and "XXXXsecretXXXX" not in str(info.value)


def test_limits_one_message_a_second_per_webhook() -> None:
    assert slack.limits("slack:5") == [Bucket("slack:5", 1, 1.05)]
    assert slack.KIND.destination_of({"id": 5, "kind": "slack", "url": "sealed"}) == "slack:5"


# -- the other kinds of events ----------------------------------------------------------------

CHECKER = {"monitor_id": None, "monitor_name": "", "monitor_url": None, "incident_id": 0, "cause": {}}


@pytest.mark.parametrize(
    ("kind", "overrides", "header", "wanted"),
    [
        (
            "remind",
            {"details": {"reminder": 2, "reminder_max": 5}},
            "🔴 site 7 is still DOWN",
            ["Reminder 2 of 5", "*Down for*\n0s", "*Latest cause*\nunexpected status 503"],
        ),
        (
            "acknowledged",
            {"details": {"acknowledged_by": "Ada <ops>", "note": "failing over"}},
            "👀 site 7 acknowledged by Ada &lt;ops&gt;",  # the person's name escaped like any text
            ["*Note*\nfailing over", "*Down for*\n0s", "Reminders of this outage stop"],
        ),
        (
            "degraded",
            {"details": {"reason": "certificate expires in 3 days (2026-12-03)"}},
            "🟡 site 7 is DEGRADED",
            ["*Reason*\ncertificate expires in 3 days (2026-12-03)", "*Since*\n2026-01-01 10:00:00 UTC"],
        ),
        (
            "degraded_end",
            {"duration_seconds": 600.0},
            "🟢 site 7 is no longer degraded",
            ["*Degraded for*\n10m", "*Since*\n2026-01-01 10:00:00 UTC"],
        ),
        (
            "flapping",
            {"details": {"changes": 9, "window_minutes": 15}},
            "🟠 site 7 is FLAPPING",
            ["9 changes in 15 min; alerts paused until it is stable for 15 min"],
        ),
        ("flapping_end", {"details": {"status": "degraded"}}, "🟡 site 7 stopped flapping; now DEGRADED", []),
        (
            "maintenance_start",
            {"details": {"window": "Nightly", "until": "2026-01-01T12:00:00Z"}},
            "🔧 Maintenance for site 7",
            ["*Window*\nNightly until 2026-01-01 12:00:00 UTC"],
        ),
        ("maintenance_end", {"details": {"window": "Nightly"}}, "🔧 Maintenance for site 7 ended", []),
        (
            "connectivity_lost",
            {**CHECKER, "details": {"reason": "no route to 1.1.1.1"}},
            "⚠️ The checker's network is down",
            [
                "*Reason*\nno route to 1.1.1.1",
                "Checks are recorded as unknown; no monitor is marked down meanwhile",
            ],
        ),
        (
            "connectivity_restored",
            {**CHECKER, "duration_seconds": 125.0},
            "✅ The checker's network is back",
            ["*Cut off for*\n2m 5s"],
        ),
        ("brand_new", {}, "🔔 site 7: brand_new", ["*At*\n2026-01-01 10:00:00 UTC"]),
    ],
)
def test_other_kinds(kind: str, overrides: dict[str, Any], header: str, wanted: list[str]) -> None:
    payload, covered = slack.compose([event(kind, **overrides)])
    assert covered == 1
    assert_fits(payload)
    assert payload["blocks"][0]["text"]["text"] == header
    found = "\n".join(texts(payload))
    for text in wanted:
        assert text in found
    # Only events about a monitor link it and name it in a context line.
    assert ("Monitor #7" in found) == ("monitor_id" not in overrides)
    # Only an outage's events name it.
    assert ("incident #107" in found) == (kind in ("remind", "acknowledged"))
    assert ("<https://s7.example/" in found) == ("monitor_id" not in overrides)
    assert payload["text"].startswith(header)


def test_several_kinds_in_one_message() -> None:
    events = [
        event("remind", 1, details={"reminder": 1}),
        event("degraded", 2, details={"reason": "slow <b>"}),
        event("connectivity_lost", 3, **{**CHECKER, "details": {"reason": "cut"}}),
        event("maintenance_end", 4, details={"window": "W"}),
    ]
    payload, covered = slack.compose(events)
    assert covered == 4
    assert_fits(payload)
    header, *sections = payload["blocks"]
    assert header["text"]["text"] == "⚠️ 4 alerts: 1 down, 1 up, 2 warnings"
    assert [s["text"]["text"] for s in sections] == [
        "🔴 *<https://s1.example/?a=1&amp;b=2|site 1>* still DOWN: unexpected status 503, "
        "since 2026-01-01 10:00:00 UTC",
        "🟡 *<https://s2.example/?a=1&amp;b=2|site 2>* DEGRADED: slow &lt;b&gt;, "
        "since 2026-01-01 10:00:00 UTC",
        "⚠️ The checker's network is down: cut",
        "🔧 Maintenance for *<https://s4.example/?a=1&amp;b=2|site 4>* ended: W",
    ]
    assert payload["text"].endswith(": site 1, site 2, The checker's network is down, site 4")
