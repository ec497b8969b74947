"""What apply records of the objects it manages (``config_objects``) stays true: a managed
object deleted by hand is made again while the files name it (the plan says so), and its
record is dropped once they no longer do; before, such a record stayed for ever."""

from __future__ import annotations

import asyncpg
from support.ascode import apply
from support.domain import Callers, callers_fixture, deps_fixture  # noqa: F401

from monitor.domain import monitors
from monitor.domain.context import Deps

BOTH = """\
monitors:
  web: {url: "http://127.0.0.1:8080/"}
  db: {type: tcp, host: 127.0.0.1, port: 5432}
"""
WEB = 'monitors:\n  web: {url: "http://127.0.0.1:8080/"}\n'


async def test_a_record_of_an_object_deleted_by_hand_goes_when_the_files_drop_it(
    deps: Deps, callers: Callers, db: asyncpg.Connection
) -> None:
    owner = callers.owner
    assert (await apply(deps, owner, BOTH, {})).counts()["create"] == 2
    db_id = await db.fetchval("SELECT object_id FROM config_objects WHERE key = 'db'")
    await monitors.delete(deps, owner, db_id)
    again = await apply(deps, owner, BOTH, {}, dry_run=True)
    assert "+ create monitor db: deleted outside apply; made again" in again.text(), again.text()
    dropped = await apply(deps, owner, WEB, {})
    assert dropped.empty, dropped.text()
    assert await db.fetchval("SELECT array_agg(key) FROM config_objects") == ["web"]
