"""The round trip of configuration as code for every check type, channel kind, maintenance
schedule, a status page and ``depends_on``, through the package's own functions (no CLI, so a
case takes a fraction of a second): apply on an empty account, a second apply is "no changes",
export, apply the export to a second empty account, export again: the same text. Every export
also validates against the format's JSON Schema.

A status page's slug (and custom domain) is unique over the whole install, not per account
(``status_pages_slug_key``): the copy of a page cannot be made in a second account while the
first holds it. There is no route to apply a page under another slug, and a test that edited
the exported text would no longer prove the text comes back the same, so the test deletes the
first account's page (through the domain, as a user would) before applying the copy.
"""

from __future__ import annotations

import asyncpg
import jsonschema
import pytest
from support.ascode import CASES, VARIABLES, apply, export, objects_in, strings
from support.domain import Callers, callers_fixture, deps_fixture  # noqa: F401

from monitor.ascode.dumping import dump
from monitor.ascode.schema import document_schema
from monitor.domain import status_pages
from monitor.domain.context import Deps


@pytest.mark.parametrize("text", [c[1] for c in CASES], ids=[c[0] for c in CASES])
async def test_round_trip(deps: Deps, callers: Callers, db: asyncpg.Connection, text: str) -> None:
    first, second = callers.owner, callers.other
    made = await apply(deps, first, text, VARIABLES)
    assert made.applied and made.counts()["create"] == objects_in(text), made.text()
    again = await apply(deps, first, text, VARIABLES)
    assert again.empty and again.unchanged == objects_in(text), again.text()

    one = await export(deps, first.account_id)
    one_text = dump(one.document)
    jsonschema.validate(one.document, document_schema())
    assert not set(VARIABLES.values()) & set(strings(one.document)), "a secret in the export"
    # The export is what the account holds: applied to it, nothing changes.
    assert (await apply(deps, first, one_text, one.secrets)).empty

    for page_id in await db.fetch("SELECT id FROM status_pages WHERE account_id = $1", first.account_id):
        await status_pages.delete(deps, first, page_id["id"])
    copied = await apply(deps, second, one_text, one.secrets)
    assert copied.counts()["create"] == objects_in(text), copied.text()
    two = await export(deps, second.account_id)
    assert dump(two.document) == one_text
    assert two.secrets == one.secrets
