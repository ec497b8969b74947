"""Reading Uptime Kuma's ``kuma.db`` for the importer (``kuma.py``): the tables it maps, as rows
of column -> value, from the file opened read-only, and the small readers of Kuma's values
(JSON text, numbers stored as text) its modules share.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

from monitor.ascode.importers import SourceError

Row = dict[str, Any]


class Db:
    """The tables of one ``kuma.db``, as lists of rows (column -> value); a table the file
    lacks is empty. ``version`` is "2.x" or "1.x", by the columns present."""

    def __init__(self, path: Path, tables: dict[str, list[Row]], columns: dict[str, set[str]]) -> None:
        self.path, self.tables, self.columns = path, tables, columns
        self.version = (
            "2.x" if {"conditions", "json_path_operator"} & columns.get("monitor", set()) else "1.x"
        )

    def rows(self, table: str) -> list[Row]:
        return self.tables.get(table, [])

    def setting(self, key: str) -> Any:
        for row in self.rows("setting"):
            if row.get("key") == key:
                return row.get("value")
        return None


TABLES = ("monitor", "notification", "monitor_notification", "tag", "monitor_tag", "maintenance",
          "monitor_maintenance", "maintenance_status_page", "status_page",
          "group", "monitor_group", "status_page_cname", "incident", "setting")  # fmt: skip


def read(path: Path) -> Db:
    """Every table this importer reads, from ``path`` opened read-only (SourceError naming the
    file when it is not a SQLite database or has no ``monitor`` table)."""
    if not path.is_file():
        raise SourceError(f"{path}: cannot be read (not a file)")
    try:
        # As a URI, so that the file is opened read-only; as_uri() escapes a "?" or "#" in its name.
        conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise SourceError(f"{path}: cannot be opened ({exc})") from None
    try:
        conn.row_factory = sqlite3.Row
        try:
            present = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.DatabaseError:
            raise SourceError(f"{path}: not an SQLite database (Uptime Kuma's kuma.db expected)") from None
        if "monitor" not in present:
            raise SourceError(f"{path}: no 'monitor' table: not Uptime Kuma's kuma.db")
        tables: dict[str, list[Row]] = {}
        columns: dict[str, set[str]] = {}
        for table in TABLES:
            if table in present:
                columns[table] = {r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')}
                tables[table] = [dict(r) for r in conn.execute(f'SELECT * FROM "{table}" ORDER BY id')]
    except sqlite3.DatabaseError as exc:
        raise SourceError(f"{path}: cannot be read as Uptime Kuma's kuma.db ({exc})") from None
    finally:
        conn.close()
    return Db(path, tables, columns)


def variable(*parts: Any) -> str:
    return "_".join(re.sub(r"[^A-Z0-9]+", "_", str(p).upper()).strip("_") for p in ("KUMA", *parts))


def parsed(text: Any, default: Any) -> Any:
    if text is None or text == "":
        return default
    try:
        return json.loads(str(text))
    except ValueError:
        return default


def days_of(text: Any) -> list[int]:
    days = parsed(text, [])
    return [d for d in days if isinstance(d, int) and d > 0] if isinstance(days, list) else []


def integer(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number == number and abs(number) != float("inf") else None
