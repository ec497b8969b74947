"""What a dead letter's listing says it is about: a monitor, a channel's test, the checker."""

from __future__ import annotations

import json
from typing import Any

import pytest

from monitor.alerter.deadletter import _parse


def _event(kind: str, monitor_id: int | None, name: str) -> dict[str, Any]:
    return {"kind": kind, "monitor_id": monitor_id, "monitor_name": name}


ABOUT = [
    ("a monitor's alert", _event("down", 3, "Shop"), 'monitor=3 "Shop"'),
    ("a channel's test", _event("test", None, "On call"), 'channel test "On call"'),
    ("the checker's notice", _event("connectivity_lost", None, ""), "checker"),
    ("a name with quotes", _event("up", 7, 'say "hi"'), r'monitor=7 "say \"hi\""'),
    ("a name not in ASCII", _event("up", 8, "Café"), 'monitor=8 "Café"'),
]


@pytest.mark.parametrize(("event", "about"), [c[1:] for c in ABOUT], ids=[c[0] for c in ABOUT])
def test_a_dead_letter_says_what_its_event_is_about(event: dict[str, Any], about: str) -> None:
    fields = {"event": json.dumps({"event_id": "e-1", **event}), "channel": "telegram:1", "error": "gone"}
    letter = _parse(b"1796050538000-0", fields)
    assert letter.about == about
    assert letter.summary == (
        f"1796050538000-0  2026-11-30 14:55:38Z  {about} kind={event['kind']} event=e-1 "
        "channel=telegram:1  error=gone"
    )
    assert "None" not in letter.summary


def test_an_entry_that_is_not_an_event_says_so() -> None:
    letter = _parse("1796050538000-1", {"v": "99", "error": "unsupported event schema version 99"})
    assert letter.event is None
    assert letter.summary == (
        "1796050538000-1  2026-11-30 14:55:38Z  unreadable event kind=- event=- channel=-  "
        "error=unsupported event schema version 99"
    )
