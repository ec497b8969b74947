"""Members in the dashboard: the list, a role changed, a member removed, the last owner kept
(the domain's 409 next to that member's role), a role above one's own refused, an invitation
e-mailed (a bad address next to its field), and a viewer who sees no members page.
"""

from __future__ import annotations

from pathlib import Path

import aiohttp
import asyncpg
from support import ensure_account
from support.dashboard import Page, Person, base_url_fixture, http_fixture  # noqa: F401
from support.fake_smtp import FakeSmtp
from support.inprocess import InProcessFactory, inprocess_api_fixture  # noqa: F401
from support.people import make_user

PASSWORD = "Dashboard-Pass-4e1b7c"


def row_error(page: Page, user_id: int) -> str:
    found = [p for p in page.tree.find_all("p", "error-text") if p.attrs.get("id") == f"role-{user_id}-error"]
    assert found, page.text[:500]
    return found[0].text()


async def test_roles_changed_members_removed_last_owner_kept(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
):
    account = await ensure_account(db)
    owner_id = await make_user(db, "owner@example.com", PASSWORD, account, "owner")
    other_id = await make_user(db, "ada@example.com", PASSWORD, account, "viewer")
    person = await Person.sign_in(base_url, http, "owner@example.com", PASSWORD)
    listed = await person.get("/members")
    assert listed.status == 200 and "ada@example.com" in listed.text

    last = await person.post(f"/members/{owner_id}/role", {"role": "admin"})
    assert last.status == 409 and "last owner" in row_error(last, owner_id)
    gone = await person.post(f"/members/{owner_id}/remove", {})
    assert gone.status == 409 and "last owner" in row_error(gone, owner_id)
    bad = await person.post(f"/members/{other_id}/role", {"role": "emperor"})
    assert bad.status == 422 and row_error(bad, other_id)

    changed = await person.post(f"/members/{other_id}/role", {"role": "editor"})
    assert changed.status == 303 and changed.location == "/members?done=role"
    role = "SELECT role FROM memberships WHERE user_id = $1 AND account_id = $2"
    assert await db.fetchval(role, other_id, account) == "editor"
    removed = await person.post(f"/members/{other_id}/remove", {})
    assert removed.status == 303
    assert await db.fetchval(role, other_id, account) is None


async def test_an_admin_gives_no_more_than_admin(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
):
    account = await ensure_account(db)
    owner_id = await make_user(db, "owner@example.com", PASSWORD, account, "owner")
    await make_user(db, "admin@example.com", PASSWORD, account, "admin")
    other_id = await make_user(db, "ada@example.com", PASSWORD, account, "viewer")
    admin = await Person.sign_in(base_url, http, "admin@example.com", PASSWORD)
    page = await admin.get("/members")
    assert not any(o.attrs.get("value") == "owner" for o in page.tree.find_all("option"))
    # The owner's row has no controls for an admin.
    actions = {f.attrs.get("action") for f in page.tree.find_all("form")}
    assert f"/members/{owner_id}/remove" not in actions and f"/members/{other_id}/remove" in actions
    higher = await admin.post(f"/members/{other_id}/role", {"role": "owner"})
    assert higher.status == 403 and "higher than your own" in row_error(higher, other_id)


async def test_invite_by_email(
    db: asyncpg.Connection, inprocess_api: InProcessFactory, http: aiohttp.ClientSession, fake_smtp: FakeSmtp,
    tmp_path: Path,
):  # fmt: skip
    served = await inprocess_api(
        MONITOR_SMTP_HOST="localhost",
        MONITOR_SMTP_PORT=str(fake_smtp.port),
        MONITOR_SMTP_SECURITY="starttls",
        MONITOR_SMTP_FROM="monitor@example.com",
        MONITOR_SMTP_USERNAME=fake_smtp.user or "",
        MONITOR_SMTP_PASSWORD=fake_smtp.password,
        MONITOR_CA_FILE=str(fake_smtp.write_ca(tmp_path / "ca.pem")),
        MONITOR_PUBLIC_URL="https://monitor.example.com",
    )
    account = await ensure_account(db)
    await make_user(db, "owner@example.com", PASSWORD, account, "owner")
    person = await Person.sign_in(served.base_url, http, "owner@example.com", PASSWORD)
    bad = await person.post("/members/invite", {"email": "not-an-address", "role": "editor"})
    assert bad.status == 422
    assert any(p.attrs.get("id") == "f-email-error" for p in bad.tree.find_all("p", "error-text"))
    assert 'value="not-an-address"' in bad.text
    sent = await person.post("/members/invite", {"email": "new@example.com", "role": "editor"})
    assert sent.status == 303 and sent.location == "/members?done=invited"
    (letter,) = await fake_smtp.wait_messages(1, to="new@example.com")
    assert "https://monitor.example.com/invitation#" in (letter.text or "")


async def test_no_mail_server_says_so_and_viewer_sees_nothing(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
):
    account = await ensure_account(db)
    await make_user(db, "owner@example.com", PASSWORD, account, "owner")
    await make_user(db, "viewer@example.com", PASSWORD, account, "viewer")
    owner = await Person.sign_in(base_url, http, "owner@example.com", PASSWORD)
    refused = await owner.post("/members/invite", {"email": "new@example.com", "role": "editor"})
    assert refused.status == 503 and "monitor users invite" in refused.text
    viewer = await Person.sign_in(base_url, http, "viewer@example.com", PASSWORD)
    assert (await viewer.get("/members")).status == 403
    assert (await viewer.post("/members/invite", {"email": "x@example.com", "role": "viewer"})).status == 403
