"""Of a credential, only the secret part must be a reference: a basic auth's type and username
and a header's name are written as they are (the API shows them too), its password or the
header's value as ``${VAR}``. A file with ``type: basic`` inline was refused as an inline
secret, and an export wrote the username as a variable."""

from __future__ import annotations

import asyncpg
from support.db import ensure_account
from support.domain import deps_fixture  # noqa: F401

from monitor.ascode import applying, exporting, state
from monitor.ascode.reading import Invalid, Secrets, read_texts
from monitor.domain.context import Actor, Deps

DOC = """\
version: 1
monitors:
  admin:
    name: Admin
    url: http://127.0.0.1:8080/admin
    auth: {type: basic, username: bob, password: "${ADMIN_PASSWORD}"}
    headers: {X-Api-Key: "${ADMIN_KEY}", X-Probe: monitor}
"""
VARIABLES = {"ADMIN_PASSWORD": "hunter2", "ADMIN_KEY": "k-123"}


async def test_only_the_secret_parts_are_references(deps: Deps, db: asyncpg.Connection) -> None:
    actor = Actor(await ensure_account(db), role="owner")
    plan = await applying.apply(
        deps, actor, read_texts([("a.yaml", DOC)], Secrets(VARIABLES)), prune=False, dry_run=False
    )
    assert plan.counts()["create"] == 1, plan.text()
    async with deps.pool.acquire() as conn:
        account = await state.read(conn, deps, actor.account_id, key_all=True)
    exported = exporting.export(account)
    admin = exported.document["monitors"]["admin"]
    assert admin["auth"]["type"] == "basic" and admin["auth"]["username"] == "bob", admin
    assert admin["auth"]["password"].startswith("${"), admin
    assert admin["headers"]["X-Probe"] == "monitor" and admin["headers"]["X-Api-Key"].startswith("${")
    assert sorted(exported.secrets.values()) == ["hunter2", "k-123"]
    inline = DOC.replace('"${ADMIN_PASSWORD}"', "hunter2")
    try:
        await applying.judge(deps, read_texts([("a.yaml", inline)], Secrets(VARIABLES)))
    except Invalid as exc:
        assert [str(p) for p in exc.problems] == [
            "a.yaml:6:50: monitors.admin.auth.password: a secret: "
            "write it as ${VARIABLE} or file:/path, not inline"
        ]
    else:
        raise AssertionError("an inline password was taken")
