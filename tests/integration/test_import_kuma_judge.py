"""What the Uptime Kuma importer writes is a document `monitor apply` takes: the fixture account
of each version, dumped, read back with its secrets as variables, and judged whole (the same
models, references and secret rules as an apply) against the real database; then applied, and
a second apply of the same file is "no changes"."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import asyncpg
import pytest
from support.db import ensure_account
from support.domain import deps_fixture  # noqa: F401
from support.kuma import VERSIONS, kuma_db

from monitor.ascode import applying
from monitor.ascode.dumping import dump
from monitor.ascode.importers.kuma import convert
from monitor.ascode.reading import Secrets, read_texts
from monitor.domain.context import Actor, Deps


@pytest.fixture(name="insecure_ok")
def insecure_ok_fixture(deps: Deps) -> Deps:
    """support.domain's deps, on a server that allows tls_verify: false (the fixture has a
    monitor with ignore_tls, and the report says what it needs)."""
    return replace(deps, settings=deps.settings.model_copy(update={"allow_insecure_tls": True}))


@pytest.mark.parametrize("version", VERSIONS)
async def test_the_import_is_judged_valid(insecure_ok: Deps, tmp_path: Path, version: str) -> None:
    deps = insecure_ok
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
    insecure_ok: Deps, db: asyncpg.Connection, tmp_path: Path
) -> None:
    deps = insecure_ok
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
