"""What the Uptime Kuma importer writes is a document `monitor apply` takes: the fixture account
of each version, dumped, read back with its secrets as variables, and judged whole (the same
models, references and secret rules as an apply) against the real database; then applied, and
a second apply of the same file is "no changes"."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest
from support.db import ensure_account
from support.kuma import VERSIONS, kuma_db

from monitor import config
from monitor import db as monitor_db
from monitor.ascode import applying
from monitor.ascode.dumping import dump
from monitor.ascode.importers.kuma import convert
from monitor.ascode.reading import Secrets, read_texts
from monitor.domain.context import Actor, Deps
from monitor.net.policy import AddressPolicy
from monitor.net.resolver import VettedResolver


@pytest.fixture
async def deps(db: asyncpg.Connection, base_env: dict[str, str]) -> AsyncIterator[Deps]:
    """support.domain's deps, on a server that allows tls_verify: false (the fixture has a
    monitor with ignore_tls, and the report says what it needs)."""
    settings = config.load({**base_env, "MONITOR_ALLOW_INSECURE_TLS": "true"})
    pool = await monitor_db.create_pool(settings.dsn, min_size=0, max_size=4)
    resolver = VettedResolver(AddressPolicy(settings.allow_cidrs), settings.dns_servers)
    try:
        yield Deps(pool, settings, settings.secret_box(), resolver)
    finally:
        await resolver.close()
        await pool.close()


@pytest.mark.parametrize("version", VERSIONS)
async def test_the_import_is_judged_valid(deps: Deps, tmp_path: Path, version: str) -> None:
    imported = convert([kuma_db(tmp_path, version)])
    variables = {name: value or f"placeholder-{name.lower()}" for name, value in imported.secrets.items()}
    doc = read_texts([("kuma.yaml", dump(imported.document))], Secrets(variables))
    desired = await applying.judge(deps, doc)
    assert {section: len(objects) for section, objects in desired.items()} == {
        "channels": 7,
        "monitors": 11 if version == "1.23" else 13,
        "maintenance": 5,
        "status_pages": 2,
    }


async def test_the_import_applies_and_a_second_apply_changes_nothing(
    deps: Deps, db: asyncpg.Connection, tmp_path: Path
) -> None:
    imported = convert([kuma_db(tmp_path, "2.x")])
    variables = {name: value or f"placeholder-{name.lower()}" for name, value in imported.secrets.items()}
    text = dump(imported.document)
    actor = Actor(await ensure_account(db), role="owner")
    plan = await applying.apply(deps, actor, read_texts([("kuma.yaml", text)], Secrets(variables)),
                                prune=False, dry_run=False)  # fmt: skip
    assert plan.counts()["create"] == 27
    assert await db.fetchval("SELECT count(*) FROM monitors") == 13
    again = await applying.apply(deps, actor, read_texts([("kuma.yaml", text)], Secrets(variables)),
                                 prune=False, dry_run=True)  # fmt: skip
    assert again.empty, again.text()
