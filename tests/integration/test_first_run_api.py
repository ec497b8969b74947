"""The first run through a real api process and the command line: the api's log shows the
setup link on a fresh database (and only the address once a user exists), ``GET`` and ``POST
/api/v1/setup`` make the first owner and sign them in as ``POST /api/v1/session`` does, wrong
tokens are refused and throttled, and ``monitor setup-url`` prints the address and a link that
works. The token is in no log line but the one that shows it on purpose."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from urllib.parse import parse_qs, urlsplit

import aiohttp
import asyncpg
import pytest
from support import ProcessFactory, clean_environ, leaks, wait_for
from support.people import COOKIE, Browser

pytestmark = pytest.mark.e2e

PASSWORD = "First-Run-Pass-8c1f3e7a"
ENV = {"MONITOR_SIGNIN_DELAY_SECONDS": "1", "MONITOR_SIGNIN_DELAY_MAX_SECONDS": "1"}
RUN_TIMEOUT = 30


def owner(token: str, **changes: str) -> dict[str, str]:
    leaks.secret("password", PASSWORD)
    return {"token": token, "email": "ada@example.com", "name": "Ada", "password": PASSWORD,
            "account_name": "acme", **changes}  # fmt: skip


def token_of(url: str) -> str:
    (token,) = parse_qs(urlsplit(url).query)["token"]
    leaks.secret("setup token", token)
    return token


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def test_the_api_logs_the_setup_link_and_it_makes_the_first_owner(
    procs: ProcessFactory, db: asyncpg.Connection, http: aiohttp.ClientSession
) -> None:
    api = await procs.start("api", env=ENV)
    line = await api.wait_log("dashboard.setup_token", timeout=15)
    assert line["url"].startswith(f"{api.base_url}/setup?token="), line
    assert line["dashboard"] == api.base_url and line["expires_in_hours"] == 24
    token = token_of(line["url"])
    b = Browser(api.base_url, http)

    state = await b.call("GET", "/api/v1/setup")
    assert (state.status, state.body) == (200, {"needs_owner": True})
    wrong = await b.call("POST", "/api/v1/setup", owner("not-the-token"))
    error = wrong.body["error"]
    assert (wrong.status, error["code"], error["field"]) == (403, "bad_setup_token", "token")
    assert not wrong.cookies and await db.fetchval("SELECT count(*) FROM users") == 0

    made = await b.call("POST", "/api/v1/setup", owner(token))
    assert made.status == 201, made.body
    (cookie,) = made.cookies
    assert cookie.startswith(f"{COOKIE}=") and "httponly" in cookie.lower() and "secure" in cookie.lower()
    b.session_id = cookie.split(";", 1)[0].split("=", 1)[1]
    leaks.secret("session id", b.session_id)
    assert made.body["email"] == "ada@example.com" and made.body["display_name"] == "Ada"
    assert [(m["account"], m["role"]) for m in made.body["memberships"]] == [("acme", "owner")]
    assert token not in str(made.body) and b.session_id not in str(made.body)
    me = await b.call("GET", "/api/v1/me")  # signed in, as after POST /api/v1/session
    assert me.status == 200 and me.body["id"] == made.body["id"]

    again = await b.call("POST", "/api/v1/setup", owner(token, email="eve@example.com"))
    assert (again.status, again.body["error"]["code"]) == (409, "already_set_up")
    assert (await b.call("GET", "/api/v1/setup")).body == {"needs_owner": False}

    # Once a user exists, a restarted api logs the address alone.
    later = await procs.start("api", env=ENV)
    await later.wait_log("dashboard.address", timeout=15, dashboard=later.base_url)
    assert not later.events("dashboard.setup_token")
    # The token is on the deliberate line only: not in any request's line.
    lines = api.log_text().splitlines()
    assert [ln for ln in lines if token in ln and "dashboard.setup_token" not in ln] == []


async def test_wrong_tokens_over_http_are_throttled_per_address(
    procs: ProcessFactory, db: asyncpg.Connection, http: aiohttp.ClientSession
) -> None:
    api = await procs.start("api", env=ENV)
    token = token_of((await api.wait_log("dashboard.setup_token", timeout=15))["url"])
    b = Browser(api.base_url, http)
    statuses = [(await b.call("POST", "/api/v1/setup", owner(f"guess-{n}"))).status for n in range(5)]
    assert statuses == [403] * 5
    held = await b.call("POST", "/api/v1/setup", owner(token))
    assert (held.status, held.body["error"]["code"]) == (429, "too_many_attempts")
    assert int(held.headers["Retry-After"]) >= 1
    assert await db.fetchval("SELECT count(*) FROM users") == 0

    async def made() -> bool:
        answer = await b.call("POST", "/api/v1/setup", owner(token))
        assert answer.status in (201, 429), answer.body
        return answer.status == 201

    await wait_for(made, timeout=10, interval=0.5)  # the right token, once the wait is over
    assert await db.fetchval("SELECT count(*) FROM memberships WHERE role = 'owner'") == 1


async def setup_url(database_url: str, **env: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "monitor", "setup-url",
        env=clean_environ() | {"MONITOR_DATABASE_URL": database_url, **env},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), RUN_TIMEOUT)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_setup_url_prints_the_address_and_a_link_that_works(
    procs: ProcessFactory, db: asyncpg.Connection, migrated: str, http: aiohttp.ClientSession
) -> None:
    public = "https://monitor.example.test/"
    code, out, err = await setup_url(migrated, MONITOR_PUBLIC_URL=public)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "dashboard: https://monitor.example.test/", out
    (link,) = [word for word in out.split() if "/setup?token=" in word]
    assert link.startswith("https://monitor.example.test/setup?token=")
    token = token_of(link)

    api = await procs.start("api", env=ENV)
    answer = await Browser(api.base_url, http).call("POST", "/api/v1/setup", owner(token))
    assert answer.status == 201, answer.body
    code, out, err = await setup_url(migrated, MONITOR_API_HOST="0.0.0.0", MONITOR_API_PORT="8123")
    assert (code, out) == (0, "dashboard: http://127.0.0.1:8123/\n"), err
