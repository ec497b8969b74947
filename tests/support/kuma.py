"""Uptime Kuma databases for the importer's tests, made from the schema and rows under
tests/fixtures/import/kuma/ (see their comments for the peer's files they follow):

    path = kuma_db(tmp_path, "2.x")          # the realistic account, upgraded to 2.x
    path = kuma_db(tmp_path, "1.23", rows)   # an empty 1.23 database with these INSERTs
    insert(path, "monitor", id=1, name="M", type="ping", hostname="h")
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent.parent / "fixtures" / "import" / "kuma"
VERSIONS = ("1.23", "2.x")


def kuma_db(where: Path, version: str, rows: str | None = None) -> Path:
    """A ``kuma.db`` of ``version`` in ``where``: the fixture account's rows, or ``rows`` (SQL)
    instead. For 2.x the account is written on 1.23 and then migrated, as an upgraded one is."""
    path = where / f"kuma-{version}.db"
    path.unlink(missing_ok=True)
    conn = sqlite3.connect(path)
    try:
        conn.executescript((FIXTURES / "schema-1.23.sql").read_text())
        if rows is None:
            conn.executescript((FIXTURES / "account.sql").read_text())
        if version == "2.x":
            conn.executescript((FIXTURES / "schema-2.x.sql").read_text())
            if rows is None:
                conn.executescript((FIXTURES / "account-2.x.sql").read_text())
        if rows is not None:
            conn.executescript(rows)
        conn.commit()
    finally:
        conn.close()
    return path


def insert(path: Path, table: str, **columns: Any) -> None:
    """One row of ``columns`` into ``table`` of the database at ``path``."""
    conn = sqlite3.connect(path)
    try:
        names = ", ".join(f'"{n}"' for n in columns)
        marks = ", ".join("?" * len(columns))
        conn.execute(f'INSERT INTO "{table}" ({names}) VALUES ({marks})', list(columns.values()))
        conn.commit()
    finally:
        conn.close()
