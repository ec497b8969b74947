"""The scheduler's reads for monitors checked from several locations (quorum.py).

A member keeps, for each such monitor it runs, its location's confirmed state (to continue a
streak after a handover or a restart, as ``monitor_state`` does for the overall one) and, when
it is the monitor's primary, every other location's view. Both come from ``location_state``:
the first when the monitor is loaded, the others then and at every cluster round (a lease / 4),
in one query for all of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import asyncpg

from monitor.models import MonitorSpec
from monitor.scheduler.judging import Judging
from monitor.scheduler.quorum import Seen, heard_for
from monitor.scheduler.state import State

VIEWS = """
SELECT monitor_id, location, status, consecutive_failures, streak_started_at, consecutive_successes,
       recovering_since, consecutive_slow, slow_since, changed_at, reason, last_check_at
FROM location_state WHERE monitor_id = ANY($1::bigint[])"""


async def load(pool: asyncpg.Pool, judging: Judging, specs: Mapping[int, MonitorSpec]) -> None:
    """This location's stored state of these monitors (before their tickers start), and the
    other locations' views of those this member is primary for. A stored state older than the
    monitor's freshness bound (``quorum.heard_for``) is not continued: the location was away,
    and starts from unknown rather than from what it saw then; an outage it had open ends at
    its last check (what came after is not known)."""
    if not specs:
        return
    now = datetime.now(UTC)
    ended: list[tuple[int, str, datetime]] = []
    for row in await pool.fetch(VIEWS, list(specs)):
        monitor_id, location = row["monitor_id"], row["location"]
        if location == judging.location:
            spec = specs[monitor_id]
            if monitor_id in judging.local:
                continue  # reloaded after an edit: what it holds is newer than what is stored
            if row["last_check_at"] >= now - heard_for(spec.interval_seconds, spec.timeout_seconds):
                # Its own view: fresh for as long as it checks (no check time to age it by).
                judging.local[monitor_id] = (stored(row), replace(_seen(row), checked_at=None))
            elif row["status"] == "down":
                ended.append((monitor_id, location, row["last_check_at"]))
        elif monitor_id not in judging.secondary:
            judging.remote.setdefault(monitor_id, {})[location] = _seen(row)
    if ended:
        await pool.executemany(END_STALE, ended)


# An outage of a location whose state is too old to continue: it ends at the last check.
END_STALE = """
UPDATE location_incidents SET ended_at = greatest(started_at, $3)
WHERE monitor_id = $1 AND location = $2 AND ended_at IS NULL"""


async def read_remote(
    pool: asyncpg.Pool, location: str, primary: Iterable[int]
) -> dict[int, dict[str, Seen]]:
    """The other locations' views of the monitors this member is primary for."""
    ids = list(primary)
    views: dict[int, dict[str, Seen]] = {m: {} for m in ids}
    if ids:
        for row in await pool.fetch(VIEWS, ids):
            if row["location"] != location:
                views[row["monitor_id"]][row["location"]] = _seen(row)
    return views


def _seen(row: asyncpg.Record) -> Seen:
    return Seen(row["status"], row["changed_at"], row["reason"], row["last_check_at"])


def forget(judging: Judging, ids: Iterable[int]) -> None:
    """These monitors left this member: their location state is their next owner's to read."""
    for monitor_id in ids:
        judging.local.pop(monitor_id, None)
        judging.remote.pop(monitor_id, None)
        judging.secondary.discard(monitor_id)


def stored(row: Any) -> State:
    """The status and streaks of a stored state: a location's (``location_state``), or the first
    columns of a monitor's (``monitor_state``, which has the same names)."""
    return State(
        status=row["status"],
        failures=row["consecutive_failures"],
        streak_started_at=row["streak_started_at"],
        successes=row["consecutive_successes"],
        recovering_since=row["recovering_since"],
        slow=row["consecutive_slow"],
        slow_since=row["slow_since"],
    )
