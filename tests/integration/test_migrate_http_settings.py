"""sql/020: an http monitor's expected_status and follow_redirects move into its settings.

A database at 019 gets rows as the release before wrote them (the columns only); after 020
their settings say what the columns say, nothing else of the rows moved, and the trigger keeps
the two in step whoever writes: a process of the release before (columns only, and option
changes that rewrite settings without the two keys) or one of this release (both).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from support.db import insert_monitor

from monitor import db
from monitor.checks import REGISTRY
from monitor.checks.http import PLAIN
from monitor.checks.http_settings import render_status_ranges

REPO = Path(__file__).resolve().parents[2]
MOVED = "020_http_settings.sql"
# What the release before stored: the type's options in settings, these two in columns.
OLD_ROWS: dict[str, dict[str, Any]] = {
    "plain": {},
    "statuses": {"expected_status": [[200, 200], [301, 302]]},
    "redirects": {"follow_redirects": True, "settings": {"method": "HEAD"}},
    "both": {
        "expected_status": [[404, 404]],
        "follow_redirects": True,
        "settings": {"headers": [["X-Env", "prod"]], "max_body_bytes": 4096},
    },
    # Another type keeps its settings: the columns' defaults are no field of its own.
    "tcp": {
        "type": "tcp",
        "url": "tcp://db.example.com:5432",
        "settings": {"host": "db.example.com", "port": 5432},
    },
}
ROWS = """SELECT name, type, url, settings, expected_status, follow_redirects, updated_at
          FROM monitors ORDER BY id"""


def settings_of(fields: dict[str, Any]) -> dict[str, Any]:
    """What 020 makes of an old row's settings."""
    settings = dict(fields.get("settings", {}))
    if fields.get("type", "http") == "http":
        if fields.get("expected_status", [[200, 399]]) != [[200, 399]]:
            settings["expected_status"] = fields["expected_status"]
        if fields.get("follow_redirects"):
            settings["follow_redirects"] = True
    return settings


@pytest.fixture
async def at_019(tmp_path: Path, empty_database: str) -> str:
    """A database migrated up to the migration before 020, with the old rows."""
    before = tmp_path / "sql"
    before.mkdir()
    for path in sorted((REPO / "sql").glob("*.sql")):
        if path.name < MOVED:
            shutil.copy(path, before / path.name)
    await db.migrate(empty_database, before)
    conn = await db.connect(empty_database)
    try:
        for name, fields in OLD_ROWS.items():
            await insert_monitor(conn, name=name, **{"url": "https://example.com/", **fields})
    finally:
        await conn.close()
    return empty_database


async def test_old_rows_read_the_same_after_the_move(at_019: str) -> None:
    conn = await db.connect(at_019)
    try:
        before = {r["name"]: r for r in await conn.fetch(ROWS)}
        assert (await db.migrate(at_019))[:1] == [MOVED]  # then the later ones
        after = {r["name"]: r for r in await conn.fetch(ROWS)}
    finally:
        await conn.close()
    assert {name: row["settings"] for name, row in after.items()} == {
        name: settings_of(fields) for name, fields in OLD_ROWS.items()
    }
    # Nothing else moved: the columns still say it for the release before, and the ETag
    # (updated_at) a client holds is still current.
    for name, row in after.items():
        assert {**dict(row), "settings": None} == {**dict(before[name]), "settings": None}, name
    # What the release before answered and checked from the columns, this one reads from the
    # settings: the API's fields, and the check's options.
    http = REGISTRY.get("http")
    for name, row in after.items():
        if row["type"] != "http":
            continue
        old = before[name]
        shown = http.shown(row["url"], row["settings"], None)
        assert (shown["expected_status"], shown["follow_redirects"]) == (
            render_status_ranges(old["expected_status"]),
            old["follow_redirects"],
        ), name
        options = http.options(row["settings"], None) or PLAIN
        assert options.expected_status == tuple(tuple(r) for r in old["expected_status"]), name
        assert options.follow_redirects is old["follow_redirects"], name


async def test_settings_follow_the_columns_whoever_writes(at_019: str) -> None:
    assert (await db.migrate(at_019))[:1] == [MOVED]  # then the later ones
    conn = await db.connect(at_019)

    async def settings(name: str) -> Any:
        return await conn.fetchval("SELECT settings FROM monitors WHERE name = $1", name)

    try:
        # The release before: a new monitor, and a change of its expected statuses.
        await insert_monitor(conn, name="old", url="https://example.com/", expected_status=[[200, 204]])
        assert await settings("old") == {"expected_status": [[200, 204]]}
        await conn.execute("UPDATE monitors SET follow_redirects = true WHERE name = 'old'")
        assert await settings("old") == {"expected_status": [[200, 204]], "follow_redirects": True}
        # ... and a change of an option, its settings rewritten without the two keys.
        await conn.execute("""UPDATE monitors SET settings = '{"method": "HEAD"}' WHERE name = 'old'""")
        assert await settings("old") == {
            "method": "HEAD",
            "expected_status": [[200, 204]],
            "follow_redirects": True,
        }
        # Back to the defaults: left out, as every option at its default is.
        await conn.execute(
            """UPDATE monitors SET expected_status = '[[200, 399]]', follow_redirects = false
               WHERE name = 'old'"""
        )
        assert await settings("old") == {"method": "HEAD"}
        # This release writes both; a change elsewhere in the row leaves them alone.
        await conn.execute(
            """UPDATE monitors SET settings = '{"expected_status": [[500, 599]]}',
                                  expected_status = '[[500, 599]]'
               WHERE name = 'old'"""
        )
        await conn.execute("UPDATE monitors SET name = 'renamed' WHERE name = 'old'")
        row = await conn.fetchrow("SELECT settings, expected_status FROM monitors WHERE name = 'renamed'")
        assert (row["settings"], row["expected_status"]) == ({"expected_status": [[500, 599]]}, [[500, 599]])
        # Another type's settings are its own.
        tcp = {"host": "db.example.com", "port": 5432}
        await insert_monitor(conn, name="tcp", type="tcp", url="tcp://db.example.com:5432", settings=tcp,
                             follow_redirects=True)  # fmt: skip
        assert await settings("tcp") == tcp
    finally:
        await conn.close()


async def test_the_move_is_recorded_once(at_019: str) -> None:
    assert (await db.migrate(at_019))[:1] == [MOVED]  # then the later ones
    assert await db.migrate(at_019) == []
    conn: asyncpg.Connection = await db.connect(at_019)
    try:
        assert await conn.fetchval("SELECT count(*) FROM monitors WHERE settings ? 'expected_status'") == 2
    finally:
        await conn.close()
