"""The first visit of a fresh installation in the dashboard: with nobody yet, the sign-in page
sends to ``/setup``; a wrong token is refused next to its field with nothing made; the setup
link's token makes the owner and the account and signs them in; after that ``/setup`` only says
the installation is set up. The setup page sends no referrer (its URL holds the token)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import asyncpg
import pytest
from support.dashboard import Person
from support.inprocess import InProcessApi, InProcessFactory, inprocess_api_fixture  # noqa: F401
from support.people import COOKIE

from monitor.domain import first_run
from monitor.domain.context import Deps
from monitor.web.keys import DEPS

PASSWORD = "Setup-Pass-5d2a9c81"


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


@pytest.fixture
async def served(inprocess_api: InProcessFactory) -> InProcessApi:
    return await inprocess_api()


async def test_the_first_visit_makes_the_owner_with_the_setup_token(
    db: asyncpg.Connection, served: InProcessApi, http: aiohttp.ClientSession
):
    assert await db.fetchval("SELECT count(*) FROM users") == 0
    visitor = Person(served.base_url, http)
    assert (await visitor.get("/")).location.startswith("/signin")  # type: ignore[union-attr]
    to_setup = await visitor.get("/signin")
    assert to_setup.status == 303 and to_setup.location == first_run.PAGE

    deps: Deps = served.app[DEPS]
    token = await first_run.issue_token(deps)
    assert token is not None
    page = await visitor.get(f"/setup?token={token}")
    assert page.status == 200 and page.headers["Referrer-Policy"] == "no-referrer"
    hidden = [i for i in page.tree.find_all("input") if i.attrs.get("name") == "token"]
    assert hidden and hidden[0].attrs["type"] == "hidden" and hidden[0].attrs["value"] == token

    form = {"email": "first@example.com", "name": "First", "password": PASSWORD, "account_name": "ops"}
    wrong = await visitor.post("/setup", {**form, "token": "not-the-token"})
    assert wrong.status == 403
    field = next(i for i in wrong.tree.find_all("input") if i.attrs.get("name") == "token")
    assert field.attrs.get("aria-invalid") == "true" and "setup link is wrong" in wrong.text
    assert 'value="first@example.com"' in wrong.text and PASSWORD not in wrong.text
    assert await db.fetchval("SELECT count(*) FROM users") == 0

    made = await visitor.post("/setup", {**form, "token": token})
    assert made.status == 303, made.text[:500]
    assert COOKIE in visitor.cookies
    overview = await visitor.get(made.location or "/")
    assert overview.status == 200 and "Monitors" in overview.text
    guide = overview.tree.one("section", "first-steps")  # the guided start
    assert "Welcome" in guide.text() and guide.text().count("To do") == 3
    assert {a.attrs["href"] for a in guide.find_all("a")} == {"/monitors/new", "/channels/new"}
    role = await db.fetchval(
        "SELECT m.role FROM memberships m JOIN users u ON u.id = m.user_id WHERE u.email = $1",
        "first@example.com",
    )
    assert role == "owner"

    again = await Person(served.base_url, http).get(f"/setup?token={token}")
    assert again.status == 200 and "Already set up" in again.text
    late = await Person(served.base_url, http).post(
        "/setup", {**form, "email": "second@example.com", "token": token}
    )
    assert late.status == 409 and await db.fetchval("SELECT count(*) FROM users") == 1
