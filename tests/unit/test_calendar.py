"""The scheduler's maintenance calendar (monitor/scheduler/calendar.py): which window a monitor
is in, by id and by tag within its account, the one that closes last when several are open,
spans that move with the clock, each window's next edge and whom it covers; and ``load`` from
the real table."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest
from support import ensure_account, insert_monitor

from monitor.scheduler.calendar import HORIZON, ActiveWindow, Calendar
from monitor.scheduler.state import Window

H = timedelta(hours=1)
T0 = datetime(2026, 5, 3, 12, 0, tzinfo=UTC)  # a Sunday
A, B = 1, 2  # accounts


def once(
    window_id: int, start: datetime, end: datetime, *, account: int = A, **fields: Any
) -> dict[str, Any]:
    return {"id": window_id, "account_id": account, "name": f"w{window_id}", "kind": "once",
            "starts_at": start, "ends_at": end, "monitor_ids": [], "tags": [], "notify": False,
            **fields}  # fmt: skip


def daily(window_id: int, hour: int, minutes: int, *, account: int = A, **fields: Any) -> dict[str, Any]:
    return {"id": window_id, "account_id": account, "name": f"w{window_id}", "kind": "rrule",
            "rrule": f"FREQ=DAILY;BYHOUR={hour}", "cron": None, "dtstart": datetime(2026, 1, 1),
            "timezone": "UTC", "duration_seconds": minutes * 60, "monitor_ids": [], "tags": [],
            "notify": False, **fields}  # fmt: skip


def calendar(*rows: dict[str, Any], accounts: dict[int, int] | None = None) -> Calendar:
    cal = Calendar()
    cal.replace(rows, accounts)
    return cal


CASES: list[tuple[str, list[dict[str, Any]], dict[str, Any], tuple[int, datetime, datetime] | None]] = [
    # name, windows, window_at arguments, the window expected (id, start, end) or None
    ("by id, inside", [once(1, T0, T0 + H, monitor_ids=[7])], {"monitor_id": 7, "at": T0}, (1, T0, T0 + H)),
    ("by id, at the end: out", [once(1, T0, T0 + H, monitor_ids=[7])], {"monitor_id": 7, "at": T0 + H}, None),
    ("another monitor", [once(1, T0, T0 + H, monitor_ids=[7])], {"monitor_id": 8, "at": T0}, None),
    ("by tag, same account", [once(1, T0, T0 + H, tags=["db"])],
     {"monitor_id": 7, "tags": ["web", "db"], "account_id": A}, (1, T0, T0 + H)),
    ("by tag, another account's window", [once(1, T0, T0 + H, tags=["db"], account=B)],
     {"monitor_id": 7, "tags": ["db"], "account_id": A}, None),
    ("by tag, account from load", [once(1, T0, T0 + H, tags=["db"])], {"monitor_id": 7, "tags": ["db"]},
     (1, T0, T0 + H)),
    ("by tag, account unknown", [once(1, T0, T0 + H, tags=["db"])], {"monitor_id": 9, "tags": ["db"]}, None),
    ("two open: the one closing last",
     [once(1, T0, T0 + H, monitor_ids=[7]), once(2, T0, T0 + 2 * H, tags=["db"])],
     {"monitor_id": 7, "tags": ["db"], "account_id": A}, (2, T0, T0 + 2 * H)),
    ("two closing together: the lower id",
     [once(3, T0, T0 + H, monitor_ids=[7]), once(2, T0, T0 + H, tags=["db"])],
     {"monitor_id": 7, "tags": ["db"], "account_id": A}, (2, T0, T0 + H)),
    ("daily, inside", [daily(1, 12, 30, monitor_ids=[7])],
     {"monitor_id": 7, "at": T0 + timedelta(minutes=29)}, (1, T0, T0 + timedelta(minutes=30))),
    ("daily, outside", [daily(1, 12, 30, monitor_ids=[7])], {"monitor_id": 7, "at": T0 + H}, None),
]  # fmt: skip


@pytest.mark.parametrize(("rows", "ask", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_window_at(
    rows: list[dict[str, Any]], ask: dict[str, Any], expected: tuple[int, datetime, datetime] | None
) -> None:
    cal = calendar(*rows, accounts={7: A, 8: A})
    found = cal.window_at(ask["monitor_id"], ask.get("tags", ()), ask.get("at", T0), ask.get("account_id"))
    if expected is None:
        assert found is None
        return
    assert found is not None
    assert (found.id, found.start, found.end) == expected
    assert found.until == found.end and found.name == f"w{found.id}"


def test_an_active_window_is_the_state_machines_window() -> None:
    found = calendar(once(1, T0, T0 + H, monitor_ids=[7], notify=True)).window_at(7, (), T0)
    assert isinstance(found, ActiveWindow) and isinstance(found, Window)
    assert found == ActiveWindow(id=1, name="w1", until=T0 + H, notify=True, start=T0)


def test_spans_follow_the_clock_past_the_horizon() -> None:
    """Each window keeps its spans for an hour; later checks work them out again."""
    cal = calendar(daily(1, 12, 30, monitor_ids=[7]))
    days = [T0 + timedelta(days=d, minutes=m) for d in range(3) for m in (-1, 0, 29, 30)]
    assert [cal.window_at(7, (), at) is not None for at in days] == [False, True, True, False] * 3
    # Back in time (a check that was late) is answered too.
    assert cal.window_at(7, (), T0 + timedelta(minutes=1)) is not None
    assert cal.window_at(7, (), T0 + 5 * HORIZON) is None


def test_a_window_spanning_the_horizon_reports_its_whole_span() -> None:
    found = calendar(once(1, T0 - 10 * H, T0 + 10 * H, monitor_ids=[7])).window_at(7, (), T0)
    assert found is not None and (found.start, found.end) == (T0 - 10 * H, T0 + 10 * H)


def test_replace_drops_what_it_no_longer_holds_and_skips_a_bad_rule() -> None:
    cal = calendar(once(1, T0, T0 + H, monitor_ids=[7]), once(2, T0, T0 + H, tags=["db"]))
    assert len(cal) == 2
    bad = daily(3, 12, 30, monitor_ids=[7], rrule="FREQ=NEVER")
    assert cal.replace([once(2, T0, T0 + H, monitor_ids=[8]), bad]) == 1
    assert cal.window_at(7, (), T0) is None
    assert cal.window_at(8, (), T0) is not None


EDGES: list[tuple[str, dict[str, Any], datetime, datetime | None]] = [
    # name, window, after, its next edge
    ("once, before it", once(1, T0, T0 + H), T0 - H, T0),
    ("once, at its start", once(1, T0, T0 + H), T0, T0 + H),
    ("once, inside", once(1, T0, T0 + H), T0 + H / 2, T0 + H),
    ("once, at its end: never again", once(1, T0, T0 + H), T0 + H, None),
    ("daily, inside", daily(1, 12, 30), T0 + timedelta(minutes=10), T0 + timedelta(minutes=30)),
    ("daily, after today's", daily(1, 12, 30), T0 + H, T0 + timedelta(days=1)),
    ("daily, far past the horizon", daily(1, 12, 30), T0 + 3 * H, T0 + timedelta(days=1)),
]


@pytest.mark.parametrize(("row", "after", "expected"), [c[1:] for c in EDGES], ids=[c[0] for c in EDGES])
def test_a_windows_next_edge(row: dict[str, Any], after: datetime, expected: datetime | None) -> None:
    cal = calendar({**row, "monitor_ids": [7]})
    assert cal.edge_after(1, after) == expected
    assert cal.edges_after(after) == ({} if expected is None else {1: expected})


def test_whom_a_window_covers() -> None:
    cal = calendar(once(1, T0, T0 + H, monitor_ids=[7]), once(2, T0, T0 + H, tags=["db"]), accounts={8: A})
    assert cal.reach(1) == (frozenset({7}), False) and cal.reach(2) == (frozenset(), True)
    assert cal.reach(99) == (frozenset(), False)
    assert cal.covers(1, 7, ()) and not cal.covers(1, 8, ["db"])
    assert cal.covers(2, 9, ["db"], A) and not cal.covers(2, 9, ["db"], B)
    assert cal.covers(2, 8, ["db"])  # its account read at load
    assert not cal.covers(2, 9, ["db"])  # no account known
    assert not cal.covers(2, 8, ["web"]) and not cal.covers(99, 7, ())
    assert cal.touches(7, ()) and cal.touches(9, ["web", "db"])
    assert not cal.touches(8, ["web"]) and not Calendar().touches(7, ["db"])


async def test_load_reads_every_window_and_the_accounts_its_tags_reach(db: asyncpg.Connection) -> None:
    mine, theirs = await ensure_account(db), await ensure_account(db, "other")
    tagged = await insert_monitor(db, url="http://127.0.0.1:9/", tags=["db"])
    foreign = await insert_monitor(db, url="http://127.0.0.1:9/", tags=["db"], account_id=theirs)
    plain = await insert_monitor(db, url="http://127.0.0.1:9/")
    now = datetime.now(UTC)
    insert = """INSERT INTO maintenance_windows (account_id, name, kind, starts_at, ends_at, dtstart, rrule,
                    timezone, duration_seconds, monitor_ids, tags, notify)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"""
    await db.execute(
        insert, mine, "tagged", "once", now - H, now + H, None, None, None, None, [], ["db"], True
    )
    await db.execute(insert, mine, "by id", "rrule", None, None, datetime(2026, 1, 1), "FREQ=MINUTELY", "UTC",
                     120, [plain["id"]], [], False)  # fmt: skip
    cal = Calendar()
    assert await cal.load(db) == 2
    tag_window = cal.window_at(tagged["id"], ["db"], now)
    assert tag_window is not None and (tag_window.name, tag_window.notify) == ("tagged", True)
    assert cal.window_at(foreign["id"], ["db"], now) is None  # another account's monitor
    id_window = cal.window_at(plain["id"], [], now)
    assert id_window is not None and id_window.name == "by id"
    await db.execute("DELETE FROM maintenance_windows")
    assert await cal.load(db) == 0
    assert cal.window_at(plain["id"], [], now) is None
