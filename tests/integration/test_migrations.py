"""The migration runner: where it finds the migrations, and its two refusals.

Each test that migrates gets a database of its own on the test server (made from template0,
dropped at the end): the shared test database must never record a migration from here.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import asyncpg
import pytest
from support import clean_environ

from monitor import db

REPO = Path(__file__).resolve().parents[2]


def write(directory: Path, files: dict[str, str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, sql in files.items():
        (directory / name).write_text(sql)
    return directory


async def recorded(dsn: str) -> list[str]:
    conn = await asyncpg.connect(dsn)
    try:
        if await conn.fetchval("SELECT to_regclass('schema_migrations')") is None:
            return []
        return [r["name"] for r in await conn.fetch("SELECT name FROM schema_migrations ORDER BY version")]
    finally:
        await conn.close()


# -- where the migrations are ---------------------------------------------------------------


def test_the_source_tree_migrations_are_found_from_a_checkout() -> None:
    # The editable install of `make venv` imports monitor/ from the checkout, which has no
    # monitor/sql/: the runner falls back to the top-level sql/.
    assert db.find_directory() == REPO / "sql"
    assert [m.name for m in db.discover()] == sorted(p.name for p in (REPO / "sql").glob("*.sql"))


def test_the_packaged_directory_comes_before_the_source_tree(tmp_path: Path) -> None:
    packaged = write(tmp_path / "site-packages" / "monitor" / "sql", {"001_a.sql": ""})
    source = write(tmp_path / "sql", {"001_a.sql": "", "002_b.sql": ""})
    assert db.find_directory([packaged, source]) == packaged
    assert db.find_directory([tmp_path / "absent", source]) == source


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({}, "no migrations found"),
        ({"notes.txt": "not a migration"}, "no migrations found"),
        ({"001_init.sql": "", "1_short.sql": ""}, "1_short.sql is not named NNN_name.sql"),
        ({"001_init.sql": "", "001_again.sql": ""}, "two migrations share version 001"),
    ],
    ids=["empty", "no-sql-files", "bad-name", "duplicate-version"],
)
def test_discover_refuses(tmp_path: Path, files: dict[str, str], message: str) -> None:
    with pytest.raises(db.MigrationError, match=message):
        db.discover(write(tmp_path / "sql", files))


@pytest.mark.parametrize(
    ("applied", "known", "unknown"),
    [
        ({}, [1, 2], []),
        ({1: "001_a.sql", 2: "002_b.sql"}, [1, 2], []),
        ({1: "001_a.sql"}, [1, 2], []),
        ({1: "001_a.sql", 3: "003_c.sql", 2: "002_b.sql"}, [1], ["002_b.sql", "003_c.sql"]),
        ({1: "001_a.sql", 2: "002_b.sql"}, [1, 3], ["002_b.sql"]),
    ],
    ids=["fresh", "up-to-date", "behind", "newer", "other-branch"],
)
def test_unknown_applied(applied: dict[int, str], known: list[int], unknown: list[str]) -> None:
    migrations = [db.Migration(v, f"{v:03d}_x.sql", "") for v in known]
    assert db.unknown_applied(applied, migrations) == unknown


# -- refusals against a database ----------------------------------------------------------


async def test_no_migrations_is_refused_before_touching_the_database(
    tmp_path: Path, empty_database: str
) -> None:
    with pytest.raises(db.MigrationError, match=r"no migrations found \(looked for \*\.sql in .*/empty\)"):
        await db.migrate(empty_database, write(tmp_path / "empty", {}))
    assert await recorded(empty_database) == []


async def test_a_database_newer_than_the_code_is_refused_naming_the_versions(
    tmp_path: Path, empty_database: str
) -> None:
    newer = write(
        tmp_path / "newer",
        {
            "001_a.sql": "CREATE TABLE a ()",
            "002_b.sql": "CREATE TABLE b ()",
            "003_c.sql": "CREATE TABLE c ()",
        },
    )
    assert await db.migrate(empty_database, newer) == ["001_a.sql", "002_b.sql", "003_c.sql"]

    older = write(tmp_path / "older", {"001_a.sql": "CREATE TABLE a ()", "004_d.sql": "CREATE TABLE d ()"})
    with pytest.raises(db.MigrationError) as refused:
        await db.migrate(empty_database, older)
    message = str(refused.value)
    assert "the database is newer than this monitor" in message
    assert "002_b.sql, 003_c.sql" in message
    assert "its latest is 004_d.sql" in message
    # Refused as a whole: the older code's own new migration is not applied either.
    assert await recorded(empty_database) == ["001_a.sql", "002_b.sql", "003_c.sql"]
    # The same code again is fine (and has nothing to do).
    assert await db.migrate(empty_database, newer) == []


# -- what `monitor migrate` prints ----------------------------------------------------------

# `monitor migrate` with the runner pointed at one directory (argv[1]); the rest of argv is the CLI's.
_MIGRATE_FROM = """
import pathlib, sys
from monitor import cli, db
db.SQL_DIRS = (pathlib.Path(sys.argv[1]),)
cli.main(["migrate"])
"""


def test_monitor_migrate_without_migrations_exits_1_with_a_message(tmp_path: Path) -> None:
    empty = write(tmp_path / "empty", {})
    # It refuses before connecting: nothing listens on the discard port.
    env = clean_environ() | {"MONITOR_DATABASE_URL": "postgresql://monitor@127.0.0.1:9/none"}
    done = subprocess.run(
        [sys.executable, "-c", _MIGRATE_FROM, str(empty)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done
    assert f"Error: no migrations found (looked for *.sql in {empty})" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
