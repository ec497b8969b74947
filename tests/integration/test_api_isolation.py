"""One account can neither see nor change another's objects, and no request goes without a key.

Accounts A and B each get a key (``monitor.domain.keys``, as the CLI makes them). Through the API,
A makes a channel, a monitor using it, a second monitor that is down, and a second key; B
makes monitors of its own. With B's key, every endpoint and method on A's objects answers
404 with exactly the body it gives for an id that does not exist, attaching A's channel to
B's monitor is refused like attaching a channel that does not exist, lists and the summary
hold only B's, and afterwards A's objects are as they were. A request without a key, with
a malformed ``Authorization`` header or with a revoked key gets 401 and the JSON error.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import asyncpg
import pytest
from support import ApiClient, ApiResponse, MonitorProcess

from monitor.domain import accounts
from monitor.domain import keys as api_keys

pytestmark = pytest.mark.timeout(60)

# An id no object has: B's answers about A's objects must be the answers about this one.
NOBODY = 2**62
# A loopback literal: allowed by the test api's policy, and vetting it needs no DNS.
TARGET = "http://127.0.0.1:9/"


@dataclass
class World:
    a: ApiClient
    b: ApiClient
    monitor: dict[str, Any]  # A's, with A's channel attached
    down: dict[str, Any]  # A's, down
    channel: dict[str, Any]  # A's
    key: dict[str, Any]  # A's second key (with its secret)
    b_monitors: list[dict[str, Any]]

    def ids(self) -> dict[str, int]:
        return {"monitor": self.monitor["id"], "channel": self.channel["id"], "key": self.key["id"]}


async def _created(response: ApiResponse) -> dict[str, Any]:
    assert response.status == 201, response
    return response.json  # type: ignore[no-any-return]


@pytest.fixture
async def world(api_server: MonitorProcess, db: asyncpg.Connection) -> AsyncIterator[World]:
    assert api_server.running, api_server.tail()
    base = api_server.base_url
    key_a = await api_keys.create_key(db, await accounts.create_account(db, "alice"), "a")
    key_b = await api_keys.create_key(db, await accounts.create_account(db, "bob"), "b")
    async with ApiClient(base, key=key_a.key) as a, ApiClient(base, key=key_b.key) as b:
        spec = {"kind": "telegram", "name": "A", "config": {"chat_id": "111"}}
        channel = await _created(await a.post("/api/v1/channels", json=spec))
        monitor = await a.create_monitor(name="A", url=TARGET, tags=["shared"], channel_ids=[channel["id"]])
        down = await a.create_monitor(name="A down", url=TARGET, tags=["shared"])
        await db.execute(
            "UPDATE monitor_state SET status = 'down', changed_at = now() WHERE monitor_id = $1", down["id"]
        )
        key = await _created(await a.post("/api/v1/keys", json={"name": "A's second"}))
        b_monitors = [
            await b.create_monitor(name="B", url=TARGET, tags=["shared"]),
            await b.create_monitor(name="B paused", url=TARGET, tags=["shared"], paused=True),
        ]
        monitor, down = await a.monitor(monitor["id"]), await a.monitor(down["id"])
        channel = (await a.get(f"/api/v1/channels/{channel['id']}")).json  # now used by a monitor
        yield World(a, b, monitor, down, channel, key, b_monitors)


# Every endpoint and method that names an object: (what, method, path, body).
ON_OBJECTS = [
    ("monitor", "GET", "/api/v1/monitors/{monitor}", None),
    ("monitor", "PATCH", "/api/v1/monitors/{monitor}", {"name": "taken over"}),
    ("monitor", "PATCH", "/api/v1/monitors/{monitor}", {"paused": True}),
    ("monitor", "DELETE", "/api/v1/monitors/{monitor}", None),
    ("monitor", "GET", "/api/v1/monitors/{monitor}/checks", None),
    ("monitor", "GET", "/api/v1/monitors/{monitor}/incidents", None),
    ("monitor", "GET", "/api/v1/monitors/{monitor}/uptime", None),
    ("monitor", "GET", "/api/v1/monitors/{monitor}/uptime?window=24h,7d", None),
    ("monitor", "GET", "/api/v1/monitors/{monitor}/stats", None),
    ("monitor", "GET", "/api/v1/monitors/{monitor}/stats?bucket=1d", None),
    ("channel", "GET", "/api/v1/channels/{channel}", None),
    ("channel", "PATCH", "/api/v1/channels/{channel}", {"name": "taken over"}),
    ("channel", "PATCH", "/api/v1/channels/{channel}", {"config": {"chat_id": "666"}}),
    ("channel", "DELETE", "/api/v1/channels/{channel}", None),
    ("channel", "POST", "/api/v1/channels/{channel}/test", None),
    ("key", "DELETE", "/api/v1/keys/{key}", None),
]


async def _unchanged(world: World, db: asyncpg.Connection) -> None:
    """A's objects are exactly as A left them, and nothing was sent on A's behalf."""
    assert await world.a.monitor(world.monitor["id"]) == world.monitor
    channel = await world.a.get(f"/api/v1/channels/{world.channel['id']}")
    assert channel.status == 200 and channel.json == world.channel, channel
    async with ApiClient(world.a.base_url, key=world.key["key"]) as second:
        assert (await second.get("/api/v1/summary")).status == 200  # A's second key is not revoked
    assert await db.fetchval("SELECT count(*) FROM outbox") == 0


@pytest.mark.parametrize(
    ("what", "method", "path", "body"),
    ON_OBJECTS,
    ids=[f"{method} {path}" + (f" {body}" if body else "") for _, method, path, body in ON_OBJECTS],
)
async def test_another_accounts_object_is_not_found(
    world: World, db: asyncpg.Connection, what: str, method: str, path: str, body: dict[str, Any] | None
) -> None:
    kwargs: dict[str, Any] = {} if body is None else {"json": body}
    theirs = await world.b.request(method, path.format(**world.ids()), **kwargs)
    nobodys = await world.b.request(method, path.format(**dict.fromkeys(world.ids(), NOBODY)), **kwargs)
    assert theirs.status == 404, theirs
    assert theirs.json == nobodys.json == {"error": {"code": "not_found", "message": f"{what} not found"}}
    assert theirs.headers["Content-Type"] == nobodys.headers["Content-Type"]
    # A's own key still reaches the object: the 404 was about B, not about the object.
    if method == "GET":
        assert (await world.a.request(method, path.format(**world.ids()))).status == 200
    await _unchanged(world, db)


async def test_a_stale_if_match_does_not_reveal_another_accounts_monitor(
    world: World, db: asyncpg.Connection
) -> None:
    # 412 would say the monitor exists; the ownership check comes first.
    for target in (world.monitor["id"], NOBODY):
        response = await world.b.patch(
            f"/api/v1/monitors/{target}", json={"name": "x"}, headers={"If-Match": '"stale"'}
        )
        assert response.status == 404, response
    await _unchanged(world, db)


async def test_another_accounts_channel_cannot_be_attached(world: World, db: asyncpg.Connection) -> None:
    channel, own = world.channel["id"], world.b_monitors[0]["id"]
    attempts = [
        ("POST", "/api/v1/monitors", {"name": "B", "url": TARGET}),
        ("PATCH", f"/api/v1/monitors/{own}", {}),
    ]
    for method, path, body in attempts:
        theirs = await world.b.request(method, path, json={**body, "channel_ids": [channel]})
        nobodys = await world.b.request(method, path, json={**body, "channel_ids": [NOBODY]})
        assert theirs.status == nobodys.status == 422, (theirs, nobodys)
        assert theirs.json["error"] == {
            "code": "invalid", "field": "channel_ids", "message": f"channel_ids: no channel {channel}",
        }  # fmt: skip
        assert nobodys.json["error"]["message"] == f"channel_ids: no channel {NOBODY}"
    assert (await world.b.monitor(own))["channel_ids"] == []
    assert [m["name"] for m in (await world.b.get("/api/v1/monitors")).json["items"]] == ["B", "B paused"]
    await _unchanged(world, db)


@pytest.mark.parametrize(
    "query",
    ["", "?tag=shared", "?status=down", "?status=unknown", "?include=uptime_24h,uptime_7d", "?limit=1"],
)
async def test_monitor_lists_hold_only_the_callers(world: World, query: str) -> None:
    theirs = {world.monitor["id"], world.down["id"]}
    own = {m["id"] for m in world.b_monitors}
    seen: set[int] = set()
    path: str | None = f"/api/v1/monitors{query}"
    while path is not None:
        page = await world.b.get(path)
        assert page.status == 200, page
        seen |= {m["id"] for m in page.json["items"]}
        cursor = page.json["next_cursor"]
        path = None if cursor is None else f"/api/v1/monitors?limit=1&cursor={cursor}"
    assert not seen & theirs
    expected = {"?status=down": set(), "?status=unknown": {world.b_monitors[0]["id"]}}.get(query, own)
    assert seen == expected
    # The same queries with A's key do see A's monitors (so the filters could have matched them).
    if query in ("", "?tag=shared", "?status=down"):
        mine = {m["id"] for m in (await world.a.get(f"/api/v1/monitors{query}")).json["items"]}
        assert mine & theirs


async def test_channel_and_key_lists_hold_only_the_callers(world: World) -> None:
    channels = (await world.b.get("/api/v1/channels")).json["items"]
    assert channels == []
    keys = (await world.b.get("/api/v1/keys")).json["items"]
    assert [k["name"] for k in keys] == ["b"]
    assert world.key["id"] not in {k["id"] for k in keys}
    assert {k["name"] for k in (await world.a.get("/api/v1/keys")).json["items"]} == {"a", "A's second"}


async def test_summary_counts_only_the_callers_monitors(world: World) -> None:
    b = (await world.b.get("/api/v1/summary")).json
    assert b == {"monitors": 2, "by_status": {"up": 0, "degraded": 0, "down": 0, "paused": 1, "unknown": 1},
                 "down": [], "maintenance": {"active": [], "upcoming": []}}  # fmt: skip
    a = (await world.a.get("/api/v1/summary")).json
    assert a["monitors"] == 2
    assert a["by_status"] == {"up": 0, "degraded": 0, "down": 1, "paused": 0, "unknown": 1}
    assert [d["id"] for d in a["down"]] == [world.down["id"]]


# -- authentication ----------------------------------------------------------------------------

NO_KEY = [
    ("no header", None),
    ("empty header", ""),
    ("scheme only", "Bearer"),
    ("blank key", "Bearer    "),
    ("basic auth", "Basic YWxpY2U6c2VjcmV0"),
    ("key without scheme", "mk_00000000_secret"),
    ("unknown key", "Bearer mk_00000000_notakeyatall"),
    ("not our key format", "Bearer abc.def.ghi"),
]
ENDPOINTS = [
    ("GET", "/api/v1/monitors"),
    ("POST", "/api/v1/monitors"),
    ("GET", "/api/v1/monitors/{monitor}"),
    ("DELETE", "/api/v1/monitors/{monitor}"),
    ("GET", "/api/v1/monitors/{monitor}/uptime"),
    ("POST", "/api/v1/channels/{channel}/test"),
    ("GET", "/api/v1/keys"),
    ("DELETE", "/api/v1/keys/{key}"),
    ("GET", "/api/v1/summary"),
]


async def _anonymous(world: World, header: str | None, method: str, path: str) -> ApiResponse:
    async with ApiClient(world.a.base_url) as anonymous:
        headers = {} if header is None else {"Authorization": header}
        body = {"json": {"name": "x", "url": TARGET}} if method == "POST" else {}
        return await anonymous.request(method, path.format(**world.ids()), headers=headers, **body)


def _assert_401(response: ApiResponse) -> None:
    assert response.status == 401, response
    assert response.is_json, response
    assert response.json["error"]["code"] == "unauthorized", response
    assert set(response.json["error"]) == {"code", "message"}


@pytest.mark.parametrize("header", [h for _, h in NO_KEY], ids=[n for n, _ in NO_KEY])
async def test_a_request_without_a_valid_key_is_401(
    world: World, db: asyncpg.Connection, header: str | None
) -> None:
    # Even on A's real objects: no answer says whether an id exists before the key is known.
    for method, path in ENDPOINTS:
        _assert_401(await _anonymous(world, header, method, path))
    await _unchanged(world, db)


async def test_a_revoked_key_is_401(world: World) -> None:
    second = world.key
    async with ApiClient(world.a.base_url, key=second["key"]) as client:
        assert (await client.get("/api/v1/monitors")).status == 200
        revoked = await world.a.delete(f"/api/v1/keys/{second['id']}")
        assert revoked.status == 204, revoked
        for method, path in ENDPOINTS:
            response = await client.request(method, path.format(**world.ids()))
            _assert_401(response)
            assert response.json["error"]["message"] == "the API key is unknown or revoked"
    listed = {k["id"]: k for k in (await world.a.get("/api/v1/keys")).json["items"]}
    assert listed[second["id"]]["revoked_at"] is not None
    # Revoking again is harmless, and the key that revoked it still works.
    assert (await world.a.delete(f"/api/v1/keys/{second['id']}")).status == 204
    assert (await world.a.get("/api/v1/summary")).status == 200


async def test_the_api_description_needs_no_key(world: World) -> None:
    async with ApiClient(world.a.base_url) as anonymous:
        response = await anonymous.get("/api/v1/openapi.json")
    assert response.status == 200 and response.json["openapi"] == "3.1.0"
