"""Channels in the dashboard: a kind's form built from its settings model, a webhook's signing
secret shown once on the page that made it, a 422 next to its field with what was typed kept
(never a secret), an edit that keeps a secret left empty, a test message, deleting, and a
viewer who sees no write controls and whose forged post is refused.
"""

from __future__ import annotations

import aiohttp
import asyncpg
from support import ensure_account
from support.dashboard import Person, base_url_fixture, http_fixture  # noqa: F401
from support.inprocess import InProcessFactory, inprocess_api_fixture  # noqa: F401
from support.people import make_user
from support.procs import TEST_SECRET_KEY

from monitor.secrets import SecretBox

PASSWORD = "Dashboard-Pass-4e1b7c"
HOOK = "https://hooks.example.test/in/dash-5a2f"


def field_error(page_tree: object, name: str) -> str:
    found = [p for p in page_tree.find_all("p", "error-text") if p.attrs.get("id") == f"f-{name}-error"]  # type: ignore[attr-defined]
    assert found, f"no error next to {name}"
    return found[0].text()


async def test_every_kind_has_a_form(db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession):
    from monitor.channels import REGISTRY

    account = await ensure_account(db)
    await make_user(db, "owner@example.com", PASSWORD, account, "owner")
    person = await Person.sign_in(base_url, http, "owner@example.com", PASSWORD)
    kinds = await person.get("/channels/new")
    assert kinds.status == 200
    for name, kind in REGISTRY.items():
        form = await person.get(f"/channels/new?kind={name}")
        assert form.status == 200, name
        inputs = {e.attrs.get("name") for e in form.tree.iter() if e.tag in ("input", "select", "textarea")}
        props = kind.config.model_json_schema()["properties"]
        assert {f"config.{p}" for p in props} <= inputs, name
        for element in form.tree.iter():
            if element.tag in ("input", "select", "textarea") and element.attrs.get("type") != "hidden":
                assert any(
                    label.attrs.get("for") == element.attrs["id"] for label in form.tree.find_all("label")
                ), (name, element.attrs)


async def test_create_edit_test_and_delete_a_webhook(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
):
    account = await ensure_account(db)
    await make_user(db, "owner@example.com", PASSWORD, account, "owner")
    person = await Person.sign_in(base_url, http, "owner@example.com", PASSWORD)

    bad = await person.post(
        "/channels/new",
        {"kind": "webhook", "name": "Ops hook", "config.url": "ftp://nope", "config.headers": ""},
    )
    assert bad.status == 422, bad.text[:400]
    assert "config.url" in field_error(bad.tree, "config.url")
    assert 'value="Ops hook"' in bad.text and "ftp://nope" not in bad.text  # the URL is a secret

    made = await person.post(
        "/channels/new",
        {"kind": "webhook", "name": "Ops hook", "config.url": HOOK, "config.headers": "X-Team: ops"},
    )
    assert made.status == 200, made.text[:400]
    shown = next(e for e in made.tree.find_all("input") if e.attrs.get("id") == "secret-secret")
    secret = shown.attrs["value"]
    assert secret.startswith("whsec_") and HOOK not in made.text
    channel_id = await db.fetchval("SELECT id FROM channels WHERE name = 'Ops hook'")
    box = SecretBox.from_setting(TEST_SECRET_KEY)

    edit = await person.get(f"/channels/{channel_id}")
    assert (
        edit.status == 200 and secret not in edit.text and HOOK not in edit.text and "X-Team" not in edit.text
    )
    saved = await person.post(
        f"/channels/{channel_id}",
        {"name": "Ops webhook", "config.url": "", "config.secret": "", "config.headers": ""},
    )
    assert saved.status == 303 and saved.location == f"/channels/{channel_id}?done=saved"
    row = await db.fetchrow("SELECT name, config FROM channels WHERE id = $1", channel_id)
    assert row["name"] == "Ops webhook"
    assert box.open(row["config"]["url"]) == HOOK and box.open(row["config"]["secret"]) == secret

    renewed = await person.post(
        f"/channels/{channel_id}",
        {"name": "Ops webhook", "config.secret.clear": "true", "config.headers": ""},
    )
    assert renewed.status == 200
    second = next(e for e in renewed.tree.find_all("input") if e.attrs.get("id") == "secret-secret").attrs[
        "value"
    ]
    assert second.startswith("whsec_") and second != secret
    config = await db.fetchval("SELECT config FROM channels WHERE id = $1", channel_id)
    assert box.open(config["secret"]) == second and box.open(config["url"]) == HOOK
    assert config["headers"] is not None  # left empty: kept

    wrong = await person.post(f"/channels/{channel_id}", {"name": "", "config.url": ""})
    assert wrong.status == 422 and field_error(wrong.tree, "name")

    tested = await person.post(f"/channels/{channel_id}/test", {})
    assert tested.status == 303
    assert await db.fetchval("SELECT count(*) FROM outbox WHERE kind = 'test'") >= 1
    listed = await person.get("/channels")
    assert "Ops webhook" in listed.text

    gone = await person.post(f"/channels/{channel_id}/delete", {})
    assert gone.status == 303 and gone.location == "/channels?done=deleted"
    assert await db.fetchval("SELECT count(*) FROM channels WHERE id = $1", channel_id) == 0


async def test_email_lists_and_numbers(db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession):
    account = await ensure_account(db)
    await make_user(db, "owner@example.com", PASSWORD, account, "owner")
    person = await Person.sign_in(base_url, http, "owner@example.com", PASSWORD)
    bad = await person.post(
        "/channels/new",
        {"kind": "email", "name": "Mail", "config.host": "smtp.example.test", "config.port": "99999",
         "config.security": "starttls", "config.from_address": "mon@example.test",
         "config.to": "a@example.test\nb@example.test", "config.password": "hunter2-secret"},
    )  # fmt: skip
    assert bad.status == 422 and "config.port" in field_error(bad.tree, "config.port")
    assert "hunter2-secret" not in bad.text and "b@example.test" in bad.text


async def test_viewer_reads_without_write_controls(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
):
    account = await ensure_account(db)
    await make_user(db, "owner@example.com", PASSWORD, account, "owner")
    await make_user(db, "viewer@example.com", PASSWORD, account, "viewer")
    owner = await Person.sign_in(base_url, http, "owner@example.com", PASSWORD)
    made = await owner.post("/channels/new", {"kind": "telegram", "name": "Chat", "config.chat_id": "12345"})
    assert made.status == 303
    channel_id = await db.fetchval("SELECT id FROM channels WHERE name = 'Chat'")

    viewer = await Person.sign_in(base_url, http, "viewer@example.com", PASSWORD)
    listed = await viewer.get("/channels")
    assert listed.status == 200 and "Chat" in listed.text
    assert not any(a.attrs.get("href") == "/channels/new" for a in listed.tree.find_all("a"))
    one = await viewer.get(f"/channels/{channel_id}")
    assert one.status == 200 and "12345" in one.text
    assert not any(f.attrs.get("action", "").startswith("/channels") for f in one.tree.find_all("form"))
    forged = await viewer.post(f"/channels/{channel_id}/delete", {})
    assert forged.status == 403
    sneaky = await viewer.post("/channels/new", {"kind": "telegram", "name": "Mine", "config.chat_id": "9"})
    assert sneaky.status == 403 and "Not allowed" in sneaky.text
    renamed = await viewer.post(f"/channels/{channel_id}", {"name": "Renamed", "config.chat_id": "9"})
    assert renamed.status == 403
    assert await db.fetchval("SELECT name FROM channels WHERE id = $1", channel_id) == "Chat"
    assert await db.fetchval("SELECT count(*) FROM channels WHERE id = $1", channel_id) == 1
