"""The people migration (sql/021) keeps old keys working as owners, and the audit log's sweep
deletes only what is older than its retention."""

from __future__ import annotations

import asyncpg
from support.db import ensure_account

from monitor.domain import keys
from monitor.scheduler import retention


async def test_a_key_written_as_before_acts_as_its_accounts_owner(db: asyncpg.Connection) -> None:
    account = await ensure_account(db)
    # What a process of the release before writes: no role, no maker.
    await db.execute("INSERT INTO api_keys (account_id, prefix, hash) VALUES ($1, 'abcd', '\\x00')", account)
    row = await db.fetchrow("SELECT role, created_by FROM api_keys")
    assert (row["role"], row["created_by"]) == ("owner", None)
    new = await keys.create_key(db, account, "x")
    found = await keys.account_for_key(db, new.key)
    assert found is not None and found[0] == account


async def test_the_sweep_deletes_only_rows_older_than_the_retention(
    db: asyncpg.Connection, migrated: str
) -> None:
    account = await ensure_account(db)
    for days in (400, 366, 10):
        await db.execute(
            "INSERT INTO audit_log (account_id, at, resource, operation) "
            "VALUES ($1, now() - make_interval(days => $2), 'monitors', 'create')",
            account,
            days,
        )
    pool = await asyncpg.create_pool(migrated, min_size=0, max_size=1)
    try:
        assert await retention.sweep_audit(pool, 365) == 2
        assert await retention.sweep_audit(pool, 365) == 0
    finally:
        await pool.close()
    assert await db.fetchval("SELECT count(*) FROM audit_log") == 1
