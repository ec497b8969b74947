"""Webhook channel: settings, the event body, Standard Webhooks signing, and the answers."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic import ValidationError
from support import sign_webhook

from monitor.channels import REGISTRY, webhook
from monitor.channels.base import DeliveryError, Reply, SendContext, config_values
from monitor.channels.notice import KINDS
from monitor.events import Event

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
URL = "https://hooks.example/in/abc"


def event(kind: str = "down", **overrides: Any) -> Event:
    data: dict[str, Any] = {
        "event_id": "0b7c2f7e-0000-4000-8000-000000000001",
        "kind": kind,
        "monitor_id": 7,
        "monitor_name": 'Shop "prod" <b>&</b>\\ ✓',
        "monitor_url": "https://shop.example/?a=1&b=<2>",
        "telegram_chat_id": None,
        "incident_id": 11,
        "at": "2026-01-01T11:02:03Z" if kind == "up" else "2026-01-01T10:00:00Z",
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


def settings(**config: Any) -> webhook.WebhookSettings:
    return webhook.WebhookSettings.model_validate({"url": URL, **config})


@pytest.mark.parametrize(
    ("config", "problem"),
    [
        ({"url": "ftp://hooks.example/x"}, "scheme"),
        ({"url": "https://user:pw@hooks.example/x"}, "credentials"),
        ({"url": "hooks.example/x"}, "scheme"),
        ({"url": "https://hooks.example/" + "a" * 2100}, "2048"),
        ({"secret": "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, "whsec_"),
        ({"secret": "whsec_not base64!"}, "base64"),
        ({"secret": "whsec_" + base64.b64encode(b"x" * 16).decode()}, "24 to 64 bytes"),
        ({"secret": "whsec_" + base64.b64encode(b"x" * 65).decode()}, "24 to 64 bytes"),
        ({"headers": {"Content-Type": "text/plain"}}, "set by the webhook"),
        ({"headers": {"webhook-signature": "v1,x"}}, "set by the webhook"),
        ({"headers": {"Host": "internal"}}, "set by the webhook"),
        ({"headers": {"Transfer-Encoding": "chunked"}}, "set by the webhook"),
        ({"headers": {"Bad Name": "x"}}, "token characters"),
        ({"headers": {"X-A": "a\r\nInjected: 1"}}, "control characters"),
        ({"headers": {"X-A": "a", "x-a": "b"}}, "twice"),
        ({"headers": {f"X-{i}": "v" for i in range(11)}}, "at most 10"),
        ({"headers": {"X-A": "v" * 1025}}, "at most 1024"),
        ({"headers": ["X-A"]}, "object"),
        ({"extra": 1}, "Extra inputs"),
    ],
)
def test_settings_refuse(config: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValidationError) as caught:
        settings(**config)
    assert problem in str(caught.value)


def test_settings_errors_never_quote_a_header_value() -> None:
    with pytest.raises(ValidationError) as caught:
        settings(headers={"Authorization": "Bearer s3cr3t-value\n"})
    # What the API answers with (``errors.from_validation``): the message, not pydantic's input.
    assert "s3cr3t-value" not in caught.value.errors()[0]["msg"]


def test_settings_accept_and_normalise() -> None:
    got = settings(
        url="HTTPS://Hooks.Example./in/abc", secret=SECRET, headers={"Authorization": "Bearer x\ty"}
    )
    assert got.url == "https://hooks.example/in/abc"
    assert got.secret is not None and got.secret.get_secret_value() == SECRET
    # The stored form (sealed JSON text) reads back as the same headers.
    again = settings(headers=json.dumps({"Authorization": "Bearer x\ty"}))
    assert again.headers == got.headers == {"Authorization": "Bearer x\ty"}


def test_prepare_makes_a_secret_and_seals_headers_as_text() -> None:
    stored = webhook.prepare(config_values(settings(headers={"X-Token": "t"})))
    assert stored["secret"].startswith("whsec_")
    assert len(webhook.secret_key(stored["secret"])) == webhook.SECRET_BYTES
    assert json.loads(stored["headers"]) == {"X-Token": "t"}
    kept = webhook.prepare(config_values(settings(secret=SECRET, headers={})))
    assert kept["secret"] == SECRET and kept["headers"] is None
    assert webhook.prepare(config_values(settings()))["secret"] != webhook.prepare({"url": URL})["secret"]


def test_kind_declares_its_secrets() -> None:
    kind = REGISTRY["webhook"]
    assert kind is webhook.KIND and kind.secrets == {"url", "secret", "headers"}
    assert kind.limits("webhook:5")[0].key == "webhook:5"
    assert kind.limits("webhook:5")[0].count == webhook.PER_SECOND
    assert kind.destination_of({"id": 5, "kind": "webhook"}) == "webhook:5"


# -- body ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        (
            "down",
            {
                "type": "monitor.down",
                "version": 1,
                "event_id": "0b7c2f7e-0000-4000-8000-000000000001",
                "seq": 4,
                "at": "2026-01-01T10:00:00Z",
                "monitor": {
                    "id": 7,
                    "name": 'Shop "prod" <b>&</b>\\ ✓',
                    "url": "https://shop.example/?a=1&b=<2>",
                },
                "incident_id": 11,
                "started_at": "2026-01-01T10:00:00Z",
                "ended_at": None,
                "duration_seconds": None,
                "cause": {"status_code": 503, "error": "unexpected status 503", "latency_ms": 12.5},
            },
        ),
        (
            "up",
            {
                "type": "monitor.up",
                "at": "2026-01-01T11:02:03Z",
                "ended_at": "2026-01-01T11:02:03Z",
                "duration_seconds": 3723.0,
                "incident_id": 11,
            },
        ),
        (
            "test",
            {
                "type": "channel.test",
                "seq": None,
                "monitor": None,
                "incident_id": None,
                "cause": None,
                "channel": {"name": 'Shop "prod" <b>&</b>\\ ✓'},
            },
        ),
    ],
)
def test_body_per_kind(kind: str, expected: dict[str, Any]) -> None:
    message, covered = webhook.compose([event(kind)])
    assert covered == 1 and message.msg_id == event(kind).event_id
    body = json.loads(message.body)
    assert {k: body[k] for k in expected} == expected
    assert set(body) >= {"type", "version", "event_id", "seq", "at", "monitor", "incident_id", "cause"}


def test_hostile_names_survive_exactly_as_json() -> None:
    name = '"}, "type": "monitor.up", "x": {"' + "\u2028<script>\u0000"
    message, _ = webhook.compose([event(monitor_name=name)])
    assert json.loads(message.body)["monitor"]["name"] == name
    assert json.loads(message.body)["type"] == "monitor.down"


def test_one_event_per_request_and_old_events_as_they_are() -> None:
    events = [event(event_id=f"e{i}", at="2020-01-01T00:00:00Z") for i in range(5)]
    message, covered = webhook.compose(events, max_age=60.0)
    assert covered == 1 and message.msg_id == "e0"
    assert json.loads(message.body)["at"] == "2020-01-01T00:00:00Z"
    with pytest.raises(ValueError):
        webhook.compose([])


def test_unknown_cause_fields_are_left_out() -> None:
    message, _ = webhook.compose([event(cause={"error": "timeout", "internal": "x"})])
    assert json.loads(message.body)["cause"] == {"status_code": None, "error": "timeout", "latency_ms": None}


# -- signing -------------------------------------------------------------------------------


def test_signature_matches_the_specs_test_vector() -> None:
    # The example of the Standard Webhooks libraries (standard-webhooks/standard-webhooks).
    key = webhook.secret_key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
    got = webhook.sign(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, b'{"test": 2432232314}')
    assert got == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_headers_are_signed_and_ours_win() -> None:
    message, _ = webhook.compose([event()])
    channel = {
        "id": 3,
        "url": URL,
        "secret": SECRET,
        "headers": json.dumps({"Authorization": "Bearer t", "webhook-id": "forged"}),
    }
    headers = webhook.request_headers(channel, message, 1_800_000_000)
    assert headers["Authorization"] == "Bearer t"
    assert headers["webhook-id"] == message.msg_id
    assert headers["webhook-timestamp"] == "1800000000"
    assert headers["Content-Type"] == "application/json"
    assert headers["User-Agent"].startswith("monitor/")
    # A receiver verifies: HMAC over "id.timestamp.body" with the key after whsec_.
    key = base64.b64decode(SECRET.removeprefix("whsec_"))
    signed = f"{message.msg_id}.1800000000.".encode() + message.body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    assert headers["webhook-signature"] == f"v1,{expected}"
    assert headers["webhook-signature"] == sign_webhook(SECRET, message.msg_id, 1800000000, message.body)


@pytest.mark.parametrize("secret", [None, "", "whsec_@@@"])
def test_a_missing_or_broken_secret_is_permanent_and_not_quoted(secret: str | None) -> None:
    message, _ = webhook.compose([event()])
    with pytest.raises(DeliveryError) as caught:
        webhook.request_headers({"url": URL, "secret": secret}, message, 1)
    assert caught.value.permanent and "@@@" not in str(caught.value)


# -- answers -------------------------------------------------------------------------------


def reply(status: int, body: bytes = b"", **headers: str) -> Reply:
    return Reply(status, {k.replace("_", "-").lower(): (v,) for k, v in headers.items()}, body)


@pytest.mark.parametrize(
    ("answer", "outcome", "wait"),
    [
        (reply(200, b"ok"), "sent", None),
        (reply(202), "sent", None),
        (reply(204), "sent", None),
        (reply(429, retry_after="7"), "throttled", 7.0),
        (reply(429), "throttled", 1.0),
        (reply(408), "retry", None),
        (reply(425), "retry", None),
        (reply(500, b"boom"), "retry", None),
        (reply(502), "retry", None),
        (reply(503, retry_after="30"), "retry", 30.0),
        (reply(504), "retry", None),
        (reply(410, b"gone"), "permanent", None),
        (reply(400, b"bad"), "permanent", None),
        (reply(401, b"no matching signature"), "permanent", None),
        (reply(403), "permanent", None),
        (reply(404), "permanent", None),
        (reply(413), "permanent", None),
        (reply(301, location="https://elsewhere.example/"), "permanent", None),
        (reply(307), "permanent", None),
    ],
)
def test_answers(answer: Reply, outcome: str, wait: float | None) -> None:
    if outcome == "sent":
        webhook.judge(answer)
        return
    with pytest.raises(DeliveryError) as caught:
        webhook.judge(answer)
    error = caught.value
    assert error.permanent == (outcome == "permanent")
    assert error.throttled == (outcome == "throttled")
    assert error.retry_after == wait
    assert str(error).startswith(f"webhook {answer.status}")


@dataclass
class FakeWeb:
    """``ctx.web`` for the pure path: records the posts, answers ``replies`` in turn."""

    replies: list[Reply]
    posts: list[tuple[str, str, bytes, dict[str, str]]] = field(default_factory=list)

    async def post(self, what: str, url: str, body: bytes, headers: Mapping[str, str]) -> Reply:
        self.posts.append((what, url, body, dict(headers)))
        return self.replies.pop(0)


def context(web: FakeWeb) -> SendContext:
    return SendContext(http=None, web=web, settings=None)  # type: ignore[arg-type]


async def test_send_posts_the_body_signed_and_retries_keep_the_id() -> None:
    web = FakeWeb([reply(503), reply(200)])
    channel = {"id": 3, "kind": "webhook", "name": "n", "url": URL, "secret": SECRET, "headers": None}
    message, _ = webhook.compose([event()])
    with pytest.raises(DeliveryError) as caught:
        await webhook.send(context(web), channel, message)
    assert not caught.value.permanent
    assert URL not in str(caught.value) and SECRET not in str(caught.value)
    await webhook.send(context(web), channel, message)
    (what, url, body, first), (_, _, body2, second) = web.posts
    assert what == "webhook" and url == URL and body == body2 == message.body
    assert first["webhook-id"] == second["webhook-id"] == message.msg_id
    for headers in (first, second):
        assert headers["webhook-signature"] == sign_webhook(
            SECRET, headers["webhook-id"], headers["webhook-timestamp"], body
        )


# -- the other kinds of events ----------------------------------------------------------------

CHECKER = {
    "monitor_id": None,
    "monitor_name": "",
    "monitor_url": None,
    "incident_id": 0,
    "cause": {},
    "seq": None,
}


@pytest.mark.parametrize(
    ("kind", "overrides", "type_", "about_monitor"),
    [
        ("remind", {"details": {"reminder": 2, "reminder_max": None}}, "monitor.reminder", True),
        (
            "acknowledged",
            {"details": {"acknowledged_by": "Ada", "note": "on it"}, "cause": {}},
            "incident.acknowledged",
            True,
        ),
        ("degraded", {"details": {"reason": "slow"}, "incident_id": 5}, "monitor.degraded", True),
        ("degraded_end", {"incident_id": 5}, "monitor.degraded_end", True),
        ("flapping", {"details": {"changes": 7, "window_minutes": 30}}, "monitor.flapping", True),
        ("flapping_end", {"details": {"status": "up", "window_minutes": 30}}, "monitor.flapping_end", True),
        (
            "maintenance_start",
            {"details": {"window": "Nightly", "until": "2026-01-01T12:00:00Z"}},
            "maintenance.started",
            True,
        ),
        ("maintenance_end", {"details": {"window": "Nightly"}}, "maintenance.ended", True),
        (
            "connectivity_lost",
            {**CHECKER, "details": {"reason": "no route"}},
            "checker.connectivity_lost",
            False,
        ),
        (
            "connectivity_restored",
            {**CHECKER, "duration_seconds": 60.0},
            "checker.connectivity_restored",
            False,
        ),
        ("brand_new", {}, "monitor.brand_new", True),
    ],
)
def test_other_kinds_carry_their_type_and_details(
    kind: str, overrides: dict[str, Any], type_: str, about_monitor: bool
) -> None:
    message, covered = webhook.compose([event(kind, **overrides)])
    body = json.loads(message.body)
    assert covered == 1 and body["type"] == type_
    assert body["details"] == overrides.get("details", {})
    assert (body["monitor"] is not None) == about_monitor
    # Only an outage's events name it; a degradation's record, say, is no incident.
    assert body["incident_id"] == (11 if kind in ("remind", "acknowledged") else None)
    if not about_monitor:
        assert body["cause"] is None and body["seq"] is None


def test_every_kind_has_a_type() -> None:
    assert set(webhook.TYPES) == KINDS
    assert len(set(webhook.TYPES.values())) == len(KINDS)


def test_down_and_test_bodies_carry_empty_details() -> None:
    for kind in ("down", "up", "test"):
        assert json.loads(webhook.compose([event(kind)])[0].body)["details"] == {}
