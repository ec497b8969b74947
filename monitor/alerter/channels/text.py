"""Pure text helpers every kind's renderer shares: durations, causes, times, clipping.

Plain text only; each kind escapes for its own markup (HTML, mrkdwn, Markdown) itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar
from urllib.parse import quote

from monitor.events import Event

P = TypeVar("P")


def format_duration(seconds: float) -> str:
    """``3725`` -> ``"1h 2m 5s"``; whole seconds, the largest units first."""
    seconds = round(seconds)
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            parts.append(f"{seconds // size}{unit}")
            seconds %= size
    if seconds or not parts:
        parts.append(f"{seconds}s")
    return " ".join(parts)


def when(value: str | None) -> str:
    """An event's RFC 3339 time as ``YYYY-MM-DD HH:MM:SS UTC``; ``?`` when absent."""
    if not value:
        return "?"
    return datetime.fromisoformat(value.replace("Z", "+00:00")).strftime("%Y-%m-%d %H:%M:%S UTC")


def describe_cause(cause: dict[str, object]) -> str:
    """What made the check fail: its error, else its status code."""
    if cause.get("error"):
        return str(cause["error"])
    if cause.get("status_code") is not None:
        return f"HTTP {cause['status_code']}"
    return "check failed"


def clip(text: str, size: int) -> str:
    """At most ``size`` characters, an ellipsis marking a cut."""
    return text if len(text) <= size else text[: size - 1] + "…"


def stale_count(events: Sequence[Event], max_age: float | None, now: datetime | None = None) -> int:
    """How many of ``events``, from the front, are older than ``max_age`` seconds (none without
    a max age): alerts that waited while alerts could not be sent, to be summed up in one
    message rather than sent one by one as if they were news."""
    if max_age is None:
        return 0
    stale = 0
    for event in events:
        if event.age_seconds(now) <= max_age:
            break
        stale += 1
    return stale


def lead(
    events: Sequence[Event],
    max_age: float | None,
    now: datetime | None,
    summary: Callable[[list[Event], float], P],
    render: Callable[[Event], P],
) -> tuple[P, int] | None:
    """What every composer does first: old alerts at the front summed up in one message
    (:func:`stale_count`), a lone event rendered alone; None when several fresh events wait,
    for the kind to combine as it can."""
    if not events:
        raise ValueError("nothing to compose")
    stale = stale_count(events, max_age, now)
    if stale:
        assert max_age is not None
        return summary(list(events[:stale]), max_age), stale
    if len(events) == 1:
        return render(events[0]), 1
    return None


@dataclass(frozen=True)
class MonitorSummary:
    """One monitor's share of a backlog of old alerts: how many of each, and the last one."""

    name: str
    downs: int
    ups: int
    last: Event

    def state(
        self,
        *,
        stamp: Callable[[str | None], str] = when,
        escape: Callable[[str], str] = lambda text: text,
        icons: bool = True,
    ) -> str:
        """How it ended: "🔴 last DOWN since ..." / "🟢 last UP at ..." (times by ``stamp``)."""
        last = self.last
        if last.kind == "down":
            return f"{'🔴 ' if icons else ''}last DOWN since {stamp(last.started_at or last.at)}"
        if last.kind == "up":
            return f"{'🟢 ' if icons else ''}last UP at {stamp(last.at)}"
        return f"last {escape(last.kind)} at {stamp(last.at)}"


def summarize(events: Sequence[Event]) -> list[MonitorSummary]:
    """Per monitor, in the order first seen: its downs, ups and last event."""
    by_monitor: dict[int | None, list[Event]] = {}
    for event in events:
        by_monitor.setdefault(event.monitor_id, []).append(event)
    return [
        MonitorSummary(
            seen[-1].monitor_name,
            sum(1 for e in seen if e.kind == "down"),
            sum(1 for e in seen if e.kind == "up"),
            seen[-1],
        )
        for seen in by_monitor.values()
    ]


def link_target(url: str, limit: int = 2048) -> str | None:
    """``url`` fit to be a link in a message's markup: http(s) only, characters that markup
    reads (``<``, ``>``, ``|``, quotes, spaces) percent-encoded; None when it is not http(s) or
    longer than ``limit`` (cut, it would point somewhere else)."""
    if not url.lower().startswith(("http://", "https://")):
        return None
    target = quote(url, safe=":/?#[]@!$&'()*+,;=%~")
    return target if len(target) <= limit else None
