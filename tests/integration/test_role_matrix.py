"""Every operation of the served OpenAPI document, for a key of each role and for another
account's owner, and for a signed-in member of each role (the session cookie, with the CSRF
token on writes) and a member of another account only: a role below the rule's gets 403
naming the role needed, one at or above it is let through, another account's objects answer 404.

The rule each operation falls under is written here, as (resource, operation) of
``monitor.domain.roles.RULES``, from the operation's id: an operation the document gains
without an entry here fails the test, so a route cannot be added without deciding who may use
it. What a caller let through gets is whatever the operation answers (201, 204, or a 4xx of its
own such as 404 for an object deleted by a caller before it, or 409 for the last owner), never
401 or 403; the callers go from another account's up to the owner, so the one who may delete
an object comes after the ones who may only be refused.
"""

from __future__ import annotations

import io
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import asyncpg
import pytest
from PIL import Image
from support import ApiClient, MonitorProcess
from support.api import ApiResponse
from support.db import ensure_account
from support.people import COOKIE, Browser, make_user

from monitor.domain import keys as api_keys
from monitor.domain.context import ROLES
from monitor.domain.roles import allows, needed

pytestmark = pytest.mark.timeout(120)

TARGET = "http://127.0.0.1:9/"
# operationId -> (resource, operation) of roles.RULES.
RULE_OF: dict[str, tuple[str, str]] = {
    **{op: ("monitors", "read") for op in ("listMonitors", "getMonitor", "listChecks", "listIncidents",
                                           "getUptime", "getStats", "getSummary", "listScreenshots",
                                           "getScreenshot")},
    **{op: ("monitors", "write") for op in ("createMonitor", "updateMonitor", "deleteMonitor",
                                            "rotateBadgeToken", "testMonitor", "acceptBaseline",
                                            "setScreenshotMasks")},
    **{op: ("channels", "read") for op in ("listChannels", "getChannel")},
    **{op: ("channels", "write") for op in ("createChannel", "updateChannel", "deleteChannel",
                                            "testChannel")},
    **{op: ("maintenance", "read") for op in ("listMaintenance", "getMaintenance", "previewMaintenance")},
    **{op: ("maintenance", "write") for op in ("createMaintenance", "updateMaintenance",
                                               "deleteMaintenance")},
    **{op: ("status_pages", "read") for op in ("listStatusPages", "getStatusPage")},
    **{op: ("status_pages", "write") for op in ("createStatusPage", "updateStatusPage", "deleteStatusPage")},
    **{op: ("posts", "read") for op in ("listPosts", "getPost")},
    **{op: ("posts", "write") for op in ("createPost", "updatePost", "deletePost", "addPostUpdate")},
    "listKeys": ("keys", "read"),
    **{op: ("keys", "write") for op in ("createKey", "revokeKey")},
    "listMembers": ("members", "read"),
    **{op: ("members", "write") for op in ("addMember", "changeMemberRole", "removeMember")},
    "listAudit": ("audit", "read"),
    "createInvitation": ("members", "write"),
    "getIncident": ("history", "read"),
    "getSlaReport": ("reports", "read"),
    "acknowledgeIncident": ("incidents", "acknowledge"),
    # Its example is an apply, not a dry run (which a viewer may make: test_apply_api.py).
    "applyConfig": ("config", "write"),
    "getConfigSchema": ("config", "read"),
}  # fmt: skip
# Which object a path's {id} names, by the path's first segment after /api/v1/.
ID_OF = {"monitors": "monitor", "channels": "channel", "maintenance": "window", "status-pages": "page",
         "keys": "key", "members": "member", "posts": "post"}  # fmt: skip


PASSWORD = "Matrix-Pass-4d8e2b7c1a"


@dataclass
class Member:
    """A signed-in member as a caller: the session cookie, and the CSRF token with writes."""

    browser: Browser

    async def request(self, method: str, path: str, json: Any = None) -> ApiResponse:
        b = self.browser
        headers = {"Cookie": f"{COOKIE}={b.session_id}"}
        if method not in ("GET", "HEAD"):
            headers["X-CSRF-Token"] = str(b.csrf)
        async with b.http.request(method, b.base_url + path, json=json, headers=headers) as response:
            return ApiResponse(
                method, path, response.status, dict(response.headers), await response.text(errors="replace")
            )


Caller = ApiClient | Member


@dataclass
class World:
    # "other" and "other (signed in)" (another account's owner), then each role, lowest first,
    # by key and signed in: "viewer", "viewer (signed in)", ...
    callers: dict[str, Caller]
    ids: dict[str, int]


def _role(name: str) -> str:
    return name.removesuffix(" (signed in)")


async def _made(client: ApiClient, path: str, body: dict[str, Any]) -> int:
    answer = await client.post(path, json=body)
    assert answer.status == 201, answer
    return int(answer.json["id"])


async def _signed_in(
    api_server: MonitorProcess,
    http: aiohttp.ClientSession,
    db: asyncpg.Connection,
    name: str,
    account: int,
    role: str,
) -> Member:
    email = f"{name}@matrix.example.com"
    await make_user(db, email, PASSWORD, account, role)
    browser = Browser(api_server.base_url, http)
    answer = await browser.sign_in(email, PASSWORD)
    assert answer.status == 201, answer
    return Member(browser)


@pytest.fixture
async def world(api_server: MonitorProcess, db: asyncpg.Connection) -> AsyncIterator[World]:
    assert api_server.running, api_server.tail()
    account, other = await ensure_account(db), await ensure_account(db, "other")
    http = aiohttp.ClientSession()
    secrets = {"other": (await api_keys.create_key(db, other, "other")).key}
    for role in ROLES:
        secrets[role] = (await api_keys.create_key(db, account, role, role)).key
    victim = await api_keys.create_key(db, account, "victim", "viewer")
    for email in ("ada@example.com", "member@example.com"):
        await db.execute("INSERT INTO users (email) VALUES ($1)", email)
    member = await db.fetchval("SELECT id FROM users WHERE email = 'member@example.com'")
    await db.execute(
        "INSERT INTO memberships (account_id, user_id, role) VALUES ($1, $2, 'editor')", account, member
    )
    clients = {name: ApiClient(api_server.base_url, key=key) for name, key in secrets.items()}
    callers: dict[str, Caller] = {}
    try:
        for name, client in clients.items():
            callers[name] = client
            account_of = other if name == "other" else account
            role = "owner" if name == "other" else name
            callers[f"{name} (signed in)"] = await _signed_in(api_server, http, db, name, account_of, role)
        owner = clients["owner"]
        monitor = await owner.create_monitor(name="m", url=TARGET, tags=["prod"])
        channel = await _made(
            owner, "/api/v1/channels", {"kind": "telegram", "name": "c", "config": {"chat_id": "1"}}
        )
        window = await _made(owner, "/api/v1/maintenance", {"name": "w", "tags": ["prod"], "once": {
            "from": "2030-01-01T00:00:00Z", "to": "2030-01-01T01:00:00Z"}})  # fmt: skip
        page = await _made(
            owner,
            "/api/v1/status-pages",
            {"slug": "roles", "title": "t", "groups": [{"name": "g", "tags": ["prod"]}]},
        )
        post = await _made(owner, f"/api/v1/status-pages/{page}/posts", {
            "title": "p", "update": {"state": "investigating", "text": "t"}})  # fmt: skip
        # An open incident of the monitor, for the operations on one (the first to acknowledge
        # it gets 200, those after it 409).
        incident = await db.fetchval(
            "INSERT INTO incidents (monitor_id, started_at) VALUES ($1, now()) RETURNING id", monitor["id"]
        )
        # A screenshot of the monitor, for the operations on one.
        png = io.BytesIO()
        Image.new("RGB", (4, 4), "white").save(png, "PNG")
        shot = await db.fetchval(
            "INSERT INTO screenshots (monitor_id, role, taken_at, width, height, png)"
            " VALUES ($1, 'latest', now(), 4, 4, $2) RETURNING id",
            monitor["id"],
            png.getvalue(),
        )
        ids = {"monitor": monitor["id"], "channel": channel, "window": window, "page": page, "key": victim.id,
               "member": member, "incident": incident, "screenshot": shot, "post": post}  # fmt: skip
        yield World(callers, ids)
    finally:
        for client in clients.values():
            await client.close()
        await http.close()


def _operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(method, path, operation) of every operation that a key may call, deletes last (not the
    signed-in person's own, ``security: [{"session": []}]``, which no key may: 401)."""
    found = [
        (method.upper(), path, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if operation.get("security") not in ([], [{"session": []}])
    ]
    return sorted(found, key=lambda o: o[0] == "DELETE")


def _body(operation: dict[str, Any]) -> Any:
    content = operation.get("requestBody", {}).get("content", {}).get("application/json")
    return content.get("example", {}) if content else None


async def test_every_operation_answers_each_role_as_its_rule_says(world: World) -> None:
    document = (await world.callers["owner"].get("/api/v1/openapi.json")).json
    operations = _operations(document)
    unruled = sorted(op["operationId"] for _, _, op in operations if op["operationId"] not in RULE_OF)
    assert not unruled, f"operations without a rule in this test (and maybe in roles.RULES): {unruled}"
    assert len(operations) == len(RULE_OF)
    wrong: list[str] = []
    for method, path, operation in operations:
        resource, action = RULE_OF[operation["operationId"]]
        segment = path.split("/")[3]
        url = path.replace("{id}", str(world.ids[ID_OF[segment]])) if "{id}" in path else path
        url = url.replace("{incident_id}", str(world.ids["incident"]))
        url = url.replace("{sid}", str(world.ids["screenshot"]))
        body = _body(operation)
        for name, client in world.callers.items():
            kwargs = {} if body is None else {"json": body}
            answer = await client.request(method, url, **kwargs)
            said = f"{name} {method} {url}: {answer.status} {answer.text[:200]}"
            if _role(name) == "other":
                # Another account's owner: its own collections, but none of this account's objects.
                if "{id}" in path and answer.status != 404:
                    wrong.append(said)
                elif "{id}" not in path and answer.status in (401, 403):
                    wrong.append(said)
            elif not allows(_role(name), resource, action):  # type: ignore[arg-type]
                error = answer.json.get("error", {}) if answer.status == 403 else {}
                if error.get("code") != "forbidden" or needed(resource, action) not in error.get(
                    "message", ""
                ):
                    wrong.append(said)
            elif answer.status in (401, 403) or answer.status >= 500:
                # This api has no mail server: an invitation it may make cannot be sent; nor does
                # a scheduler run, to try a monitor.
                if answer.status != 503 or answer.json["error"]["code"] not in (
                    "mail_unconfigured",
                    "no_scheduler",
                ):
                    wrong.append(said)
    assert not wrong, "\n".join(wrong)


def test_every_rule_of_this_test_is_a_rule_of_the_domain() -> None:
    for resource, action in RULE_OF.values():
        assert re.fullmatch(r"[a-z_]+", resource) and needed(resource, action) in ROLES
