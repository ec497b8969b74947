"""A status page's model as HTML, Atom and JSON: hostile names are text, nothing inline for
the CSP to forbid, landmarks and text alternatives, a bar per day with its figures, feed ids
that do not move, datetimes in RFC 3339."""

from __future__ import annotations

import functools
import json
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from html.parser import HTMLParser
from typing import Any

import pytest

from monitor import times
from monitor.domain.uptime import Uptime
from monitor.status.render import CSS_URL, FAVICON_ICO_URL, FAVICON_URL, as_json, atom, html
from monitor.status.view import DAY, DAYS, WINDOWS, PageData, build, days_until

H = timedelta(hours=1)
NOW = datetime(2026, 3, 10, 12, 0, 0, 250000, tzinfo=UTC)
API, WEB = 8_000_001, 8_000_002
BASE = "/status/acme"

TITLE = '<script>alert("t")</script> & "Acme" <b>'
DESCRIPTION = "\"><script>alert(1)</script> & more's"
GROUP = "</h2><script>alert('g')</script> & co"
MONITOR = '<img src=x onerror=alert(1)> "api" & <SCRIPT>'
WINDOW = '<script>w</script> "upgrade" & more'
LOGO = 'https://cdn.example.com/logo.png?a=1&b="x"'
HOSTILE = [TITLE, DESCRIPTION, GROUP, MONITOR, WINDOW]

# --- a small page ------------------------------------------------------------------------


def uptime(day: datetime, percent: float | None, down: float | None = 0.0) -> Uptime:
    return Uptime(day, day + DAY, percent, down, 1440, 1440, None)


def page_data(now: datetime = NOW, incidents: bool = True) -> PageData:
    days = days_until(now)
    monitors: list[dict[str, Any]] = [
        {"id": API, "name": MONITOR, "type": "http", "url": "https://internal.example.net/", "paused": False,
         "tags": [], "created_at": now - 200 * DAY, "status": "down", "changed_at": now - 2 * H},
        {"id": WEB, "name": "Web", "type": "http", "url": "https://web.example.net/", "paused": False,
         "tags": ["edge"], "created_at": now - 30 * DAY, "status": "up", "changed_at": now - 9 * DAY},
    ]  # fmt: skip
    daily = {
        API: [uptime(d, 100.0) for d in days[:-2]]
        + [uptime(days[-2], 97.5, 2160.0), uptime(days[-1], 91.0, 7200.0)],
        WEB: [uptime(d, None, None) for d in days[:60]] + [uptime(d, 100.0) for d in days[60:]],
    }
    spans: dict[int, list[tuple[datetime, datetime | None]]] = {
        API: [(days[-2] + 3 * H, days[-2] + 3.6 * H), (now - 2 * H, None)],
    }
    return PageData(
        page={
            "id": 3,
            "title": TITLE,
            "description": DESCRIPTION,
            "logo_url": LOGO,
            "favicon_url": None,
            "show_urls": False,
            "post_history_days": 90,
            "groups": [{"name": GROUP, "monitor_ids": [API], "tags": ["edge"]}],
        },
        monitors=monitors,
        now=now,
        days=days,
        daily=daily,
        windows={m["id"]: {w: uptime(now - d, 99.5) for w, d in WINDOWS.items()} for m in monitors},
        incidents=spans if incidents else {},
        latency={API: [(now - (24 - i) * H, 100.0 + i) for i in range(24)]},
        maintenance=[
            {"name": WINDOW, "from": now + DAY, "to": now + DAY + H, "active": False, "monitor_ids": [API]},
        ],
    )


MODEL = build(page_data())

# --- a small HTML tree -------------------------------------------------------------------

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Node:
    def __init__(self, tag: str, attrs: dict[str, str | None]) -> None:
        self.tag, self.attrs = tag, attrs
        self.children: list[Node | str] = []

    @property
    def classes(self) -> list[str]:
        return (self.attrs.get("class") or "").split()

    @property
    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text for c in self.children)

    def iter(self) -> Iterator[Node]:
        yield self
        for child in self.children:
            if isinstance(child, Node):
                yield from child.iter()

    def all(self, tag: str, cls: str | None = None) -> list[Node]:
        return [n for n in self.iter() if n.tag == tag and (cls is None or cls in n.classes)]

    def one(self, tag: str, cls: str | None = None) -> Node:
        found = self.all(tag, cls)
        assert len(found) == 1, f"{len(found)} <{tag} class={cls}>"
        return found[0]


class TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, dict(attrs))
        assert len(node.attrs) == len(attrs), f"a repeated attribute on <{tag}>"
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        assert tag not in VOID, f"</{tag}>"
        assert self.stack[-1].tag == tag, f"</{tag}> closes <{self.stack[-1].tag}>"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(text: str) -> Node:
    builder = TreeBuilder()
    builder.feed(text)
    builder.close()
    assert builder.stack == [builder.root], "unclosed elements"
    return builder.root


def squash(text: str) -> str:
    return " ".join(text.split())


PAGE = html(MODEL, BASE)


@functools.cache
def tree() -> Node:
    return parse(PAGE)


# --- HTML --------------------------------------------------------------------------------


def test_nothing_executable_nothing_inline() -> None:
    lowered = PAGE.lower()
    assert "<script" not in lowered
    assert "<style" not in lowered
    assert "style=" not in lowered
    assert "javascript:" not in lowered
    for node in tree().iter():
        assert node.tag not in {"script", "style", "iframe", "object", "embed"}
        assert not [a for a in node.attrs if a == "style" or a.startswith("on")], node.tag
    # The only image is the logo, and the only stylesheet the static one.
    assert [n.attrs["src"] for n in tree().all("img")] == [LOGO]
    assert [n.attrs["href"] for n in tree().all("link") if n.attrs["rel"] == "stylesheet"] == [CSS_URL]
    # A page that names no favicon has the default one, as ICO and SVG.
    assert [n.attrs["href"] for n in tree().all("link") if n.attrs["rel"] == "icon"] == [
        FAVICON_ICO_URL,
        FAVICON_URL,
    ]


@pytest.mark.parametrize(
    ("tag", "cls", "expected"),
    [
        ("title", None, f"{TITLE} status"),
        ("h1", "title", TITLE),
        ("p", "description", DESCRIPTION),
        ("h3", "monitor-name", MONITOR),
    ],
)
def test_hostile_text_is_text(tag: str, cls: str | None, expected: str) -> None:
    names = [squash(n.text) for n in tree().all(tag, cls)]
    assert squash(expected) in names


BARS_LABEL = f"Uptime of {MONITOR} per day, the last {DAYS} days (UTC)"


def having(tag: str, attr: str, value: str) -> Node:
    found = [n for n in tree().all(tag) if n.attrs.get(attr) == value]
    assert len(found) == 1, f"{len(found)} <{tag} {attr}={value!r}>"
    return found[0]


@pytest.mark.parametrize(
    ("select", "attr", "expected"),
    [
        (lambda: having("meta", "name", "description"), "content", DESCRIPTION),
        (lambda: tree().one("img", "logo"), "alt", f"{TITLE} logo"),
        (lambda: tree().one("img", "logo"), "src", LOGO),
        (lambda: having("link", "type", "application/atom+xml"), "title", f"{TITLE} incidents"),
        (lambda: having("link", "type", "application/json"), "title", f"{TITLE} status as JSON"),
        (lambda: tree().all("ol", "bars")[0], "aria-label", BARS_LABEL),
    ],
)  # fmt: skip
def test_hostile_attributes_are_whole(select: Callable[[], Node], attr: str, expected: str) -> None:
    assert select().attrs[attr] == expected


def test_a_page_without_a_description_is_described_by_its_title() -> None:
    # What search engines show under the link (Lighthouse counts a page without one a failure).
    plain = parse(html({**MODEL, "description": None}, BASE))
    [meta] = [n for n in plain.all("meta") if n.attrs.get("name") == "description"]
    assert meta.attrs["content"] == f"{TITLE} status: whether each service is up, its uptime and incidents"


def test_hostile_names_elsewhere() -> None:
    assert [squash(n.text) for n in tree().all("h2")] == [
        squash(GROUP),
        "Scheduled maintenance",
        "Incidents",
        "Past incident reports",
    ]
    upcoming = tree().one("section", "maintenance")
    assert squash(upcoming.one("strong").text) == squash(WINDOW)
    assert squash(MONITOR) in squash(upcoming.text)
    incidents = tree().one("section", "incidents")
    assert [squash(n.text) for n in incidents.all("strong")] == [squash(MONITOR)] * 2
    # Escaped in the source, not merely dropped.
    for raw in ["&lt;script&gt;", "&lt;img src=x onerror=alert(1)&gt;", "&amp;", "&#34;"]:
        assert raw in PAGE


def test_landmarks() -> None:
    body = tree().one("body")
    assert [n.tag for n in body.children if isinstance(n, Node)] == ["a", "header", "main", "footer"]
    assert tree().one("a", "skip").attrs["href"] == f"#{tree().one('main').attrs['id']}"
    assert tree().one("html").attrs["lang"] == "en"
    ids = {n.attrs["id"] for n in tree().iter() if "id" in n.attrs}
    labelled = [n.attrs["aria-labelledby"] for n in tree().iter() if "aria-labelledby" in n.attrs]
    assert labelled and all(ref in ids for ref in labelled)
    assert len(ids) == len([n for n in tree().iter() if "id" in n.attrs])  # ids are unique


def monitors() -> dict[str, Node]:
    return {squash(m.one("h3").text): m for m in tree().all("li", "monitor")}


def test_a_bar_per_day_per_monitor() -> None:
    shown = monitors()
    assert list(shown) == [squash(MONITOR), "Web"]
    for item in shown.values():
        bars = item.one("ol", "bars")
        assert len([n for n in bars.children if isinstance(n, Node)]) == DAYS
        assert len(bars.all("li", "bar")) == DAYS == 90
        assert (bars.attrs["aria-label"] or "").endswith(f"the last {DAYS} days (UTC)")


DAYS_SHOWN = days_until(NOW)


@pytest.mark.parametrize(
    ("name", "index", "cls", "tip", "focusable"),
    [
        (MONITOR, 0, "bar-up", f"{DAYS_SHOWN[0].date()}: 100% up", False),
        (MONITOR, 88, "bar-partial", f"{DAYS_SHOWN[-2].date()}: 97.5% up, 1 incident, 36 min down", True),
        (MONITOR, 89, "bar-down", f"{DAYS_SHOWN[-1].date()}: 91% up, 1 incident, 2 h 0 min down", True),
        ("Web", 0, "bar-nodata", f"{DAYS_SHOWN[0].date()}: no data", False),
        ("Web", 89, "bar-up", f"{DAYS_SHOWN[-1].date()}: 100% up", False),
    ],
)
def test_bar_tips(name: str, index: int, cls: str, tip: str, focusable: bool) -> None:
    bar = monitors()[squash(name)].all("li", "bar")[index]
    assert cls in bar.classes
    assert squash(bar.one("span", "tip").text) == tip
    assert ("tabindex" in bar.attrs) is focusable


def test_text_alternatives() -> None:
    api, web = monitors().values()
    spark = api.one("svg", "spark")
    assert spark.attrs["role"] == "img"
    assert spark.attrs["aria-label"] == f"Response time of {MONITOR} per hour over 24 hours, 100 ms to 123 ms"
    assert web.all("svg") == []  # no response times: no chart
    for dot in tree().all("span", "dot"):
        assert dot.attrs["aria-hidden"] == "true"
    assert squash(api.one("span", "state").text) == "Down"
    assert squash(tree().one("section", "overall").text).startswith("Partial outage")


def test_no_target_when_hidden() -> None:
    assert "internal.example.net" not in PAGE and tree().all("p", "target") == []


def test_no_incidents() -> None:
    page = parse(html(build(page_data(incidents=False)), BASE))
    assert "No incidents in the last 90 days." in squash(page.one("section", "incidents").text)


# --- Atom --------------------------------------------------------------------------------

ATOM = "{http://www.w3.org/2005/Atom}"


def feed(model: dict[str, Any] = MODEL, base: str = BASE, page_id: int = 3) -> ET.Element:
    root = ET.fromstring(atom(model, base, page_id))
    assert root.tag == f"{ATOM}feed"
    return root


def ids(root: ET.Element) -> list[str]:
    return [root.findtext(f"{ATOM}id") or ""] + [
        e.findtext(f"{ATOM}id") or "" for e in root.iter(f"{ATOM}entry")
    ]


def test_atom_entries_per_incident() -> None:
    root = feed()
    entries = root.findall(f"{ATOM}entry")
    assert len(entries) == len(MODEL["incidents"]) == 2
    assert root.findtext(f"{ATOM}title") == f"{TITLE}: incidents"
    titles = [e.findtext(f"{ATOM}title") for e in entries]
    assert titles == [f"{MONITOR} is down", f"{MONITOR} was down for 36 min"]
    for entry, incident in zip(entries, MODEL["incidents"], strict=True):
        assert datetime.fromisoformat(entry.findtext(f"{ATOM}published") or "") == incident["started_at"]
        assert (entry.find(f"{ATOM}link") is not None) and entry.find(f"{ATOM}link").get("href") == BASE  # type: ignore[union-attr]
    assert datetime.fromisoformat(root.findtext(f"{ATOM}updated") or "") == max(
        i["ended_at"] or i["started_at"] for i in MODEL["incidents"]
    )


def test_atom_ids_are_stable_uuid_urns() -> None:
    first = ids(feed())
    assert len(set(first)) == len(first) == 3
    for urn in first:
        assert urn.startswith("urn:uuid:")
        assert str(uuid.UUID(urn.removeprefix("urn:uuid:"))) == urn.removeprefix("urn:uuid:")
    assert ids(feed()) == first
    assert ids(feed(build(page_data()))) == first  # built again from the same data
    assert ids(feed(base="https://status.example.com/")) == first  # whatever the host
    data = page_data()
    other = ids(feed(build(replace(data, page={**data.page, "id": 4})), page_id=4))
    assert not set(other) & set(first)
    # Two monitors of one name, down at the same moment, are two entries.
    twin = {"id": 99, **{k: v for k, v in data.monitors[0].items() if k != "id"}}
    group = {"name": GROUP, "monitor_ids": [API, 99], "tags": []}
    incidents = {**data.incidents, 99: list(data.incidents[API])}
    data = replace(
        data, monitors=[*data.monitors, twin], incidents=incidents, page={**data.page, "groups": [group]}
    )
    twins = ids(feed(build(data)))
    assert len(set(twins)) == len(twins) == 5


def test_atom_without_incidents() -> None:
    model = build(page_data(incidents=False))
    root = feed(model)
    assert root.findall(f"{ATOM}entry") == []
    assert datetime.fromisoformat(root.findtext(f"{ATOM}updated") or "") == NOW


# --- JSON --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "now",
    [
        NOW,
        datetime(2026, 3, 10, 23, 30, tzinfo=timezone(timedelta(hours=-4))),
        datetime(2026, 3, 10, 0, 0, tzinfo=timezone(timedelta(hours=5, minutes=30))),
    ],
)
def test_json_round_trips_datetimes(now: datetime) -> None:
    model = build(page_data(now))
    back = json.loads(as_json(model))
    incidents = list(zip(back["incidents"], model["incidents"], strict=True))
    stamps = [
        ("updated_at", back["updated_at"], model["updated_at"]),
        ("since", back["groups"][0]["monitors"][0]["since"], model["groups"][0]["monitors"][0]["since"]),
        ("from", back["maintenance"][0]["from"], model["maintenance"][0]["from"]),
        *[("started_at", b["started_at"], m["started_at"]) for b, m in incidents],
        *[("ended_at", b["ended_at"], m["ended_at"]) for b, m in incidents if m["ended_at"]],
    ]
    for name, text, value in stamps:
        assert text == times.rfc3339(value) and text.endswith("Z"), name
        parsed = datetime.fromisoformat(text)
        assert parsed == value and parsed.utcoffset() == timedelta(0), name
    assert back["incidents"][0]["ended_at"] is None
    assert back["title"] == TITLE and back["groups"][0]["monitors"][0]["name"] == MONITOR
    assert len(back["groups"][0]["monitors"][0]["days"]) == DAYS


def test_json_keeps_non_ascii() -> None:
    model = {**MODEL, "title": "Statut d\u2019Ünïcode ✓"}
    assert "Statut d\u2019Ünïcode ✓" in as_json(model)


def test_json_refuses_unknown_types() -> None:
    with pytest.raises(TypeError, match="set is not JSON"):
        as_json({**MODEL, "extra": {1, 2}})


def test_render_does_not_change_the_model() -> None:
    before = json.dumps(MODEL, default=str, sort_keys=True)
    html(MODEL, BASE)
    atom(MODEL, BASE, 3)
    as_json(MODEL)
    assert json.dumps(MODEL, default=str, sort_keys=True) == before
