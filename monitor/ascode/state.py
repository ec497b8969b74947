"""What an account holds, as a plan compares it and an export writes it: every object in
canonical form (``objects.py``), under its key.

A managed object's key is the one its files gave it (``config_objects``). For an export,
objects made by hand get keys made from their names (``keying.keyed``); for a plan they have
none, and a reference to one (a managed monitor attached by hand to an unmanaged channel) reads
as ``#<id>``. The account is read in five queries, whatever its size.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from monitor.ascode import objects
from monitor.ascode.keying import keyed
from monitor.ascode.objects import Ids, Shaped
from monitor.ascode.planning import Stored
from monitor.ascode.reading import SECTIONS
from monitor.domain.context import Deps

QUERIES = {
    "channels": "SELECT * FROM channels WHERE account_id = $1 ORDER BY id",
    "monitors": """
        SELECT m.*, ms.secrets AS sealed,
               array(SELECT mc.channel_id FROM monitor_channels mc WHERE mc.monitor_id = m.id
                     ORDER BY mc.channel_id) AS channel_ids
        FROM monitors m LEFT JOIN monitor_secrets ms ON ms.monitor_id = m.id
        WHERE m.account_id = $1 ORDER BY m.id""",
    "maintenance": "SELECT * FROM maintenance_windows WHERE account_id = $1 ORDER BY id",
    "status_pages": "SELECT * FROM status_pages WHERE account_id = $1 ORDER BY id",
}


@dataclass
class Account:
    """An account's objects: by kind, id -> (key or None, canonical form), and the managed ones."""

    objects: dict[str, dict[int, tuple[str | None, Shaped]]] = field(default_factory=dict)
    managed: dict[str, dict[str, Stored]] = field(default_factory=dict)
    ids: Ids = field(default_factory=Ids)

    def unmanaged(self) -> dict[str, dict[str, Stored]]:
        """The objects made by hand that have a key (read with ``key_all``), by kind and key:
        what ``apply --adopt`` may take under management."""
        found: dict[str, dict[str, Stored]] = {}
        for section, objects_ in self.objects.items():
            managed = {stored.object_id for stored in self.managed.get(section, {}).values()}
            found[section] = {
                key: Stored(object_id, shaped, None)
                for object_id, (key, shaped) in objects_.items()
                if key is not None and object_id not in managed
            }
        return found

    def keyed(self, section: str) -> list[tuple[str, Shaped]]:
        """The kind's objects that have a key, in key order."""
        found = [(k, s) for k, s in self.objects.get(section, {}).values() if k is not None]
        return sorted(found, key=lambda item: item[0])


async def read(conn: asyncpg.Connection, deps: Deps, account_id: int, *, key_all: bool) -> Account:
    """The account's objects; ``key_all``: give those made by hand keys from their names."""
    rows = {s: await conn.fetch(QUERIES[s], account_id) for s in SECTIONS}
    managed_rows = await conn.fetch(
        "SELECT resource, key, object_id, applied FROM config_objects WHERE account_id = $1", account_id
    )
    found = {s: {r["id"] for r in rows[s]} for s in SECTIONS}
    account = Account()
    applied: dict[str, dict[str, tuple[int, Any]]] = {s: {} for s in SECTIONS}
    for row in managed_rows:
        applied[row["resource"]][row["key"]] = (row["object_id"], row["applied"])
        if row["object_id"] in found[row["resource"]]:
            account.ids.add(row["resource"], row["key"], row["object_id"])
    if key_all:
        for section in SECTIONS:
            taken = set(account.ids.by_key.get(section, {})) | set(applied[section])
            for row in rows[section]:
                if row["id"] not in account.ids.by_id.get(section, {}):
                    account.ids.add(section, keyed(_name_of(section, row), taken), row["id"])
    for section in SECTIONS:
        shaped: dict[int, tuple[str | None, Shaped]] = {}
        for row in rows[section]:
            shaped[row["id"]] = (
                account.ids.by_id.get(section, {}).get(row["id"]),
                _shape(deps, section, row, account.ids),
            )
        account.objects[section] = shaped
        account.managed[section] = {
            key: Stored(object_id, shaped[object_id][1] if object_id in shaped else None, value)
            for key, (object_id, value) in applied[section].items()
        }
    return account


def _name_of(section: str, row: Mapping[str, Any]) -> str:
    return str(row["slug"] if section == "status_pages" else row["name"])


def _shape(deps: Deps, section: str, row: Mapping[str, Any], ids: Ids) -> Shaped:
    if section == "channels":
        return objects.channel_current(deps.secret_box, row)
    if section == "monitors":
        return objects.monitor_current(deps, row, ids, list(row["channel_ids"]))
    if section == "maintenance":
        return objects.window_current(row, ids)
    return objects.page_current(row, ids)
