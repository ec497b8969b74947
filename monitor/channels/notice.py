"""What an event says, independent of markup: :func:`notice` turns an event into a
:class:`Notice` (its level, icon, headline, the lines under it, and the short forms that
combined messages and summaries of old alerts use), which every kind renders in its own markup.
No renderer branches on an event's kind: a new kind of event is one builder here
(``_BUILDERS``); a kind this version does not know gets a neutral notice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from monitor.channels.text import (
    Name,
    Text,
    Time,
    clip,
    describe_cause,
    format_duration,
    when,
    write,
)
from monitor.events import Event

# How urgent: "down" (an outage, or a reminder of one), "up" (resolved, good news), "warn"
# (degraded, flapping, the checker cut off), "info" (maintenance begins, an outage
# acknowledged), "test".
Level = Literal["down", "up", "warn", "info", "test"]
LEVELS: tuple[Level, ...] = ("down", "warn", "up", "info", "test")  # most urgent first


@dataclass(frozen=True)
class Line:
    """One thing a notice says under its headline.

    ``label``: what the text is ("Cause"), None for a sentence of its own. ``prose``: the label
    reads into the text ("Outage lasted 5m") rather than naming it ("Cause: ..."). ``since``:
    when what the text measures began, said in prose as "(since ...)", and as a field of its
    own where a kind has fields (Slack, Discord). ``in_gist``: the notice's gist says it
    already, so a message that opens with the gist (an e-mail) leaves it out.
    """

    label: str | None
    text: Text
    prose: bool = False
    since: str | None = None
    in_gist: bool = False

    def sentence(self) -> Text:
        """The line as one sentence: "Cause: x", "Outage lasted 5m (since ...)", "x"."""
        head: Text = () if self.label is None else (f"{self.label}{' ' if self.prose else ': '}",)
        tail: Text = () if self.since is None else (" (since ", Time(self.since), ")")
        return head + self.text + tail

    @property
    def time_only(self) -> bool:
        return len(self.text) == 1 and isinstance(self.text[0], Time)


@dataclass(frozen=True)
class Notice:
    """What one event says, independent of markup.

    ``title``: the headline without its icon ("Shop is DOWN"); ``lines``: what follows it;
    ``gist``: the news in one sentence (a notification's fallback text, an e-mail's first line,
    a PagerDuty summary); ``brief``: the event as one line of a combined message, without icon;
    ``state``: how things stand after it, for a summary of old alerts ("DOWN since ...");
    ``tag``: a word or two in capitals for a subject ("DOWN"); ``aside``: a figure a subject may
    add ("after 5m"); ``url``: the monitor's URL when the event is about a monitor that has one
    (None: a heartbeat, a test message, the checker); ``incident``: the event's ``incident_id``
    names an outage (a down, its reminders, its up), rather than nothing or another record (a
    degradation's).
    """

    kind: str
    level: Level
    icon: str
    tag: str
    title: Text
    gist: Text
    brief: Text
    state: Text
    lines: tuple[Line, ...] = ()
    aside: str | None = None
    url: str | None = None
    incident: bool = False


def tally(levels: Sequence[Level], *, tests_as_up: bool = False) -> str:
    """How many of each in a combined message: "2 down, 1 up" and, when there are any, ", 1
    warning, 1 notice". A test message counts as good news where ``tests_as_up`` (the chats
    have always counted it so), else not at all."""
    down = sum(1 for level in levels if level == "down")
    up = sum(1 for level in levels if level == "up" or (tests_as_up and level == "test"))
    warn = sum(1 for level in levels if level == "warn")
    info = sum(1 for level in levels if level == "info")
    parts = [f"{down} down", f"{up} up"]
    if warn:
        parts.append(f"{warn} warning{'s' if warn != 1 else ''}")
    if info:
        parts.append(f"{info} notice{'s' if info != 1 else ''}")
    return ", ".join(parts)


def most_urgent(levels: Sequence[Level]) -> Level:
    """The level of a combined message: its most urgent alert's."""
    return min(levels, key=LEVELS.index)


# -- the kinds -----------------------------------------------------------------------------

MAX_DETAIL = 500  # a detail's text (a reason, a window's name) in a notice, before markup
MAX_CAUSE = 4000  # a cause: each kind cuts it further to fit its own limits
MAX_COVERED = 10  # monitors named in "Also affects", the rest counted


def _lasted(event: Event) -> str:
    """How long it lasted: the event's duration, else from its start to ``at``."""
    if event.duration_seconds is not None:
        return format_duration(event.duration_seconds)
    try:
        start = datetime.fromisoformat((event.started_at or "").replace("Z", "+00:00"))
        end = datetime.fromisoformat(event.at.replace("Z", "+00:00"))
    except ValueError:
        return format_duration(0)
    return format_duration(max(0.0, (end - start).total_seconds()))


def _detail(event: Event, key: str, default: str = "?") -> str:
    value = event.details.get(key)
    return clip(str(value), MAX_DETAIL) if value not in (None, "") else default


def _covers(names: Any) -> str:
    """``["A", "B", ...]`` -> "A, B, ... J and 5 more"."""
    shown = [clip(str(name), 80) for name in names[:MAX_COVERED]]
    more = len(names) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def _extras(event: Event) -> tuple[Line, ...]:
    """Lines any kind may carry in its details: the monitors that depend on this one, a note."""
    lines: list[Line] = []
    covers = event.details.get("covers")
    if isinstance(covers, list) and covers:
        lines.append(Line("Also affects", (_covers(covers),)))
    if event.details.get("note"):
        lines.append(Line(None, (_detail(event, "note"),)))
    shot = event.details.get("screenshot")
    if isinstance(shot, str) and shot.startswith(("https://", "http://")):
        lines.append(Line("Screenshot", (clip(shot, 2048),)))
    return tuple(lines)


def _down(event: Event) -> Notice:
    name, cause = Name(event.monitor_name), clip(describe_cause(event.cause), MAX_CAUSE)
    since = Time(event.started_at or event.at)
    return Notice(
        kind=event.kind,
        level="down",
        icon="🔴",
        tag="DOWN",
        title=(name, " is DOWN"),
        gist=(name, " is DOWN: ", cause),
        brief=(name, " DOWN: ", cause, ", since ", since),
        state=("DOWN since ", since),
        lines=(Line("Cause", (cause,)), Line("Since", (since,)), *_extras(event)),
        url=event.monitor_url,
        incident=True,
    )


def _up(event: Event) -> Notice:
    name, lasted = Name(event.monitor_name), _lasted(event)
    return Notice(
        kind=event.kind,
        level="up",
        icon="🟢",
        tag="UP",
        title=(name, " is UP again"),
        gist=(name, " is UP again after ", lasted),
        brief=(name, " UP after ", lasted),
        state=("UP at ", Time(event.at)),
        lines=(
            Line("Outage lasted", (lasted,), prose=True, since=event.started_at),
            Line("Recovered", (Time(event.ended_at or event.at),)),
            *_extras(event),
        ),
        aside=f"after {lasted}",
        url=event.monitor_url,
        incident=True,
    )


def _remind(event: Event) -> Notice:
    name, cause = Name(event.monitor_name), clip(describe_cause(event.cause), MAX_CAUSE)
    since = Time(event.started_at or event.at)
    count, most = event.details.get("reminder"), event.details.get("reminder_max")
    which = f"{count if count is not None else '?'}" + (f" of {most}" if most is not None else "")
    return Notice(
        kind=event.kind,
        level="down",
        icon="🔴",
        tag="STILL DOWN",
        title=(name, " is still DOWN"),
        gist=(name, " is still DOWN: ", cause),
        brief=(name, " still DOWN: ", cause, ", since ", since),
        state=("DOWN since ", since),
        lines=(
            Line(None, (f"Reminder {which}",)),
            Line("Down for", (_lasted(event),), prose=True, since=event.started_at or event.at),
            Line("Latest cause", (cause,)),
            *_extras(event),
        ),
        aside=f"reminder {which}",
        url=event.monitor_url,
        incident=True,
    )


def _acknowledged(event: Event) -> Notice:
    """Someone took an open outage in hand (its reminders stop): "Shop acknowledged by Ada: on
    it", the note left out when there is none."""
    name, who = Name(event.monitor_name), _detail(event, "acknowledged_by", "someone")
    note = _detail(event, "note", "")
    said: Text = (name, " acknowledged by ", who) + ((": ", note) if note else ())
    return Notice(
        kind=event.kind,
        level="info",
        icon="👀",
        tag="ACKNOWLEDGED",
        title=(name, " acknowledged by ", who),
        gist=said,
        brief=said,
        state=("DOWN since ", Time(event.started_at or event.at), ", acknowledged"),
        lines=(
            *((Line("Note", (note,), in_gist=True),) if note else ()),
            Line("Down for", (_lasted(event),), prose=True, since=event.started_at or event.at),
            Line(None, ("Reminders of this outage stop; its recovery is still sent",)),
        ),
        aside=f"by {clip(who, 18)}",  # a subject's aside stays short (email.py)
        url=event.monitor_url,
        incident=True,
    )


def _degraded(event: Event) -> Notice:
    name, reason = Name(event.monitor_name), _detail(event, "reason")
    since = Time(event.started_at or event.at)
    return Notice(
        kind=event.kind,
        level="warn",
        icon="🟡",
        tag="DEGRADED",
        title=(name, " is DEGRADED"),
        gist=(name, " is DEGRADED: ", reason),
        brief=(name, " DEGRADED: ", reason, ", since ", since),
        state=("DEGRADED since ", since),
        lines=(Line("Reason", (reason,)), Line("Since", (since,)), *_extras(event)),
        url=event.monitor_url,
    )


def _degraded_end(event: Event) -> Notice:
    name, lasted = Name(event.monitor_name), _lasted(event)
    return Notice(
        kind=event.kind,
        level="up",
        icon="🟢",
        tag="NOT DEGRADED",
        title=(name, " is no longer degraded"),
        gist=(name, " is no longer degraded, after ", lasted),
        brief=(name, " no longer degraded, after ", lasted),
        state=("no longer degraded at ", Time(event.at)),
        lines=(Line("Degraded for", (lasted,), prose=True, since=event.started_at), *_extras(event)),
        aside=f"after {lasted}",
        url=event.monitor_url,
    )


def _flapping(event: Event) -> Notice:
    name = Name(event.monitor_name)
    changes, minutes = _detail(event, "changes"), _detail(event, "window_minutes")
    paused = f"{changes} changes in {minutes} min; alerts paused until it is stable for {minutes} min"
    return Notice(
        kind=event.kind,
        level="warn",
        icon="🟠",
        tag="FLAPPING",
        title=(name, " is FLAPPING"),
        gist=(name, " is FLAPPING: ", paused),
        brief=(name, " FLAPPING: ", f"{changes} changes in {minutes} min"),
        state=("FLAPPING since ", Time(event.at)),
        lines=(Line(None, (paused,), in_gist=True), *_extras(event)),
        url=event.monitor_url,
    )


# What a monitor that stopped flapping is now: its level and icon.
_NOW: dict[str, tuple[Level, str]] = {"up": ("up", "🟢"), "down": ("down", "🔴"), "degraded": ("warn", "🟡")}


def _flapping_end(event: Event) -> Notice:
    name, status = Name(event.monitor_name), _detail(event, "status", "unknown").lower()
    level, icon = _NOW.get(status, ("info", "🔔"))
    now = f" stopped flapping; now {status.upper()}"
    return Notice(
        kind=event.kind,
        level=level,
        icon=icon,
        tag="STABLE",
        title=(name, now),
        gist=(name, now),
        brief=(name, now),
        state=("stable, ", status.upper(), " at ", Time(event.at)),
        lines=_extras(event),
        url=event.monitor_url,
    )


def _maintenance_start(event: Event) -> Notice:
    name, window = Name(event.monitor_name), _detail(event, "window")
    until = Time(str(event.details["until"]) if event.details.get("until") else None)
    return Notice(
        kind=event.kind,
        level="info",
        icon="🔧",
        tag="MAINTENANCE",
        title=("Maintenance for ", name),
        gist=("Maintenance for ", name, ": ", window, " until ", until),
        brief=("Maintenance for ", name, ": ", window, " until ", until),
        state=("in maintenance until ", until),
        lines=(Line("Window", (window, " until ", until)), *_extras(event)),
        url=event.monitor_url,
    )


def _maintenance_end(event: Event) -> Notice:
    name, window = Name(event.monitor_name), _detail(event, "window")
    return Notice(
        kind=event.kind,
        level="up",
        icon="🔧",
        tag="MAINTENANCE OVER",
        title=("Maintenance for ", name, " ended"),
        gist=("Maintenance for ", name, " ended: ", window),
        brief=("Maintenance for ", name, " ended: ", window),
        state=("maintenance over at ", Time(event.at)),
        lines=(Line("Window", (window,)), *_extras(event)),
        url=event.monitor_url,
    )


def _connectivity_lost(event: Event) -> Notice:
    reason = _detail(event, "reason", "no address could be reached")
    return Notice(
        kind=event.kind,
        level="warn",
        icon="⚠️",
        tag="NETWORK",
        title=("The checker's network is down",),
        gist=("The checker's network is down: ", reason),
        brief=("The checker's network is down: ", reason),
        state=("checker cut off since ", Time(event.started_at or event.at)),
        lines=(
            Line("Reason", (reason,)),
            Line("Since", (Time(event.started_at or event.at),)),
            Line(None, ("Checks are recorded as unknown; no monitor is marked down meanwhile",)),
            *_extras(event),
        ),
    )


def _connectivity_restored(event: Event) -> Notice:
    lasted = _lasted(event)
    return Notice(
        kind=event.kind,
        level="up",
        icon="✅",
        tag="NETWORK",
        title=("The checker's network is back",),
        gist=("The checker's network is back, after ", lasted),
        brief=("The checker's network is back, after ", lasted),
        state=("checker back at ", Time(event.at)),
        lines=(Line("Cut off for", (lasted,), prose=True, since=event.started_at), *_extras(event)),
        aside=f"after {lasted}",
    )


def _test(event: Event) -> Notice:
    name = Name(event.monitor_name)  # a test message's is the channel's name
    return Notice(
        kind=event.kind,
        level="test",
        icon="✅",
        tag="TEST",
        title=("Test message from monitor",),
        gist=("Test message from monitor: channel ", name, " works"),
        brief=("test message: channel ", name, " works"),
        state=("test at ", Time(event.at)),
        lines=(Line(None, ("Channel ", name, " works."), in_gist=True),),
    )


def _other(event: Event) -> Notice:
    """A kind this version does not know: said as it is, neither good nor bad news."""
    kind = clip(event.kind, 60)
    about: Text = (Name(event.monitor_name), ": ", kind) if event.monitor_name else (kind,)
    return Notice(
        kind=event.kind,
        level="info",
        icon="🔔",
        tag=clip(kind.upper(), 30),
        title=about,
        gist=about,
        brief=about,
        state=(kind, " at ", Time(event.at)),
        lines=(Line("At", (Time(event.at),)), *_extras(event)),
        url=event.monitor_url if event.monitor_id is not None else None,
    )


# Every kind of event, what it says. A new kind is one builder here (and, for webhooks, its
# type name; for PagerDuty, its route).
_BUILDERS: dict[str, Callable[[Event], Notice]] = {
    "down": _down,
    "up": _up,
    "remind": _remind,
    "acknowledged": _acknowledged,
    "degraded": _degraded,
    "degraded_end": _degraded_end,
    "flapping": _flapping,
    "flapping_end": _flapping_end,
    "maintenance_start": _maintenance_start,
    "maintenance_end": _maintenance_end,
    "connectivity_lost": _connectivity_lost,
    "connectivity_restored": _connectivity_restored,
    "test": _test,
}
KINDS = frozenset(_BUILDERS)


def notice(event: Event) -> Notice:
    """What ``event`` says (a neutral notice for a kind this version does not know)."""
    return _BUILDERS.get(event.kind, _other)(event)


# -- old alerts, summed up -----------------------------------------------------------------


@dataclass(frozen=True)
class MonitorSummary:
    """One monitor's share of a backlog of old alerts: how many of each, and the last one."""

    name: str
    downs: int
    ups: int
    last: Event
    others: int = 0  # alerts neither a down nor an up (reminders, degradations...)

    def counts(self) -> str:
        """How many of each: "1 down, 1 up", and ", 2 others" when there were others."""
        others = f", {self.others} other{'s' if self.others > 1 else ''}" if self.others else ""
        return f"{self.downs} down, {self.ups} up{others}"

    def state(
        self,
        *,
        stamp: Callable[[str | None], str] = when,
        escape: Callable[[str], str] = lambda text: text,
        icons: bool = True,
    ) -> str:
        """How it ended: "🔴 last DOWN since ..." / "🟢 last UP at ..." (times by ``stamp``, words
        by ``escape``), whatever the last event's kind."""
        said = notice(self.last)
        text = write(said.state, lambda words, _limit: escape(words), stamp=stamp)
        return f"{said.icon + ' ' if icons else ''}last {text}"


def summarize(events: Sequence[Event]) -> list[MonitorSummary]:
    """Per monitor (the checker's own alerts as one), in the order first seen: its downs, ups,
    other alerts and last event."""
    by_monitor: dict[int | str, list[Event]] = {}
    for event in events:
        # Without a monitor: the checker's own alerts, or a test message (named by its channel).
        key: int | str = event.monitor_id if event.monitor_id is not None else "checker"
        if event.kind == "test":
            key = f"test:{event.monitor_name}"
        by_monitor.setdefault(key, []).append(event)
    summaries = []
    for seen in by_monitor.values():
        downs = sum(1 for e in seen if e.kind == "down")
        ups = sum(1 for e in seen if e.kind == "up")
        name = seen[-1].monitor_name or "The checker"
        summaries.append(MonitorSummary(name, downs, ups, seen[-1], len(seen) - downs - ups))
    return summaries
