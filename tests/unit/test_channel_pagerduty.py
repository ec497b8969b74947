"""PagerDuty channel: settings, the Events API v2 events, and how PagerDuty's answers are read."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, cast
from unittest.mock import ANY

import pytest
from pydantic import ValidationError

from monitor import channels as registry
from monitor.channels import REGISTRY, pagerduty
from monitor.channels.base import DeliveryError, Reply, SendContext
from monitor.events import Event

KEY = "R0123456789abcdefABCDEF012345678"
NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def event(kind: str = "down", **overrides: Any) -> Event:
    data: dict[str, Any] = {
        "event_id": "0b9e3f0e-1111-4c1e-9d7a-000000000001",
        "kind": kind,
        "monitor_id": 7,
        "monitor_name": "<shop> & co",
        "monitor_url": "https://shop.example:8443/health?x=1",
        "telegram_chat_id": None,
        "incident_id": 3,
        "at": "2026-01-01T11:59:00Z",
        "started_at": "2026-01-01T11:59:00Z",
        "ended_at": None,
        "duration_seconds": None,
        "cause": {"status_code": 500, "error": None, "latency_ms": 12.0},
        "seq": 1,
    }
    if kind == "up":
        data.update(
            event_id="0b9e3f0e-1111-4c1e-9d7a-000000000002",
            at="2026-01-01T12:04:00Z",
            ended_at="2026-01-01T12:04:00Z",
            duration_seconds=300.0,
            after_event_id="0b9e3f0e-1111-4c1e-9d7a-000000000001",
            seq=2,
        )
    if kind == "test":
        data.update(monitor_id=None, monitor_url=None, incident_id=0, started_at=None, cause={}, seq=None)
    data.update(overrides)
    return Event(**data)


# -- settings ------------------------------------------------------------------------------


def test_settings_defaults_and_secret() -> None:
    config = pagerduty.PagerDutySettings.model_validate({"routing_key": f" {KEY} "})
    assert config.routing_key.get_secret_value() == KEY
    assert config.url == "https://events.pagerduty.com/v2/enqueue" and config.severity == "critical"
    assert KEY not in repr(config)
    assert REGISTRY["pagerduty"].secrets == {"routing_key"}


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ({"routing_key": KEY[:31]}, "32-character"),
        ({"routing_key": KEY + "0"}, "32-character"),
        ({"routing_key": KEY[:31] + "-"}, "32-character"),
        ({}, "Field required"),
        ({"routing_key": KEY, "severity": "fatal"}, "'critical', 'error', 'warning' or 'info'"),
        ({"routing_key": KEY, "url": "ftp://events.example/v2/enqueue"}, "scheme 'ftp' not allowed"),
        ({"routing_key": KEY, "url": "https://user:pw@events.example/"}, "credentials"),
        ({"routing_key": KEY, "extra": True}, "Extra inputs"),
    ],
)
def test_settings_refused(given: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValidationError) as caught:
        pagerduty.PagerDutySettings.model_validate(given)
    assert problem in str(caught.value)
    for error in caught.value.errors():
        assert KEY[:31] not in str(error["msg"])


# -- events ----------------------------------------------------------------------------------


def test_down_triggers_and_up_resolves_the_same_key() -> None:
    (trigger,) = pagerduty.render(event())
    (resolve,) = pagerduty.render(event("up"))
    assert trigger["event_action"] == "trigger" and resolve["event_action"] == "resolve"
    assert trigger["dedup_key"] == resolve["dedup_key"] == "monitor-7-incident-3"
    payload = trigger["payload"]
    assert payload["summary"] == "<shop> & co is DOWN: HTTP 500"
    assert payload["source"] == "shop.example" and payload["component"] == "<shop> & co"
    assert payload["timestamp"] == "2026-01-01T11:59:00Z"
    assert payload["custom_details"]["status_code"] == 500
    assert trigger["links"] == [{"href": "https://shop.example:8443/health?x=1", "text": "Monitored URL"}]
    assert "routing_key" not in trigger and "severity" not in payload  # the channel's, added by send
    assert "payload" not in resolve


@pytest.mark.parametrize(
    ("overrides", "summary", "source"),
    [
        ({"monitor_name": "x" * 2000}, "x" * 1023 + "…", "shop.example"),
        (
            {"cause": {"error": "timed out after 10s waiting for the response head"}},
            "timed out",
            "shop.example",
        ),
        ({"monitor_url": "not a url"}, "HTTP 500", "<shop> & co"),
        ({"monitor_url": None}, "HTTP 500", "<shop> & co"),
    ],
)
def test_summary_and_source_limits(overrides: dict[str, Any], summary: str, source: str) -> None:
    (trigger,) = pagerduty.render(event(**overrides))
    assert summary in trigger["payload"]["summary"] and len(trigger["payload"]["summary"]) <= 1024
    assert trigger["payload"]["source"] == source


def test_test_is_an_info_alert_resolved_at_once() -> None:
    first, second = pagerduty.render(event("test"))
    assert first["event_action"] == "trigger" and first["payload"]["severity"] == "info"
    assert second == {"event_action": "resolve", "dedup_key": first["dedup_key"]}
    assert first["dedup_key"] == "monitor-test-0b9e3f0e-1111-4c1e-9d7a-000000000001"


def test_compose_one_event_per_request() -> None:
    events = [event(), event("up")]
    payload, covered = pagerduty.compose(events, max_age=3600, now=NOW)
    assert covered == 1 and payload[0]["event_action"] == "trigger"
    with pytest.raises(ValueError):
        pagerduty.compose([])


@pytest.mark.parametrize(
    ("events", "sends"),
    [
        # An old DOWN whose UP is already queued: nobody is paged for an outage that is over.
        ([event(at="2025-12-31T00:00:00Z"), event("up", at="2025-12-31T00:05:00Z")], []),
        # An old DOWN still open: it is paged, late but true.
        ([event(at="2025-12-31T00:00:00Z")], ["trigger"]),
        # Another incident's UP does not cancel it.
        ([event(at="2025-12-31T00:00:00Z"), event("up", incident_id=2)], ["trigger"]),
        # A fresh DOWN and its UP: both go (the outage happened).
        ([event(), event("up")], ["trigger"]),
    ],
)
def test_compose_skips_stale_pages_already_over(events: list[Event], sends: list[str]) -> None:
    payload, covered = pagerduty.compose(events, max_age=3600, now=NOW)
    assert covered == 1 and [e["event_action"] for e in payload] == sends


def test_limits_per_integration() -> None:
    (bucket,) = pagerduty.limits("pagerduty:4")
    assert (bucket.key, bucket.count) == ("pagerduty:4", 120) and 60 <= bucket.per <= 61


# -- sending and PagerDuty's answers --------------------------------------------------------


class FakeWeb:
    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.posts: list[tuple[str, dict[str, Any], Mapping[str, str]]] = []

    async def post(self, what: str, url: str, body: bytes, headers: Mapping[str, str]) -> Reply:
        self.posts.append((url, json.loads(body), headers))
        return self.replies.pop(0) if self.replies else ACCEPTED


ACCEPTED = Reply(202, {}, b'{"status":"success","message":"Event processed","dedup_key":"k"}')
INVALID = Reply(
    400,
    {},
    b'{"status":"invalid event","message":"Event object is invalid",'
    b'"errors":["\'payload.summary\' is missing or blank"]}',
)

ECHOED = f'{{"status":"invalid event","errors":["bad key {KEY}"]}}'.encode()


def ctx(web: FakeWeb) -> SendContext:
    return SendContext(http=cast(Any, None), web=cast(Any, web), settings=cast(Any, None))


def channel(**overrides: Any) -> dict[str, Any]:
    return {"id": 4, "kind": "pagerduty", "name": "On call", "routing_key": KEY, **overrides}


async def test_send_adds_routing_key_and_severity() -> None:
    web = FakeWeb()
    await pagerduty.deliver(
        ctx(web), channel(severity="error", url="http://127.0.0.1:9/v2/enqueue"), pagerduty.render(event())
    )
    ((url, body, headers),) = web.posts
    assert url == "http://127.0.0.1:9/v2/enqueue" and headers["Content-Type"] == "application/json"
    assert body["routing_key"] == KEY and body["payload"]["severity"] == "error"


async def test_test_sends_trigger_then_resolve() -> None:
    web = FakeWeb()
    await pagerduty.deliver(ctx(web), channel(), pagerduty.render(event("test")))
    assert [b["event_action"] for _, b, _ in web.posts] == ["trigger", "resolve"]
    assert web.posts[0][1]["payload"]["severity"] == "info"


async def test_nothing_to_send_sends_nothing() -> None:
    web = FakeWeb()
    await pagerduty.deliver(ctx(web), channel(), [])
    assert web.posts == []


@pytest.mark.parametrize(
    ("reply", "permanent", "throttled", "wait", "says"),
    [
        (INVALID, True, False, None, "pagerduty 400: Event object is invalid: 'payload.summary' is missing"),
        (Reply(400, {}, ECHOED), True, False, None, "<routing key>"),
        (Reply(429, {}, b""), False, True, 5.0, "pagerduty 429"),
        (Reply(429, {"retry-after": ("30",)}, b""), False, True, 30.0, "pagerduty 429"),
        (Reply(500, {}, b'{"status":"error","message":"Server Error"}'), False, False, None, "pagerduty 500"),
        (Reply(502, {}, b"<html>Bad gateway</html>"), False, False, None, "pagerduty 502"),
        (Reply(503, {"retry-after": ("7",)}, b""), False, False, 7.0, "pagerduty 503"),
        (Reply(403, {}, b"Forbidden"), True, False, None, "pagerduty 403"),
        (Reply(404, {}, b"Not Found"), True, False, None, "pagerduty 404"),
        (Reply(408, {}, b""), False, False, None, "pagerduty 408"),
    ],
)  # fmt: skip
async def test_answers(reply: Reply, permanent: bool, throttled: bool, wait: float | None, says: str) -> None:
    with pytest.raises(DeliveryError) as caught:
        await pagerduty.deliver(ctx(FakeWeb(reply)), channel(), pagerduty.render(event()))
    got = caught.value
    assert (got.permanent, got.throttled, got.retry_after) == (permanent, throttled, wait)
    assert says in str(got) and KEY not in str(got)


async def test_a_failed_resolve_of_a_test_fails_the_send() -> None:
    web = FakeWeb(ACCEPTED, Reply(500, {}, b""))
    with pytest.raises(DeliveryError) as caught:
        await pagerduty.deliver(ctx(web), channel(), pagerduty.render(event("test")))
    assert not caught.value.permanent and len(web.posts) == 2


async def test_unreachable_is_the_guarded_clients_error() -> None:
    class Blocked(FakeWeb):
        async def post(self, what: str, url: str, body: bytes, headers: Mapping[str, str]) -> Reply:
            raise DeliveryError(f"{what} unreachable: blocked: 10.0.0.1 (private-use)", permanent=True)

    with pytest.raises(DeliveryError) as caught:
        await pagerduty.deliver(
            ctx(Blocked()), channel(url="http://10.0.0.1/v2/enqueue"), pagerduty.render(event())
        )
    assert caught.value.permanent and "blocked" in str(caught.value)


async def test_invalid_stored_settings_are_permanent_and_quiet() -> None:
    with pytest.raises(DeliveryError) as caught:
        await pagerduty.deliver(ctx(FakeWeb()), channel(routing_key="short-key"), pagerduty.render(event()))
    assert caught.value.permanent and "short-key" not in str(caught.value)


# -- the other kinds of events ----------------------------------------------------------------

CHECKER = {"monitor_id": None, "monitor_name": "", "monitor_url": None, "incident_id": 0, "cause": {}}


@pytest.mark.parametrize(
    ("kind", "overrides", "action", "key", "severity"),
    [
        ("down", {}, "trigger", "monitor-7-incident-3", None),  # the channel's
        ("up", {}, "resolve", "monitor-7-incident-3", None),
        # Acknowledged here: the open alert is acknowledged there (it stops escalating).
        ("acknowledged", {"details": {"acknowledged_by": "A"}}, "acknowledge", "monitor-7-incident-3", None),
        ("degraded", {"details": {"reason": "slow"}}, "trigger", "monitor-7-degraded", "warning"),
        ("degraded_end", {"incident_id": 0}, "resolve", "monitor-7-degraded", None),
        ("connectivity_lost", {**CHECKER, "details": {"reason": "no route"}}, "trigger",
         "monitor-checker-connectivity", "critical"),
        ("connectivity_restored", CHECKER, "resolve", "monitor-checker-connectivity", None),
        # PagerDuty re-notifies by itself, and an open alert already says the monitor is down.
        ("remind", {"details": {"reminder": 1}}, None, None, None),
        ("flapping", {"details": {"changes": 5, "window_minutes": 30}}, None, None, None),
        ("flapping_end", {"details": {"status": "up"}}, None, None, None),
        ("maintenance_start", {"details": {"window": "W", "until": "2026-01-01T13:00Z"}}, None, None, None),
        ("maintenance_end", {"details": {"window": "W"}}, None, None, None),
        ("brand_new", {}, None, None, None),
    ],
)  # fmt: skip
def test_each_kinds_route(
    kind: str, overrides: dict[str, Any], action: str | None, key: str | None, severity: str | None
) -> None:
    sent = pagerduty.render(event(kind, **overrides))
    assert pagerduty.dedup_key(event(kind, **overrides)) == key
    if action is None:
        assert sent == []
        return
    (item,) = sent
    assert (item["event_action"], item["dedup_key"]) == (action, key)
    if action == "trigger":
        assert item["payload"].get("severity") == severity


def test_a_degradation_says_why_and_the_checker_alert_names_no_monitor() -> None:
    (degraded,) = pagerduty.render(event("degraded", details={"reason": "response time 812 ms above 500 ms"}))
    payload = degraded["payload"]
    assert payload["summary"] == "<shop> & co is DEGRADED: response time 812 ms above 500 ms"
    assert payload["custom_details"]["reason"] == "response time 812 ms above 500 ms"
    (lost,) = pagerduty.render(event("connectivity_lost", **{**CHECKER, "details": {"reason": "no route"}}))
    payload = lost["payload"]
    assert payload["summary"] == "The checker's network is down: no route"
    assert (payload["source"], payload["component"]) == ("monitor", "checker")
    assert "monitor" not in payload["custom_details"] and lost["links"] == []


async def test_a_routes_severity_wins_over_the_channels() -> None:
    web = FakeWeb()
    await pagerduty.deliver(ctx(web), channel(severity="critical"), pagerduty.render(event("degraded")))
    ((_, body, _),) = web.posts
    assert body["payload"]["severity"] == "warning"


@pytest.mark.parametrize(
    ("kinds", "covered", "sends"),
    [
        # Events PagerDuty is not sent go together, with nothing to send...
        (["remind", "flapping", "maintenance_start", "down"], 3, []),
        # ...and the next one is sent on its own.
        (["down", "remind"], 1, ["trigger"]),
        (["remind"], 1, []),
    ],
)
def test_compose_covers_what_is_not_sent_at_once(kinds: list[str], covered: int, sends: list[str]) -> None:
    payload, n = pagerduty.compose([event(kind) for kind in kinds], max_age=3600, now=NOW)
    assert n == covered and [e["event_action"] for e in payload] == sends


def test_an_old_acknowledgement_of_an_outage_already_over_is_not_sent() -> None:
    old = event("acknowledged", at="2025-12-31T00:00:00Z", details={"acknowledged_by": "Ada"})
    over = event("up", at="2025-12-31T00:05:00Z")
    assert pagerduty.compose([old, over], max_age=3600, now=NOW) == ([], 1)
    fresh = event("acknowledged", at=NOW.isoformat(), details={"acknowledged_by": "Ada"})
    assert pagerduty.compose([fresh, over], max_age=3600, now=NOW)[0] == [
        {"event_action": "acknowledge", "dedup_key": "monitor-7-incident-3"}
    ]


async def test_an_acknowledgement_is_sent_with_the_routing_key_only() -> None:
    web = FakeWeb()
    await pagerduty.deliver(ctx(web), channel(), pagerduty.render(event("acknowledged")))
    ((_, body, _),) = web.posts
    assert body == {"event_action": "acknowledge", "dedup_key": "monitor-7-incident-3", "routing_key": ANY}


def test_an_old_degradation_already_over_is_not_paged() -> None:
    old = event("degraded", at="2025-12-31T00:00:00Z", details={"reason": "slow"})
    over = event("degraded_end", at="2025-12-31T00:05:00Z", incident_id=0)
    assert pagerduty.compose([old, over], max_age=3600, now=NOW) == ([], 1)
    assert pagerduty.compose([old], max_age=3600, now=NOW)[0][0]["event_action"] == "trigger"


@pytest.mark.parametrize(
    ("kind", "paged"),
    [("down", True), ("up", True), ("degraded", True), ("acknowledged", True), ("remind", False),
     ("flapping", False),
     ("maintenance_start", False), ("maintenance_end", False), ("flapping_end", False)],
)  # fmt: skip
def test_only_the_kinds_it_routes_are_addressed_to_it(kind: str, paged: bool) -> None:
    # An event is addressed to a PagerDuty channel only if PagerDuty has a route for its kind:
    # a reminder costs no delivery row, no pacing token and no "sent" that sent nothing.
    channels = [
        {"id": 1, "kind": "pagerduty", "name": "on-call", "routing_key": "R" * 32},
        {"id": 2, "kind": "telegram", "name": "chat", "chat_id": "42"},
    ]
    targets = event(kind, channels=channels).targets(registry.destination)
    assert ("pagerduty:1" in targets) is paged
    assert any(key.startswith("telegram") for key in targets)
