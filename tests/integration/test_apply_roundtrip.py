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
from monitor.ascode.reading import REFERENCE
from monitor.ascode.schema import document_schema
from monitor.domain import channels, maintenance, monitors, status_pages
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
    # Every secret the files gave is in the export's secrets, each under its own variable.
    assert {VARIABLES[name] for name in REFERENCE.findall(text)} <= set(one.secrets.values())
    # The export is what the account holds: applied to it, nothing changes.
    assert (await apply(deps, first, one_text, one.secrets)).empty

    for page_id in await db.fetch("SELECT id FROM status_pages WHERE account_id = $1", first.account_id):
        await status_pages.delete(deps, first, page_id["id"])
    copied = await apply(deps, second, one_text, one.secrets)
    assert copied.counts()["create"] == objects_in(text), copied.text()
    two = await export(deps, second.account_id)
    assert dump(two.document) == one_text
    assert two.secrets == one.secrets


async def test_objects_made_by_hand_round_trip_under_keys_from_their_names(
    deps: Deps, callers: Callers, db: asyncpg.Connection
) -> None:
    # What an account made through the API holds: no keys, names that clash once made keys,
    # a webhook signing secret the server made, references by id.
    owner = callers.owner
    webhook = {"kind": "webhook", "name": "Ops hook!", "config": {"url": VARIABLES["WEBHOOK_URL"]}}
    hook = await channels.create(deps, owner, webhook)
    slack = await channels.create(deps, owner, {"kind": "slack", "name": "ops hook",
                                                "config": {"url": VARIABLES["SLACK_URL"]}})  # fmt: skip
    ping = {"type": "ping", "name": "Gateway", "host": "127.0.0.1"}
    gateway = (await monitors.create(deps, owner, ping)).monitor
    front = {
        "name": "Café ☕ front",
        "url": "http://127.0.0.1:8080/",
        "channel_ids": [slack["id"], hook["id"]],
        "depends_on": [gateway["id"]],
        "auth": {"type": "bearer", "token": VARIABLES["BEARER"]},
    }
    web = (await monitors.create(deps, owner, front)).monitor
    await monitors.create(deps, owner, {"type": "tcp", "name": "gateway", "host": "127.0.0.1", "port": 22})
    nightly = {"cron": "0 2 * * *", "duration_minutes": 10}
    await maintenance.create(deps, owner, {"name": "Nightly", "monitor_ids": [web["id"]],
                                           "recurring": nightly})  # fmt: skip
    group = {"name": "All", "monitor_ids": [web["id"], gateway["id"]]}
    page = {"slug": "by-hand", "title": "By hand", "groups": [group]}
    await status_pages.create(deps, owner, page, base="")

    one = await export(deps, owner.account_id)
    one_text = dump(one.document)
    jsonschema.validate(one.document, document_schema())
    assert sorted(one.document["monitors"]) == ["cafe-front", "gateway", "gateway-2"], one_text
    assert sorted(one.document["channels"]) == ["ops-hook", "ops-hook-2"], one_text
    assert VARIABLES["BEARER"] not in one_text and VARIABLES["BEARER"] in one.secrets.values()
    # (Applied to this same account, the export would create all seven again beside them: apply
    # manages only what it made, and nothing adopts an object made by hand under a key.)
    for page in await db.fetch("SELECT id FROM status_pages"):
        await status_pages.delete(deps, owner, page["id"])
    copied = await apply(deps, callers.other, one_text, one.secrets)
    assert copied.counts()["create"] == 7, copied.text()
    assert dump((await export(deps, callers.other.account_id)).document) == one_text
