"""The pure parts of the order across alerters (monitor/alerter/ordering.py)."""

from __future__ import annotations

from typing import Any

import pytest

from monitor import keys
from monitor.alerter.ordering import order_wait, sending_key, split_older


@pytest.mark.parametrize(
    ("max_attempts", "backoff_max", "claim_idle", "wait"),
    [
        (10, 60.0, 60.0, 720.0),  # the defaults: every retry of the older event, and a takeover
        (1, 1.0, 1.0, 120.0),  # never less than two minutes
        (3, 5.0, 30.0, 120.0),
        (5, 30.0, 10.0, 170.0),
    ],
)
def test_order_wait(max_attempts: int, backoff_max: float, claim_idle: float, wait: float) -> None:
    assert order_wait(max_attempts, backoff_max, claim_idle) == wait


def row(event_id: str, dest: str, stream_id: str | None, published: bool) -> dict[str, Any]:
    return {"event_id": event_id, "dest": dest, "stream_id": stream_id, "published": published}


@pytest.mark.parametrize(
    ("rows", "in_hand", "tracked", "unknown"),
    [
        ([], set(), [], []),
        # on the stream at a known place: waited for
        ([row("e1", "telegram:1", "1-0", True)], set(), ["e1"], []),
        # not published yet: waited for
        ([row("e1", "telegram:1", None, False)], set(), ["e1"], []),
        # published before the stream id was recorded: waited for a while only
        ([row("e1", "telegram:1", None, True)], set(), [], ["e1"]),
        # in our own hands: the destination's sender keeps the order
        ([row("e1", "telegram:1", "1-0", True)], {("e1", "telegram:1")}, [], []),
        # in our hands for another destination only
        (
            [row("e1", "telegram:1", "1-0", True), row("e1", "webhook:2", None, True)],
            {("e1", "telegram:1")},
            [],
            ["e1"],
        ),
    ],
)
def test_split_older(
    rows: list[dict[str, Any]], in_hand: set[tuple[str, str]], tracked: list[str], unknown: list[str]
) -> None:
    got_tracked, got_unknown = split_older(rows, lambda event_id, dest: (event_id, dest) in in_hand)
    assert [r["event_id"] for r in got_tracked] == tracked
    assert [r["event_id"] for r in got_unknown] == unknown


def test_sending_key_is_named_in_keys() -> None:
    assert sending_key("e1", "telegram:-100") == "monitor:alerter:sending:e1:telegram:-100"
    assert sending_key("e1", "x").startswith(keys.SENDING_PREFIX)
