"""The fake web APIs answer like the real services: successes, error shapes, limits, faults.

The channel tests of issue 12 trust these answers; a fake that accepted what the real service
refuses (or refused differently) would make them prove nothing.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from multidict import CIMultiDictProxy

from .fake_channels import FakeChannels, sign_webhook, webhook_secret
from .waiting import wait_for


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(trust_env=False) as session:
        yield session


@pytest.fixture
async def fake() -> AsyncIterator[FakeChannels]:
    async with FakeChannels() as server:
        yield server


async def post(
    http: aiohttp.ClientSession, url: str, body: Any = None, *, data: Any = None, **kwargs: Any
) -> tuple[int, Any, CIMultiDictProxy[str]]:
    """POST (JSON unless ``data``); the status, the body (JSON if it is), and the headers."""
    async with http.post(url, json=body if data is None else None, data=data, **kwargs) as resp:
        text = await resp.text()
        try:
            parsed: Any = json.loads(text)
        except ValueError:
            parsed = text
        return resp.status, parsed, resp.headers


# -- Slack -----------------------------------------------------------------------------------


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


@pytest.mark.parametrize(
    ("payload", "status", "answer"),
    [
        ({"text": "down"}, 200, "ok"),
        ({"blocks": [{"type": "header", "text": {"type": "plain_text", "text": "x" * 150}}]}, 200, "ok"),
        ({"text": "down", "blocks": [section("x" * 3000), {"type": "divider"}]}, 200, "ok"),
        ({"username": "monitor"}, 400, "no_text"),
        ({"text": ""}, 400, "no_text"),
        ([1, 2], 400, "invalid_payload"),
        ({"text": 5}, 400, "invalid_payload"),
        ({"text": "x", "blocks": [section("x")] * 51}, 400, "invalid_blocks"),
        ({"text": "x", "blocks": [section("x" * 3001)]}, 400, "invalid_blocks"),
        (
            {"blocks": [{"type": "header", "text": {"type": "plain_text", "text": "x" * 151}}]},
            400,
            "invalid_blocks",
        ),
        ({"blocks": [{"type": "header", "text": {"type": "mrkdwn", "text": "*x*"}}]}, 400, "invalid_blocks"),
        ({"blocks": [{"type": "section"}]}, 400, "invalid_blocks"),
        ({"blocks": [{"type": "nonsense"}]}, 400, "invalid_blocks"),
        ({"blocks": []}, 400, "invalid_blocks"),
    ],
)
async def test_slack_validates_payloads_like_slack(
    http: aiohttp.ClientSession, fake: FakeChannels, payload: Any, status: int, answer: str
) -> None:
    url = fake.slack.url_for("ops")
    assert (await post(http, url, payload))[:2] == (status, answer)
    [request] = fake.slack.requests
    assert request.destination == "ops" and request.payload == payload
    assert request.response_headers["Content-Type"].startswith("text/plain")
    assert fake.slack.messages_to(url) == ([request] if status == 200 else [])


async def test_slack_form_payload_and_permanent_errors(
    http: aiohttp.ClientSession, fake: FakeChannels
) -> None:
    ops, dev = fake.slack.url_for("ops"), fake.slack.url_for("dev")
    assert fake.slack.url_for("ops") == ops and ops != dev
    assert (await post(http, ops, data={"payload": json.dumps({"text": "form"})}))[:2] == (200, "ok")
    assert fake.slack.messages[0].payload == {"text": "form"}

    assert (await post(http, ops.rsplit("/", 1)[0] + "/wrong", {"text": "x"}))[:2] == (404, "no_service")
    fake.slack.revoke("ops")
    fake.slack.archive("dev")
    assert (await post(http, ops, {"text": "x"}))[:2] == (403, "invalid_token")
    assert (await post(http, dev, {"text": "x"}))[:2] == (410, "channel_is_archived")
    fake.slack.reset()
    assert (await post(http, ops, {"text": "x"}))[0] == 200


async def test_slack_rate_limit_one_a_second_with_a_short_burst(
    http: aiohttp.ClientSession, fake: FakeChannels
) -> None:
    ops, dev = fake.slack.url_for("ops"), fake.slack.url_for("dev")
    answers = [await post(http, ops, {"text": str(i)}) for i in range(4)]
    assert [a[0] for a in answers] == [200, 200, 200, 429]
    _, body, headers = answers[-1]
    assert (body, headers["Retry-After"]) == ("rate_limited", "1")
    assert (await post(http, dev, {"text": "other webhook"}))[0] == 200
    assert len(fake.slack.limited) == 1 and fake.slack.statuses()[429] == 1

    await asyncio.sleep(1.05)  # the bucket refills one message a second
    assert (await post(http, ops, {"text": "later"}))[0] == 200
    assert (await post(http, ops, {"text": "too soon"}))[0] == 429

    fake.slack.rate_limits = False
    assert [(await post(http, ops, {"text": "x"}))[0] for _ in range(5)] == [200] * 5


# -- Discord ---------------------------------------------------------------------------------


async def test_discord_answers_204_or_the_message_with_rate_limit_headers(
    http: aiohttp.ClientSession, fake: FakeChannels
) -> None:
    url = fake.discord.url_for("alerts")
    status, body, headers = await post(http, url, {"content": "down"})
    assert (status, body) == (204, "")
    assert (headers["X-RateLimit-Limit"], headers["X-RateLimit-Remaining"]) == ("5", "4")
    assert 0 < float(headers["X-RateLimit-Reset-After"]) <= 2.0
    assert (
        abs(float(headers["X-RateLimit-Reset"]) - time.time() - float(headers["X-RateLimit-Reset-After"]))
        < 0.5
    )
    bucket = headers["X-RateLimit-Bucket"]

    embed = {"title": "Down", "description": "timeout", "fields": [{"name": "Monitor", "value": "api"}]}
    status, message, headers = await post(http, url + "?wait=true", {"embeds": [embed]})
    assert status == 200 and message["embeds"] == [embed] and message["webhook_id"] == url.split("/")[-2]
    assert (headers["X-RateLimit-Remaining"], headers["X-RateLimit-Bucket"]) == ("3", bucket)
    assert [m.payload for m in fake.discord.messages_to("alerts")] == [
        {"content": "down"},
        {"embeds": [embed]},
    ]


async def test_discord_rate_limit_five_per_two_seconds(
    http: aiohttp.ClientSession, fake: FakeChannels
) -> None:
    url, other = fake.discord.url_for("a"), fake.discord.url_for("b")
    answers = [await post(http, url, {"content": str(i)}) for i in range(6)]
    assert [a[0] for a in answers] == [204] * 5 + [429]
    assert [a[2]["X-RateLimit-Remaining"] for a in answers] == ["4", "3", "2", "1", "0", "0"]
    status, body, headers = answers[-1]
    assert body["message"] == "You are being rate limited." and body["global"] is False
    assert 0 < body["retry_after"] <= 2.0 and isinstance(body["retry_after"], float)
    assert headers["Retry-After"] in ("1", "2") and headers["X-RateLimit-Scope"] == "user"
    assert (await post(http, other, {"content": "own bucket"}))[0] == 204
    assert len(fake.discord.limited) == 1

    await asyncio.sleep(body["retry_after"] + 0.05)
    status, _, headers = await post(http, url, {"content": "new window"})
    assert (status, headers["X-RateLimit-Remaining"]) == (204, "4")


@pytest.mark.parametrize(
    ("payload", "code", "error_path"),
    [
        ({}, 50006, None),
        ({"content": "   "}, 50006, None),
        ({"embeds": []}, 50006, None),
        ({"content": "x" * 2001}, 50035, ("content",)),
        ({"embeds": [{"title": "t"}] * 11}, 50035, ("embeds",)),
        ({"embeds": [{"title": "x" * 257}]}, 50035, ("embeds", "0", "title")),
        ({"embeds": [{"description": "x" * 4097}]}, 50035, ("embeds", "0", "description")),
        ({"embeds": [{"fields": [{"name": "n", "value": "v"}] * 26}]}, 50035, ("embeds", "0", "fields")),
        (
            {"embeds": [{"fields": [{"name": "n" * 257, "value": "v"}]}]},
            50035,
            ("embeds", "0", "fields", "0", "name"),
        ),
        (
            {"embeds": [{"fields": [{"name": "n", "value": "v" * 1025}]}]},
            50035,
            ("embeds", "0", "fields", "0", "value"),
        ),
        ({"embeds": [{"fields": [{"name": "n"}]}]}, 50035, ("embeds", "0", "fields", "0", "value")),
        ({"embeds": [{"footer": {"text": "x" * 2049}}]}, 50035, ("embeds", "0", "footer", "text")),
        ({"embeds": [{"description": "x" * 4000}, {"description": "x" * 2001}]}, 50035, ("embeds",)),
        ({"content": "x", "username": "u" * 81}, 50035, ("username",)),
    ],
)
async def test_discord_validates_like_discord(
    http: aiohttp.ClientSession,
    fake: FakeChannels,
    payload: Any,
    code: int,
    error_path: tuple[str, ...] | None,
) -> None:
    status, body, headers = await post(http, fake.discord.url_for(), payload)
    assert (status, body["code"]) == (400, code), body
    assert "X-RateLimit-Remaining" in headers
    if error_path is None:
        assert body["message"] == "Cannot send an empty message"
    else:
        assert body["message"] == "Invalid Form Body"
        node = body["errors"]
        for key in error_path:
            node = node[key]
        assert node["_errors"][0]["code"] and node["_errors"][0]["message"], body
    assert fake.discord.messages == []


async def test_discord_unknown_webhook_bad_token_and_bad_json(
    http: aiohttp.ClientSession, fake: FakeChannels
) -> None:
    url = fake.discord.url_for("a")
    base, hook_id, token = url.rsplit("/", 2)
    assert (await post(http, f"{base}/1/{token}", {"content": "x"}))[:2] == (
        404,
        {"message": "Unknown Webhook", "code": 10015},
    )
    assert (await post(http, f"{base}/{hook_id}/nope", {"content": "x"}))[1]["code"] == 50027
    bad = await post(http, url, data=b"{not json", headers={"Content-Type": "application/json"})
    assert (bad[0], bad[1]["code"]) == (400, 50109)
    assert (await post(http, url.replace("/api/", "/api/v10/"), {"content": "versioned"}))[0] == 204
    fake.discord.remove("a")
    assert (await post(http, url, {"content": "x"}))[1]["code"] == 10015


# -- ntfy ------------------------------------------------------------------------------------


async def test_ntfy_publishes_from_headers_and_from_json(
    http: aiohttp.ClientSession, fake: FakeChannels
) -> None:
    url = fake.ntfy.url_for("alerts")
    headers = {
        "Title": "api down",
        "Priority": "urgent",
        "Tags": "warning,skull",
        "Click": "https://x",
        "Markdown": "yes",
    }
    status, message, _ = await post(http, url, data=b"**timeout**", headers=headers)
    assert status == 200, message
    assert {k: message[k] for k in ("event", "topic", "message", "title", "priority", "tags", "click")} == {
        "event": "message",
        "topic": "alerts",
        "message": "**timeout**",
        "title": "api down",
        "priority": 5,
        "tags": ["warning", "skull"],
        "click": "https://x",
    }
    assert message["content_type"] == "text/markdown" and message["expires"] > message["time"] > 0
    assert len(message["id"]) == 12

    body = {"topic": "alerts", "message": "up", "title": "api up", "priority": 2, "tags": ["ok"]}
    status, message, _ = await post(http, fake.ntfy.base_url + "/", body)
    assert (status, message["message"], message["priority"], message["tags"]) == (200, "up", 2, ["ok"])
    async with http.put(url, data=b"plain", headers={"X-Priority": "3"}) as resp:
        assert resp.status == 200 and "priority" not in await resp.json()  # default, left out as ntfy does
    assert [m.payload["message"] for m in fake.ntfy.messages_to("alerts")] == ["**timeout**", "up", "plain"]


@pytest.mark.parametrize(
    ("url_suffix", "kwargs", "status", "code"),
    [
        ("/alerts", {"data": b"x", "headers": {"Priority": "6"}}, 400, 40007),
        ("/alerts", {"data": b"x", "headers": {"Priority": "loud"}}, 400, 40007),
        ("/", {"data": b"not json"}, 400, 40017),
        ("/", {"json": {"message": "no topic"}}, 400, 40009),
    ],
)
async def test_ntfy_refuses_like_ntfy(
    http: aiohttp.ClientSession,
    fake: FakeChannels,
    url_suffix: str,
    kwargs: dict[str, Any],
    status: int,
    code: int,
) -> None:
    async with http.post(fake.ntfy.base_url + url_suffix, **kwargs) as resp:
        body = await resp.json()
    assert (resp.status, body["code"], body["http"]) == (status, code, status) and body["error"]


async def test_ntfy_access_tokens_rate_limit_and_attachments(
    http: aiohttp.ClientSession, fake: FakeChannels
) -> None:
    token = fake.ntfy.protect("private")
    other = fake.ntfy.protect("elsewhere")
    url = fake.ntfy.url_for("private")
    assert token.startswith("tk_") and len(token) == 32
    forbidden = {
        "code": 40301,
        "http": 403,
        "error": "forbidden",
        "link": "https://ntfy.sh/docs/publish/#authentication",
    }
    assert (await post(http, url, data=b"x"))[:2] == (403, forbidden)
    status, body, _ = await post(http, url, data=b"x", headers={"Authorization": "Bearer tk_unknown"})
    assert (status, body["code"], body["error"]) == (401, 40101, "unauthorized")
    assert (await post(http, url, data=b"x", headers={"Authorization": f"Bearer {other}"}))[0] == 403
    assert (await post(http, url, data=b"x", headers={"Authorization": f"Bearer {token}"}))[0] == 200

    big = b"x" * 5000
    status, message, _ = await post(http, fake.ntfy.url_for("files"), data=big)
    assert status == 200 and message["attachment"]["size"] == 5000
    assert message["message"] == "You received a file: attachment.txt"
    assert fake.ntfy.messages_to("files")[0].attachment is True

    fake.ntfy.burst = 2
    fake.ntfy.reset()
    answers = [await post(http, fake.ntfy.url_for("t"), data=b"x") for _ in range(3)]
    assert [a[0] for a in answers] == [200, 200, 429]
    assert answers[-1][1]["code"] == 42901 and answers[-1][1]["error"].startswith(
        "limit reached: too many requests"
    )


# -- PagerDuty -------------------------------------------------------------------------------


def pd_event(
    key: str, action: str = "trigger", dedup_key: str | None = "inc-1", **payload: Any
) -> dict[str, Any]:
    event: dict[str, Any] = {"routing_key": key, "event_action": action}
    if dedup_key is not None:
        event["dedup_key"] = dedup_key
    if action == "trigger":
        event["payload"] = {"summary": "api down", "source": "monitor", "severity": "critical", **payload}
    return event


async def test_pagerduty_trigger_and_resolve_close_the_alert(
    http: aiohttp.ClientSession, fake: FakeChannels
) -> None:
    url, key = fake.pagerduty.url_for(), fake.pagerduty.new_routing_key()
    status, body, _ = await post(http, url, pd_event(key, timestamp="2025-01-02T03:04:05Z"))
    assert (status, body) == (202, {"status": "success", "message": "Event processed", "dedup_key": "inc-1"})
    assert (await post(http, url, pd_event(key)))[0] == 202  # a repeat trigger joins the open alert
    alert = fake.pagerduty.alert("inc-1")
    assert alert is not None and alert.open and alert.status == "triggered" and len(alert.events) == 2

    assert (await post(http, url, pd_event(key, "acknowledge")))[0] == 202
    assert alert.status == "acknowledged"
    assert (await post(http, url, pd_event(key, "resolve")))[0] == 202
    assert not alert.open and fake.pagerduty.open_alerts == []
    # Resolving what is not open is accepted and changes nothing, as in PagerDuty.
    assert (await post(http, url, pd_event(key, "resolve", "never-opened")))[0] == 202
    assert fake.pagerduty.alert("never-opened") is None
    # The same dedup key triggered again is a new alert.
    await post(http, url, pd_event(key))
    assert len(fake.pagerduty.alerts) == 2 and fake.pagerduty.open_alerts[0].dedup_key == "inc-1"

    status, body, _ = await post(http, url, pd_event(fake.pagerduty.new_routing_key(), dedup_key=None))
    assert status == 202 and len(body["dedup_key"]) == 32  # unknown key accepted; a key made up
    assert len(fake.pagerduty.messages_to(key)) == 6


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"routing_key": "short"}, "Length of 'routing_key'"),
        ({"routing_key": None}, "'routing_key' is missing"),
        ({"event_action": "escalate"}, "'event_action' is invalid"),
        ({"payload": {"source": "m", "severity": "critical"}}, "'payload.summary' is missing"),
        ({"payload": {"summary": "x" * 1025, "source": "m", "severity": "critical"}}, "longer than 1024"),
        ({"payload": {"summary": "s", "source": "m", "severity": "fatal"}}, "'payload.severity' is invalid"),
        (
            {"payload": {"summary": "s", "source": "m", "severity": "info", "timestamp": "yesterday"}},
            "timestamp",
        ),
        ({"event_action": "resolve", "dedup_key": None}, "'dedup_key' is missing"),
        ({"links": "https://x"}, "'links' must be an array"),
    ],
)
async def test_pagerduty_refuses_invalid_events(
    http: aiohttp.ClientSession, fake: FakeChannels, change: dict[str, Any], error: str
) -> None:
    event = {**pd_event(fake.pagerduty.new_routing_key()), **change}
    status, body, _ = await post(http, fake.pagerduty.url_for(), event)
    assert (
        status == 400 and body["status"] == "invalid event" and body["message"] == "Event object is invalid"
    )
    assert any(error in e for e in body["errors"]), body
    assert fake.pagerduty.alerts == []


async def test_pagerduty_rate_limit_per_routing_key(http: aiohttp.ClientSession, fake: FakeChannels) -> None:
    fake.pagerduty.per_minute = 3
    key, other = fake.pagerduty.new_routing_key(), fake.pagerduty.new_routing_key()
    answers = [await post(http, fake.pagerduty.url_for(), pd_event(key, dedup_key=str(i))) for i in range(4)]
    assert [a[0] for a in answers] == [202, 202, 202, 429] and answers[-1][1] == ""
    assert (await post(http, fake.pagerduty.url_for(), pd_event(other)))[0] == 202
    assert len(fake.pagerduty.limited) == 1 and len(fake.pagerduty.alerts) == 4


# -- Standard Webhooks receiver --------------------------------------------------------------


def signed_headers(
    secret: str, body: bytes, msg_id: str = "msg_1", timestamp: int | None = None
) -> dict[str, str]:
    """Signed here independently of the fake's ``sign_webhook``, from the specification."""
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    key = base64.b64decode(secret.removeprefix("whsec_"))
    digest = hmac.new(key, f"{msg_id}.{stamp}.".encode() + body, hashlib.sha256).digest()
    signature = "v1," + base64.b64encode(digest).decode()
    return {"webhook-id": msg_id, "webhook-timestamp": stamp, "webhook-signature": signature}


def test_sign_webhook_reproduces_the_specifications_test_vector() -> None:
    secret, msg_id, stamp = (
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "msg_p5jXN8AQM9LWM0D4loKWxJek",
        1614265330,
    )
    expected = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
    assert sign_webhook(secret, msg_id, stamp, b'{"test": 2432232314}') == expected
    assert webhook_secret().startswith("whsec_") and len(base64.b64decode(webhook_secret()[6:])) == 24


async def test_webhook_receiver_verifies_signatures_and_refuses_replays(
    http: aiohttp.ClientSession, fake: FakeChannels
) -> None:
    url = fake.webhooks.url_for("ci")
    secret = fake.webhooks.secret("ci")
    body = json.dumps({"type": "monitor.down", "monitor": {"id": 7}}).encode()
    headers = {"Content-Type": "application/json", **signed_headers(secret, body)}
    assert (await post(http, url, data=body, headers=headers))[:2] == (200, "ok")
    [delivery] = fake.webhooks.messages_to("ci")
    assert delivery.verified is True and delivery.payload == {"type": "monitor.down", "monitor": {"id": 7}}
    assert delivery.headers["webhook-id"] == "msg_1"

    # The same id again: answered 200 (the sender may retry) but recorded as a duplicate.
    assert (await post(http, url, data=body, headers=headers))[0] == 200
    assert len(fake.webhooks.messages) == 1 and len(fake.webhooks.duplicates) == 1

    # Rotation: several signatures, one of which matches, pass.
    rotated = signed_headers(secret, body, "msg_2")
    rotated["webhook-signature"] = "v1,bm90IGl0 " + rotated["webhook-signature"]
    assert (await post(http, url, data=body, headers=rotated))[0] == 200

    refused = [
        signed_headers(webhook_secret(), body, "msg_3"),  # another secret
        signed_headers(secret, body + b" ", "msg_4"),  # the body changed after signing
        signed_headers(secret, body, "msg_5", int(time.time()) - 301),  # too old: a replay
        signed_headers(secret, body, "msg_6", int(time.time()) + 301),  # from the future
        {k: v for k, v in signed_headers(secret, body, "msg_7").items() if k != "webhook-signature"},
    ]
    for bad in refused:
        status, reason, _ = await post(http, url, data=body, headers=bad)
        assert status == 401 and reason, (bad, reason)
    assert [r.verified for r in fake.webhooks.requests[-5:]] == [False] * 5
    assert [m.headers["webhook-id"] for m in fake.webhooks.messages] == ["msg_1", "msg_2"]
    unknown = fake.webhooks.base_url + "/hooks/nobody"
    assert (await post(http, unknown, data=body, headers=signed_headers(secret, body, "msg_8")))[0] == 404


async def test_webhook_receiver_accepts_the_specifications_vector(
    http: aiohttp.ClientSession, fake: FakeChannels
) -> None:
    url = fake.webhooks.url_for("spec", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
    fake.webhooks.tolerance = time.time()  # the vector was signed in 2021
    headers = {
        "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
        "webhook-timestamp": "1614265330",
        "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    }
    assert (await post(http, url, data=b'{"test": 2432232314}', headers=headers))[0] == 200


# -- faults, holding and waiting (shared by every service) -----------------------------------


async def test_scripted_errors_take_each_services_shape(
    http: aiohttp.ClientSession, fake: FakeChannels
) -> None:
    slack, discord, ntfy = fake.slack.url_for(), fake.discord.url_for(), fake.ntfy.url_for("t")
    fake.slack.fail(503, times=2)
    fake.discord.fail(500)
    fake.discord.fail(429, retry_after=0.25)
    fake.ntfy.fail(500)
    fake.pagerduty.fail(502)
    fake.webhooks.fail(429, retry_after=3)
    assert [(await post(http, slack, {"text": "x"}))[0] for _ in range(3)] == [503, 503, 200]
    assert (await post(http, discord, {"content": "x"}))[:2] == (
        500,
        {"message": "500: Internal Server Error", "code": 0},
    )
    status, body, headers = await post(http, discord, {"content": "x"})
    assert (status, body["retry_after"], headers["Retry-After"], headers["X-RateLimit-Remaining"]) == (
        429,
        0.25,
        "1",
        "0",
    )
    assert (await post(http, ntfy, data=b"x"))[1] == {
        "code": 50001,
        "http": 500,
        "error": "internal server error",
    }
    assert (await post(http, fake.pagerduty.url_for(), pd_event(fake.pagerduty.new_routing_key())))[0] == 502
    status, _, headers = await post(http, fake.webhooks.url_for("h"), data=b"{}")
    assert (status, headers["Retry-After"]) == (429, "3")
    assert fake.discord.statuses()[429] == 1 and fake.discord.limited == []  # scripted, not the limiter
    assert all(r.scripted for r in fake.requests if r.status != 200)


async def test_faults_for_a_destination_and_for_a_time(
    http: aiohttp.ClientSession, fake: FakeChannels
) -> None:
    a, b = fake.slack.url_for("a"), fake.slack.url_for("b")
    fake.slack.rate_limits = False
    fake.slack.fail(500, destination="b", times=1)
    assert (await post(http, a, {"text": "x"}))[0] == 200
    assert (await post(http, b, {"text": "x"}))[0] == 500
    assert (await post(http, b, {"text": "x"}))[0] == 200

    fake.slack.fail(500, seconds=0.3)
    assert [(await post(http, a, {"text": "x"}))[0] for _ in range(3)] == [500] * 3
    await asyncio.sleep(0.35)
    assert (await post(http, a, {"text": "x"}))[0] == 200

    fake.slack.refuse(404, destination="a")
    assert [(await post(http, a, {"text": "x"}))[1] for _ in range(3)] == ["no_service"] * 3
    assert (await post(http, b, {"text": "x"}))[0] == 200


async def test_hang_until_released_and_abandoned_requests(
    http: aiohttp.ClientSession, fake: FakeChannels
) -> None:
    url = fake.discord.url_for()
    fake.discord.hang(times=1)
    pending = asyncio.ensure_future(post(http, url, {"content": "held"}))
    await wait_for(lambda: fake.discord.held, timeout=5)
    assert (await post(http, url, {"content": "not held"}))[0] == 204  # only the next one hangs
    assert not pending.done()
    fake.discord.release()
    assert (await pending)[0] == 204
    # Messages are in the order the service accepted them (as the channel shows them).
    assert [m.payload["content"] for m in fake.discord.messages] == ["not held", "held"]
    assert [r.payload["content"] for r in fake.discord.requests] == ["held", "not held"]

    # A client that gives up: the request is abandoned, never delivered.
    fake.discord.hang()
    with pytest.raises(asyncio.TimeoutError):
        await post(http, url, {"content": "given up"}, timeout=aiohttp.ClientTimeout(total=0.3))
    await wait_for(lambda: fake.discord.requests[-1].abandoned, timeout=5)
    assert fake.discord.held == [] and len(fake.discord.messages) == 2
    fake.discord.release()
    assert (await post(http, url, {"content": "after"}))[0] == 204


async def test_wait_messages_per_destination_and_its_failure_message(
    http: aiohttp.ClientSession, fake: FakeChannels
) -> None:
    topic = fake.ntfy.url_for("t")

    async def later() -> None:
        await asyncio.sleep(0.1)
        await post(http, topic, data=b"one")
        await post(http, topic, data=b"two")

    task = asyncio.ensure_future(later())
    got = await fake.ntfy.wait_messages(2, destination="t", timeout=5)
    await task
    assert [m.text for m in got] == ["one", "two"] and got[0].received_at <= got[1].received_at
    with pytest.raises(AssertionError, match=r"1 slack message\(s\); received: no requests"):
        await fake.slack.wait_messages(1, timeout=0.2)
    assert [r.service for r in fake.requests] == ["ntfy", "ntfy"]
