"""API keys in the dashboard: made with a role, shown once on the answer to the post that made
it (never on the list after, nor in a URL), usable with the JSON API, a 422 next to its field,
a role above one's own refused next to the role, revoking, and a viewer who sees no keys page
and whose forged post is refused.
"""

from __future__ import annotations

import aiohttp
import asyncpg
from support import ensure_account, leaks
from support.dashboard import Person, base_url_fixture, http_fixture  # noqa: F401
from support.inprocess import InProcessFactory, inprocess_api_fixture  # noqa: F401
from support.people import make_user

PASSWORD = "Dashboard-Pass-4e1b7c"


async def test_a_key_is_shown_once_and_revoked(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
):
    account = await ensure_account(db)
    await make_user(db, "admin@example.com", PASSWORD, account, "admin")
    person = await Person.sign_in(base_url, http, "admin@example.com", PASSWORD)
    form = await person.get("/keys")
    roles = [o.attrs["value"] for o in form.tree.find_all("option") if o.attrs.get("value") in
             ("notify", "viewer", "editor", "admin", "owner")]  # fmt: skip
    assert "owner" not in roles and "admin" in roles

    long = await person.post("/keys", {"name": "x" * 101, "role": "viewer"})
    assert long.status == 422
    assert any(p.attrs.get("id") == "f-name-error" for p in long.tree.find_all("p", "error-text"))
    higher = await person.post("/keys", {"name": "too much", "role": "owner"})
    assert higher.status == 403
    assert any(p.attrs.get("id") == "f-role-error" for p in higher.tree.find_all("p", "error-text"))

    made = await person.post("/keys", {"name": "deploy", "role": "viewer"})
    assert made.status == 200 and made.location is None
    key = next(e for e in made.tree.find_all("input") if e.attrs.get("id") == "new-key").attrs["value"]
    leaks.secret("API key", key)
    assert key.startswith("mk_")
    assert made.headers["Cache-Control"] == "no-store"
    async with http.get(base_url + "/api/v1/monitors", headers={"Authorization": f"Bearer {key}"}) as r:
        assert r.status == 200

    listed = await person.get("/keys")
    assert key not in listed.text and "deploy" in listed.text and key[:11] in listed.text
    key_id = await db.fetchval("SELECT id FROM api_keys WHERE name = 'deploy'")
    revoked = await person.post(f"/keys/{key_id}/revoke", {})
    assert revoked.status == 303 and revoked.location == "/keys?done=revoked"
    async with http.get(base_url + "/api/v1/monitors", headers={"Authorization": f"Bearer {key}"}) as r:
        assert r.status == 401
    assert "Revoked" in (await person.get("/keys")).text


async def test_a_viewer_cannot_see_nor_make_keys(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
):
    account = await ensure_account(db)
    await make_user(db, "viewer@example.com", PASSWORD, account, "viewer")
    viewer = await Person.sign_in(base_url, http, "viewer@example.com", PASSWORD)
    home = await viewer.get("/")
    assert not any(a.attrs.get("href") == "/keys" for a in home.tree.find_all("a"))
    assert (await viewer.get("/keys")).status == 403
    forged = await viewer.post("/keys", {"name": "sneaky", "role": "viewer"})
    assert forged.status == 403
    assert await db.fetchval("SELECT count(*) FROM api_keys WHERE name = 'sneaky'") == 0
