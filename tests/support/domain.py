"""The domain's operations called directly, as a face calls them: ``Deps`` made from the test
processes' settings, and the callers of two accounts.

    from support.domain import Callers, callers_fixture, deps_fixture  # noqa: F401

    async def test_x(deps: Deps, callers: Callers) -> None:
        made = await channels.create(deps, callers.owner, {...})
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import asyncpg
import pytest

from monitor import config
from monitor import db as monitor_db
from monitor.domain.context import Actor, Deps
from monitor.net.policy import AddressPolicy
from monitor.net.resolver import VettedResolver

from .db import ensure_account


@pytest.fixture(name="deps")
async def deps_fixture(db: asyncpg.Connection, base_env: dict[str, str]) -> AsyncIterator[Deps]:
    """What the api process gives every operation, on empty tables: its pool, settings (loopback
    allowed, names that never resolve beyond it), the test secret key and a vetted resolver."""
    settings = config.load(base_env)
    pool = await monitor_db.create_pool(settings.dsn, min_size=0, max_size=4)
    resolver = VettedResolver(AddressPolicy(settings.allow_cidrs), settings.dns_servers)
    try:
        yield Deps(pool, settings, settings.secret_box(), resolver)
    finally:
        await resolver.close()
        await pool.close()


@dataclass(frozen=True)
class Callers:
    owner: Actor  # the "test" account's owner (the account ``insert_monitor`` rows belong to)
    viewer: Actor  # a viewer of the same account
    other: Actor  # the owner of the "other" account


@pytest.fixture(name="callers")
async def callers_fixture(db: asyncpg.Connection) -> Callers:
    account, other = await ensure_account(db), await ensure_account(db, "other")
    return Callers(Actor(account), Actor(account, role="viewer"), Actor(other))


async def count(db: asyncpg.Connection, table: str) -> int:
    return int(await db.fetchval(f"SELECT count(*) FROM {table}"))
