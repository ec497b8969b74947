"""Pure text helpers every kind's renderer shares: durations, causes, times, clipping, and
text whose names and times are marked (:data:`Text`), which each kind writes in its own
markup (HTML, mrkdwn, Markdown, plain text) with :func:`write`, escaping every piece itself.

What an event says is :mod:`monitor.channels.notice`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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
    """An event's RFC 3339 time as ``YYYY-MM-DD HH:MM:SS UTC``; ``?`` when absent or not a time
    (a time is written as it is, never escaped: it must not carry the user's text)."""
    if not value:
        return "?"
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).strftime("%Y-%m-%d %H:%M:%S UTC")
    except ValueError:
        return "?"


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


def link_target(url: str, limit: int = 2048) -> str | None:
    """``url`` fit to be a link in a message's markup: http(s) only, characters that markup
    reads (``<``, ``>``, ``|``, quotes, spaces) percent-encoded; None when it is not http(s) or
    longer than ``limit`` (cut, it would point somewhere else)."""
    if not url.lower().startswith(("http://", "https://")):
        return None
    target = quote(url, safe=":/?#[]@!$&'()*+,;=%~")
    return target if len(target) <= limit else None


# -- text with names and times marked, written in any markup ---------------------------


@dataclass(frozen=True)
class Name:
    """A monitor's (or, in a test message, the channel's) name: markup may make it bold or a link."""

    text: str


@dataclass(frozen=True)
class Time:
    """An RFC 3339 time: ``when`` writes it, Discord its own time markup."""

    value: str | None


# Plain words (ours or the user's: every one is escaped), names and times, in order.
Piece = str | Name | Time
Text = tuple[Piece, ...]
# ``escape(text, limit)``: ``text`` in a markup, at most ``limit`` characters (None: no limit)
# once escaped, cut with an ellipsis where no entity or escape is split.
Escape = Callable[[str, int | None], str]


def _plain(text: str, limit: int | None = None) -> str:
    return text if limit is None else clip(text, limit)


def write(
    text: Text,
    escape: Escape = _plain,
    *,
    limit: int | None = None,
    strong: Callable[[str], str] = lambda name: name,
    stamp: Callable[[str | None], str] = when,
) -> str:
    """``text`` in a kind's markup: words and names escaped by ``escape`` (names then wrapped by
    ``strong``: bold, a link), times written by ``stamp`` (never escaped: markup of its own).
    Within ``limit`` characters: the longest words or name are cut first, where ``escape`` cuts."""

    def one(piece: Piece, size: int | None) -> str:
        if isinstance(piece, Time):
            return stamp(piece.value)
        if isinstance(piece, Name):
            room = None if size is None else max(1, size - len(strong("")))
            return strong(escape(piece.text, room))
        return escape(piece, size)

    out = [one(piece, None) for piece in text]
    while limit is not None and sum(map(len, out)) > limit:
        cuttable = [i for i, piece in enumerate(text) if not isinstance(piece, Time)]
        if not cuttable:
            break
        longest = max(cuttable, key=lambda i: len(out[i]))
        over = sum(map(len, out)) - limit
        cut = one(text[longest], max(1, len(out[longest]) - over))
        if len(cut) >= len(out[longest]):
            break  # nothing left to cut
        out[longest] = cut
    return "".join(out)


def plain(text: Text, limit: int | None = None) -> str:
    """``text`` as plain text (times by :func:`when`)."""
    return write(text, limit=limit)


def escaper(entities: Mapping[str, str]) -> Escape:
    """An :data:`Escape` replacing each character of ``entities`` by its entity (HTML, Slack's
    mrkdwn), cut between entities, never inside one."""

    def escape(text: str, limit: int | None = None) -> str:
        escaped = "".join(entities.get(c, c) for c in text)
        if limit is None or len(escaped) <= limit:
            return escaped
        out: list[str] = []
        size = 0
        for c in text:
            piece = entities.get(c, c)
            if size + len(piece) > limit - 1:
                break
            out.append(piece)
            size += len(piece)
        return "".join(out) + "…"

    return escape
