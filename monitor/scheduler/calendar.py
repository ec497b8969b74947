"""The scheduler's maintenance calendar: every window in memory, asked on every check.

``load(pool)`` reads all windows (at start, and again on ``NOTIFY maintenance_changed``);
``window_at`` answers from two indexes, by monitor id and by (account, tag), so a check pays
for the windows that apply to its monitor only. Each window keeps its spans over the next
hour (``HORIZON``), worked out again when a check falls outside them: the rule is read about
once an hour per window, not once per check.

A window applies to a monitor by id, or by tag within the window's own account: another
account's window tagged "prod" never touches this account's "prod" monitors. That needs the
monitor's account: pass ``account_id``; without it, the calendar uses the accounts it read at
``load`` for the monitors that had a window's tag then (a monitor tagged after the last load
gets its tag windows when the caller passes its account, or at the next load).

For the timers at the windows' edges (``edges.py``) it also says each window's next start or end
(``edges_after``, ``edge_after``) and whom a window covers (``reach``, ``covers``, ``touches``).
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from monitor import logging as mlog
from monitor.maintenance import Rule, Span, next_after, occurrences
from monitor.scheduler.state import Window

log = mlog.get(__name__)

HORIZON = timedelta(hours=1)
MINUTE = timedelta(minutes=1)


@dataclass(frozen=True, kw_only=True)
class ActiveWindow(Window):
    """The window a check fell in: ``Window`` (id, name, until, notify) with its span's start;
    ``until`` is the end of the span (merged with any occurrence of the same window that
    overlaps it)."""

    start: datetime

    @property
    def end(self) -> datetime:
        return self.until


class _Entry:
    """One window: its rule, what it applies to, and its spans over [cached_from, cached_to)."""

    __slots__ = ("account_id", "cached_from", "cached_to", "id", "monitor_ids", "name", "notify", "rule",
                 "spans", "starts", "tags")  # fmt: skip

    def __init__(
        self,
        window_id: int,
        account_id: int,
        name: str,
        notify: bool,
        rule: Rule,
        monitor_ids: Iterable[int] = (),
        tags: Iterable[str] = (),
    ) -> None:
        self.id = window_id
        self.account_id = account_id
        self.name = name
        self.notify = notify
        self.rule = rule
        self.monitor_ids = frozenset(monitor_ids)
        self.tags = frozenset(tags)
        self.cached_from = self.cached_to = datetime.min.replace(tzinfo=UTC)  # nothing cached
        self.spans: list[Span] = []
        self.starts: list[datetime] = []

    def span_at(self, at: datetime) -> Span | None:
        if not self.cached_from <= at < self.cached_to:
            # From a minute before: checks of one instant arrive a little out of order.
            start = at.replace(second=0, microsecond=0) - MINUTE
            self.spans = occurrences(self.rule, start, start + HORIZON)
            self.starts = [s for s, _ in self.spans]
            self.cached_from, self.cached_to = start, start + HORIZON
        index = bisect.bisect_right(self.starts, at) - 1
        if index >= 0 and at < self.spans[index][1]:
            return self.spans[index]
        return None

    def edge_after(self, at: datetime) -> datetime | None:
        """The window's first edge (a span's start or end) after ``at``, or None if it never
        opens again."""
        span = self.span_at(at)
        if span is not None:
            return span[1]
        index = bisect.bisect_right(self.starts, at)
        if index < len(self.starts):
            return self.starts[index]
        following = next_after(self.rule, at)
        return None if following is None else following[0]


class Calendar:
    """Every maintenance window of every account, indexed for ``window_at``."""

    def __init__(self) -> None:
        self._by_monitor: dict[int, list[_Entry]] = {}
        self._by_tag: dict[str, list[_Entry]] = {}
        # The account of each monitor that had a window's tag at the last load.
        self._accounts: dict[int, int] = {}
        # Every window that applies to some monitor, by id.
        self._entries: dict[int, _Entry] = {}

    def __len__(self) -> int:
        return len(self._entries)

    async def load(self, pool: asyncpg.Pool | asyncpg.Connection) -> int:
        """Read every window (and the accounts of the monitors their tags reach); replace what
        the calendar held. Returns how many windows it holds."""
        rows = await pool.fetch("SELECT * FROM maintenance_windows ORDER BY id")
        tags = sorted({t for row in rows for t in row["tags"]})
        accounts = (
            await pool.fetch("SELECT id, account_id FROM monitors WHERE tags && $1::text[]", tags)
            if tags
            else []
        )
        return self.replace(rows, {r["id"]: r["account_id"] for r in accounts})

    def replace(self, rows: Iterable[Mapping[str, Any]], accounts: Mapping[int, int] | None = None) -> int:
        """Hold the windows of ``rows`` (``maintenance_windows`` rows) instead; ``accounts``:
        monitor id -> account id, for tag windows when ``window_at`` is not given one."""
        by_monitor: dict[int, list[_Entry]] = defaultdict(list)
        by_tag: dict[str, list[_Entry]] = defaultdict(list)
        held = 0
        for row in rows:
            try:
                rule = Rule.from_row(row)
            except ValueError as exc:  # the API stores only rules it checked; say so and go on
                log.warning("maintenance.bad_rule", window_id=row["id"], error=str(exc))
                continue
            entry = _Entry(row["id"], row["account_id"], row["name"], row["notify"], rule,
                           row["monitor_ids"], row["tags"])  # fmt: skip
            for monitor_id in dict.fromkeys(row["monitor_ids"]):
                by_monitor[monitor_id].append(entry)
            for tag in dict.fromkeys(row["tags"]):
                by_tag[tag].append(entry)
            held += 1
        self._by_monitor, self._by_tag = dict(by_monitor), dict(by_tag)
        self._entries = {e.id: e for entries in (*by_monitor.values(), *by_tag.values()) for e in entries}
        self._accounts = dict(accounts or {})
        log.info("maintenance.loaded", windows=held)
        return held

    def window_at(
        self, monitor_id: int, tags: Sequence[str], at: datetime, account_id: int | None = None
    ) -> ActiveWindow | None:
        """The window the monitor is in at ``at`` (by its id, or by any of its ``tags`` in its
        account), or None. Of several open at once, the one that closes last (then the lowest
        id): the monitor is in maintenance until then."""
        if monitor_id not in self._by_monitor and (not tags or not self._by_tag):
            return None  # no window can name it (most checks): without _candidates' generator
        best: tuple[_Entry, Span] | None = None
        for entry in self._candidates(monitor_id, tags, account_id):
            span = entry.span_at(at)
            if span is not None and (best is None or (span[1], -entry.id) > (best[1][1], -best[0].id)):
                best = (entry, span)
        if best is None:
            return None
        entry, (start, end) = best
        return ActiveWindow(id=entry.id, name=entry.name, until=end, notify=entry.notify, start=start)

    def edges_after(self, at: datetime) -> dict[int, datetime]:
        """Each window's next edge after ``at`` (window id -> instant), those that open again."""
        found = {}
        for entry in self._entries.values():
            when = entry.edge_after(at)
            if when is not None:
                found[entry.id] = when
        return found

    def edge_after(self, window_id: int, at: datetime) -> datetime | None:
        """The next edge after ``at`` of the window ``window_id`` (None: no such window now, or
        it never opens again)."""
        entry = self._entries.get(window_id)
        return None if entry is None else entry.edge_after(at)

    def touches(self, monitor_id: int, tags: Sequence[str]) -> bool:
        """Whether any window could apply to the monitor (by its id, or by one of its tags in
        any account): a cheap test before ``window_at``, for sweeps over every monitor."""
        return monitor_id in self._by_monitor or (bool(self._by_tag) and any(t in self._by_tag for t in tags))

    def reach(self, window_id: int) -> tuple[frozenset[int], bool]:
        """The monitor ids the window names, and whether it has tags too (empty, False: no
        such window)."""
        entry = self._entries.get(window_id)
        return (frozenset(), False) if entry is None else (entry.monitor_ids, bool(entry.tags))

    def covers(
        self, window_id: int, monitor_id: int, tags: Sequence[str], account_id: int | None = None
    ) -> bool:
        """Whether the window applies to the monitor (by id, or by a tag in its account, the
        account as ``window_at`` finds it)."""
        entry = self._entries.get(window_id)
        if entry is None:
            return False
        if monitor_id in entry.monitor_ids:
            return True
        if not entry.tags or entry.tags.isdisjoint(tags):
            return False
        account = account_id if account_id is not None else self._accounts.get(monitor_id)
        return account == entry.account_id

    def _candidates(self, monitor_id: int, tags: Sequence[str], account_id: int | None) -> Iterable[_Entry]:
        yield from self._by_monitor.get(monitor_id, ())
        if not tags or not self._by_tag:
            return
        account = account_id if account_id is not None else self._accounts.get(monitor_id)
        if account is None:
            return
        for tag in tags:
            for entry in self._by_tag.get(tag, ()):
                if entry.account_id == account:
                    yield entry
