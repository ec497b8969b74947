"""A heartbeat has no URL: its events say null, as the API does, and no channel shows an empty
link, an empty "URL" line or the word None for it."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from monitor.channels import REGISTRY
from monitor.channels.webhook import event_body
from monitor.events import Event
from monitor.models import CheckResult, MonitorSpec

AT = datetime(2026, 12, 1, 3, 30, tzinfo=UTC)


def _event(type_: str = "heartbeat", url: str = "") -> Event:
    spec = MonitorSpec(
        id=7, name="Nightly backup", type=type_, url=url, interval_seconds=3600, timeout_seconds=10,
        confirm_after=1, paused=False,
    )  # fmt: skip
    result = CheckResult(monitor_id=7, time=AT, ok=False, error="no ping since 2026-12-01T03:00:12Z")
    return Event.build(
        event_id=uuid.uuid4(), kind="down", spec=spec, incident_id=3, at=AT, started_at=AT,
        ended_at=None, result=result, channels=[],
    )  # fmt: skip


def test_a_heartbeats_event_has_no_url_and_other_types_keep_theirs() -> None:
    assert _event().monitor_url is None
    assert _event("tcp", "tcp://mail.example.com:25").monitor_url == "tcp://mail.example.com:25"
    # An event written before said "" for none; it reads the same as a new one.
    older = {**_event().to_dict(), "monitor_url": ""}
    assert Event.from_dict(older).monitor_url is None


def test_a_heartbeats_webhook_says_url_null() -> None:
    body = event_body(_event())
    assert body["monitor"] == {"id": 7, "name": "Nightly backup", "url": None}


def _text(payload: Any) -> str:
    """Everything a payload says, as one text."""
    if isinstance(payload, str):
        return payload
    if hasattr(payload, "body"):
        return bytes(payload.body).decode()
    if dataclasses.is_dataclass(payload) and not isinstance(payload, type):
        payload = dataclasses.asdict(payload)
    return json.dumps(payload, ensure_ascii=False, default=str)


# What each kind shows of a monitor with a URL, which a heartbeat must not show empty.
NO_EMPTY_URL: dict[str, Callable[[Any], bool]] = {
    "telegram": lambda text: "\n\n" not in text and not text.endswith("\n"),
    "webhook": lambda payload: json.loads(payload.body)["monitor"]["url"] is None,
    "ntfy": lambda message: message.click is None,
    "slack": lambda payload: "<|" not in _text(payload) and "Monitor #7 · incident #3" in _text(payload),
    "discord": lambda payload: (
        "url" not in payload["embeds"][0]
        and payload["embeds"][0]["footer"] == {"text": "Monitor #7 · incident #3"}
    ),
    "email": lambda mail: "URL" not in mail.text and ">URL<" not in mail.html,
    "pagerduty": lambda alerts: (
        alerts[0]["links"] == [] and "url" not in alerts[0]["payload"]["custom_details"]
    ),
}


def test_every_kind_is_checked() -> None:
    assert set(NO_EMPTY_URL) == set(REGISTRY)


@pytest.mark.parametrize("kind", sorted(NO_EMPTY_URL))
def test_no_channel_shows_an_empty_url_for_a_heartbeat(kind: str) -> None:
    payload, covered = REGISTRY[kind].compose([_event()])
    assert covered == 1
    assert NO_EMPTY_URL[kind](payload), payload
    assert "None" not in _text(payload) and '"url": ""' not in _text(payload), payload
