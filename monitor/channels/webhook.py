"""Webhooks: one signed JSON POST per event, the Standard Webhooks way.

The body is a versioned event (``event_body``, documented in docs/webhooks.md); the headers
``webhook-id`` (the event's id, the same on every retry, so a receiver drops a replay),
``webhook-timestamp`` (unix seconds when this attempt was made) and ``webhook-signature``
(``v1,`` and the base64 HMAC-SHA256 of ``"{id}.{timestamp}.{body}"`` with the secret's key)
are those of https://www.standardwebhooks.com/, so a receiver verifies with any of that
spec's libraries. The URL is the user's: it goes through the checks' guarded client.

Limit: a receiver's is unknown. ``PER_SECOND`` (10 a second per channel) is far above what
alerts need (fifty monitors down at once arrive in five seconds) and low enough not to swamp
a small receiver (a home server's automation, a function with little concurrency); one that
wants less answers 429 with ``Retry-After``, which holds the channel for every alerter.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from monitor import __version__
from monitor.channels.base import (
    Bucket,
    ChannelKind,
    DeliveryError,
    Reply,
    SendContext,
    classify,
    without_url,
)
from monitor.channels.notice import notice
from monitor.events import Event
from monitor.net.policy import InvalidTarget, parse_target_url
from monitor.net.target import FRAMING_HEADERS

PAYLOAD_VERSION = 1
# The body's ``type`` for each kind of event (docs/webhooks.md); a kind this version does not
# know is sent as "monitor.<kind>".
TYPES = {
    "down": "monitor.down",
    "up": "monitor.up",
    "remind": "monitor.reminder",
    "acknowledged": "incident.acknowledged",
    "degraded": "monitor.degraded",
    "degraded_end": "monitor.degraded_end",
    "flapping": "monitor.flapping",
    "flapping_end": "monitor.flapping_end",
    "maintenance_start": "maintenance.started",
    "maintenance_end": "maintenance.ended",
    "connectivity_lost": "checker.connectivity_lost",
    "connectivity_restored": "checker.connectivity_restored",
    "test": "channel.test",
}
SECRET_PREFIX = "whsec_"
SECRET_BYTES = 24  # what we generate; the spec's range for a secret's key is 24 to 64 bytes
SECRET_KEY_RANGE = (24, 64)
PER_SECOND = 10
MAX_URL_LENGTH = 2048
MAX_HEADERS = 10
MAX_HEADER_NAME = 64
MAX_HEADER_VALUE = 1024
USER_AGENT = f"monitor/{__version__} (webhooks; +https://www.standardwebhooks.com/)"
# Headers the request sets itself: framing, and what the signature and body depend on.
RESERVED_HEADERS = FRAMING_HEADERS | {
    "host",
    "content-type",
    "user-agent",
    "webhook-id",
    "webhook-timestamp",
    "webhook-signature",
}
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # every control character but HTAB
_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def new_secret() -> str:
    """A signing secret as the spec writes one: ``whsec_`` and base64 of 24 random bytes."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def secret_key(secret: str) -> bytes:
    """The HMAC key of a ``whsec_`` secret; ``ValueError`` (never quoting it) if it is not one."""
    if not secret.startswith(SECRET_PREFIX):
        raise ValueError(f"must start with {SECRET_PREFIX!r} (a Standard Webhooks secret)")
    try:
        key = base64.b64decode(secret.removeprefix(SECRET_PREFIX), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"must be {SECRET_PREFIX!r} followed by standard base64") from None
    low, high = SECRET_KEY_RANGE
    if not low <= len(key) <= high:
        raise ValueError(f"its key must be {low} to {high} bytes (base64 after {SECRET_PREFIX!r})")
    return key


def sign(key: bytes, msg_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` value: ``v1,`` + base64 HMAC-SHA256 of ``id.timestamp.body``."""
    digest = hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def _headers(value: Any) -> Any:
    # The stored form is sealed JSON text (see ``prepare``); a PATCH that sends the mask back
    # gets the stored text here.
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ValueError("must be an object of header name -> value") from None
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError("must be an object of header name -> value")
    if len(value) > MAX_HEADERS:
        raise ValueError(f"at most {MAX_HEADERS} headers")
    seen: set[str] = set()
    for name, text in value.items():
        if not name or len(name) > MAX_HEADER_NAME or not set(name) <= _TOKEN:
            raise ValueError(f"header names are 1-{MAX_HEADER_NAME} token characters (RFC 9110)")
        key = name.lower()
        if key in RESERVED_HEADERS:
            raise ValueError(f"{name[:MAX_HEADER_NAME]!r} is set by the webhook itself")
        if key in seen:
            raise ValueError(f"{name!r} given twice")
        seen.add(key)
        # Never quote a value: it may be a credential.
        if not isinstance(text, str) or len(text) > MAX_HEADER_VALUE:
            raise ValueError(f"header {name!r}: the value must be text of at most {MAX_HEADER_VALUE} chars")
        if _CONTROL.search(text):
            raise ValueError(f"header {name!r}: the value may not contain control characters")
    return value


class WebhookSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(
        description="http:// or https:// receiver; read back as '********' (a receiver's URL is often "
        "its only credential)"
    )
    secret: SecretStr | None = Field(
        None,
        description="Standard Webhooks signing secret ('whsec_' + base64 of 24-64 bytes); "
        "made for you when left out, and shown once, in the answer that creates the channel",
    )
    headers: Annotated[
        dict[str, str] | None,
        Field(
            description=f"extra request headers (at most {MAX_HEADERS}), e.g. a receiver's own "
            "Authorization; stored encrypted and read back as '********'"
        ),
    ] = None

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        try:
            stored = str(parse_target_url(value))
        except InvalidTarget as exc:
            raise ValueError(str(exc)) from None
        if len(stored) > MAX_URL_LENGTH:
            raise ValueError(f"longer than {MAX_URL_LENGTH} characters as stored")
        return stored

    @field_validator("secret")
    @classmethod
    def _secret(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            secret_key(value.get_secret_value())
        return value

    @field_validator("headers", mode="before")
    @classmethod
    def _headers(cls, value: Any) -> Any:
        return _headers(value)


def prepare(config: dict[str, Any]) -> dict[str, Any]:
    """The config as stored: a signing secret made if none was given, and the headers as one
    JSON text, so that they are sealed at rest like the other secrets."""
    config = dict(config)
    if not config.get("secret"):
        config["secret"] = new_secret()
    headers = config.get("headers")
    if isinstance(headers, dict):
        config["headers"] = json.dumps(headers, separators=(",", ":")) if headers else None
    return config


def event_body(event: Event) -> dict[str, Any]:
    """The JSON a receiver gets for one event (version ``PAYLOAD_VERSION``; docs/webhooks.md).

    ``channel.test`` has no monitor, incident or cause; it names the channel instead. The
    checker's own events (``checker.*``) have no monitor either; only an outage's events (down,
    reminders, its acknowledgement, up) name an incident. ``details``: the kind's own
    figures (a reminder's number, a degradation's reason...), ``{}`` for none.
    """
    test = event.kind == "test"
    body: dict[str, Any] = {
        "type": TYPES.get(event.kind, f"monitor.{event.kind}"),
        "version": PAYLOAD_VERSION,
        "event_id": event.event_id,
        "seq": event.seq,
        "at": event.at,
        "monitor": {"id": event.monitor_id, "name": event.monitor_name, "url": event.monitor_url}
        if event.about_monitor
        else None,
        "incident_id": event.incident_id if notice(event).incident and event.incident_id else None,
        "started_at": event.started_at,
        "ended_at": event.ended_at,
        "duration_seconds": event.duration_seconds,
        "cause": {k: event.cause.get(k) for k in ("status_code", "error", "latency_ms")}
        if not test and event.cause
        else None,
        "details": dict(event.details),
    }
    if test:
        body["channel"] = {"name": event.monitor_name}
    return body


@dataclass(frozen=True)
class WebhookMessage:
    """One request's content: the id it is signed and deduplicated by, and the exact body."""

    msg_id: str
    body: bytes


def compose(
    events: list[Event], *, max_age: float | None = None, now: datetime | None = None
) -> tuple[WebhookMessage, int]:
    """The first event as its own request. Old events are sent as they are (``at`` says when):
    a receiver is a program, and wants each event, not a summary."""
    if not events:
        raise ValueError("nothing to compose")
    event = events[0]
    body = json.dumps(event_body(event), separators=(",", ":"), ensure_ascii=False).encode()
    return WebhookMessage(event.event_id, body), 1


def request_headers(channel: Mapping[str, Any], message: WebhookMessage, timestamp: int) -> dict[str, str]:
    """The headers of one attempt: the channel's own, then ours (which it may not replace)."""
    secret = channel.get("secret")
    if not isinstance(secret, str) or not secret:
        raise DeliveryError("webhook has no signing secret", permanent=True)
    try:
        key = secret_key(secret)
    except ValueError as exc:
        raise DeliveryError(f"webhook secret: {exc}", permanent=True) from None
    extra = channel.get("headers")
    if isinstance(extra, str):
        extra = json.loads(extra)
    headers = {str(k): str(v) for k, v in (extra or {}).items() if str(k).lower() not in RESERVED_HEADERS}
    headers.update(
        {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            "webhook-id": message.msg_id,
            "webhook-timestamp": str(timestamp),
            "webhook-signature": sign(key, message.msg_id, timestamp, message.body),
        }
    )
    return headers


def judge(reply: Reply, url: str = "") -> None:
    """Sent on 2xx; 429 waits (``Retry-After``); 408, 425 and 5xx retry; a redirect (not
    followed: the receiver's final URL belongs in the setting), 410 Gone and other 4xx are
    permanent."""
    if 300 <= reply.status < 400:
        raise DeliveryError(
            f"webhook {reply.status}: redirects are not followed; set the receiver's final URL",
            permanent=True,
        )
    # An answer may echo the URL ("Cannot POST /hook/<token>"): it is the credential.
    classify("webhook", reply, detail=without_url(reply.text(120), url))


async def send(ctx: SendContext, channel: Mapping[str, Any], payload: Any) -> None:
    message: WebhookMessage = payload
    headers = request_headers(channel, message, int(time.time()))
    url = str(channel["url"])
    judge(await ctx.web.post("webhook", url, message.body, headers), url)


def limits(destination: str) -> list[Bucket]:
    return [Bucket(destination, PER_SECOND, 1.0)]


KIND = ChannelKind(
    name="webhook",
    title="Webhook",
    config=WebhookSettings,
    compose=compose,
    send=send,
    limits=limits,
    secrets=frozenset({"url", "secret", "headers"}),
    targets=("url",),
    prepare=prepare,
)
