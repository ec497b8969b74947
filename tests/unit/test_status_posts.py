"""Incident posts as visitors see them (``status/view.py``'s ``posts_of``, pure): the order
(open first, then resolved, each newest first), what a post affects named as the page shows it
and only while it does, updates newest first with their sanitised HTML; and how the page, the
permalink and the feed render them (``status/render.py``)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from monitor.status import render
from monitor.status.view import post_of, posts_of

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
PAGE = {"id": 3, "groups": [{"name": "Website", "monitor_ids": [1], "tags": []},
                            {"name": "API", "monitor_ids": [], "tags": ["api"]}]}  # fmt: skip
SHOWN = {1: "Shop", 2: "Gateway"}


def post(pid: int, resolved: bool = False, **fields: Any) -> dict[str, Any]:
    return {
        "id": pid, "title": f"Post {pid}", "impact": "minor",
        "state": "resolved" if resolved else "investigating", "monitor_ids": [1], "groups": ["API"],
        "created_at": T0 + timedelta(minutes=pid), "updated_at": T0 + timedelta(minutes=pid),
        "resolved_at": T0 + timedelta(hours=1) if resolved else None,
        **fields,
    }  # fmt: skip


def update(state: str, text: str, minutes: int) -> dict[str, Any]:
    return {"state": state, "body": text, "created_at": T0 + timedelta(minutes=minutes)}


ORDER: list[tuple[str, list[tuple[int, bool]], list[int]]] = [
    # name, posts (id, resolved), the ids in the order shown
    ("none", [], []),
    ("open ones newest first", [(1, False), (3, False), (2, False)], [3, 2, 1]),
    ("open before resolved", [(5, True), (1, False), (4, True), (2, False)], [2, 1, 5, 4]),
    ("resolved only", [(1, True), (2, True)], [2, 1]),
]


@pytest.mark.parametrize(("posts", "expected"), [r[1:] for r in ORDER], ids=[r[0] for r in ORDER])
def test_the_order_visitors_see(posts: list[tuple[int, bool]], expected: list[int]) -> None:
    shown = posts_of([post(i, r) for i, r in posts], {}, PAGE, SHOWN)
    assert [p["id"] for p in shown] == expected


AFFECTED: list[tuple[str, list[int], list[str], dict[str, list[str]]]] = [
    # name, monitor ids, groups, what visitors read
    ("named as the page names them", [2, 1], ["Website", "API"], {"monitors": ["Gateway", "Shop"],
                                                                  "groups": ["Website", "API"]}),
    ("a monitor the page no longer shows", [1, 9], [], {"monitors": ["Shop"], "groups": []}),
    ("a group the page no longer has", [], ["Gone", "API"], {"monitors": [], "groups": ["API"]}),
    ("nothing", [], [], {"monitors": [], "groups": []}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("monitor_ids", "groups", "expected"), [r[1:] for r in AFFECTED], ids=[r[0] for r in AFFECTED]
)
def test_what_a_post_affects(
    monitor_ids: list[int], groups: list[str], expected: dict[str, list[str]]
) -> None:
    shown = post_of(post(1, monitor_ids=monitor_ids, groups=groups), [], 3, SHOWN, {"Website", "API"})
    assert shown["affected"] == expected
    assert "monitor_ids" not in shown


def test_updates_newest_first_with_their_safe_html() -> None:
    updates = [
        update("investigating", "Looking <script>x()</script>", 1),
        update("identified", "Found **it**", 2),
    ]
    shown = posts_of([post(1)], {1: updates}, PAGE, SHOWN)[0]
    assert [u["state"] for u in shown["updates"]] == ["identified", "investigating"]
    assert shown["updates"][0]["html"] == "<p>Found <strong>it</strong></p>\n"
    assert shown["updates"][1]["html"] == "<p>Looking &lt;script&gt;x()&lt;/script&gt;</p>\n"
    assert shown["ref"] == posts_of([post(1)], {}, PAGE, SHOWN)[0]["ref"]  # stable
    assert shown["ref"] != posts_of([post(2)], {}, PAGE, SHOWN)[0]["ref"]


def test_the_feed_entry_is_updated_at_the_last_update_and_escapes_the_html() -> None:
    updates = [update("investigating", "a <b>", 1), update("identified", "**b**", 7)]
    p = posts_of([post(1, title="<i>x</i>")], {1: updates}, PAGE, SHOWN)[0]
    model = {"title": "Acme", "updated_at": T0, "incidents": [], "posts": [p], "maintenance": []}
    feed = ET.fromstring(render.atom(model, "/status/acme", 3))
    ns = "{http://www.w3.org/2005/Atom}"
    entry = feed.find(f"{ns}entry")
    assert entry is not None
    assert entry.findtext(f"{ns}title") == "<i>x</i> (Investigating)"
    assert entry.findtext(f"{ns}updated") == "2026-11-30T12:07:00Z" == feed.findtext(f"{ns}updated")
    content = entry.findtext(f"{ns}content") or ""
    assert "<strong>b</strong>" in content and "&lt;b&gt;" in content and "<b>" not in content
    assert content.index("Identified") < content.index("Investigating")
