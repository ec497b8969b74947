"""The throttle's counts in PostgreSQL: counted per e-mail and address, cleared for the e-mail on
success (not for the address), started again after a day, swept when old."""

from __future__ import annotations

import asyncpg
import pytest

from monitor.domain import throttle

POLICY = throttle.Policy(free=2, base=60.0, maximum=600.0)
EMAIL, ADDRESS = throttle.Key.email("Ada@Example.com"), throttle.Key.address("192.0.2.1")


async def test_counts_waits_success_and_sweep(db: asyncpg.Connection) -> None:
    checks = [(EMAIL, POLICY), (ADDRESS, throttle.Policy(free=5, base=60.0, maximum=600.0))]
    assert await throttle.wait(db, checks) == 0
    await throttle.failed(db, [EMAIL, ADDRESS])
    assert await throttle.wait(db, checks) == 0  # one failure: free
    await throttle.failed(db, [EMAIL, ADDRESS])
    assert 59 < await throttle.wait(db, checks) <= 60  # the e-mail's second: its first delay
    await throttle.succeeded(db, EMAIL)
    assert await throttle.wait(db, checks) == 0
    rows = await db.fetch("SELECT scope, failures FROM signin_throttle ORDER BY scope")
    assert [(r["scope"], r["failures"]) for r in rows] == [("address", 2)]

    await db.execute("UPDATE signin_throttle SET last_failure = now() - interval '25 hours'")
    await throttle.failed(db, [ADDRESS])
    assert await db.fetchval("SELECT failures FROM signin_throttle") == 1  # a day old: started again
    await db.execute("UPDATE signin_throttle SET last_failure = now() - interval '25 hours'")
    assert await throttle.sweep(db) == 1
    assert await db.fetchval("SELECT count(*) FROM signin_throttle") == 0


@pytest.mark.parametrize("email", ["ada@example.com", " ADA@example.com"])
async def test_an_email_is_one_count_whatever_its_case(db: asyncpg.Connection, email: str) -> None:
    await throttle.failed(db, [EMAIL])
    await throttle.failed(db, [throttle.Key.email(email)])
    assert await db.fetchval("SELECT failures FROM signin_throttle") == 2
