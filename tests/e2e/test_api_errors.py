"""The API's answers to bad input, unknown ids, empty history and a missing database.

Against a real ``monitor api`` process (one per module). Every error is JSON of the shape
``{"error": {"code", "message", "field"}}``; none is a 500 (the client fails on one).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from support import ApiClient, ApiResponse, ProcessFactory, free_port, rfc3339

pytestmark = pytest.mark.e2e

VALID: dict[str, Any] = {
    "name": "valid",
    "url": "http://127.0.0.1:9/health",
    "interval_seconds": 1,
    "timeout_seconds": 5,
    "confirm_after": 2,
}
UNKNOWN_ID = 987_654_321
DROP: Any = object()  # with_(field=DROP) leaves the field out


def with_(**changes: Any) -> dict[str, Any]:
    body = {**VALID, **changes}
    return {k: v for k, v in body.items() if v is not DROP}


def assert_error(response: ApiResponse, statuses: tuple[int, ...], field: str | None) -> dict[str, Any]:
    assert response.status in statuses, response
    assert response.is_json, response.headers
    error = response.json["error"]
    assert error["code"] and error["message"], error
    if field is None:
        assert error.get("field") is None, error
    else:
        assert error.get("field") == field or str(error.get("field")).startswith(field + "."), error
    return error  # type: ignore[no-any-return]


# (case, body, field the error must name)
BAD_CREATES = [
    ("url not a URL", with_(url="not a url"), "url"),
    ("url without host", with_(url="http://"), "url"),
    ("url of another scheme", with_(url="ftp://127.0.0.1/file"), "url"),
    ("url not a string", with_(url=42), "url"),
    ("url missing", with_(url=DROP), "url"),
    ("interval below the minimum", with_(interval_seconds=0.5), "interval_seconds"),
    ("interval zero", with_(interval_seconds=0), "interval_seconds"),
    ("interval not a number", with_(interval_seconds="abc"), "interval_seconds"),
    ("interval a boolean", with_(interval_seconds=True), "interval_seconds"),
    ("negative timeout", with_(timeout_seconds=-1), "timeout_seconds"),
    ("unknown field", with_(colour="red"), "colour"),
    ("unknown type", with_(type="tcp"), "type"),
    ("name missing", with_(name=DROP), "name"),
    ("name empty", with_(name=""), "name"),
    ("confirm_after zero", with_(confirm_after=0), "confirm_after"),
    ("confirm_after a string", with_(confirm_after="2"), "confirm_after"),
    ("expected_status out of range", with_(expected_status=[999]), "expected_status"),
    ("telegram_chat_id not a chat", with_(telegram_chat_id="hello world"), "telegram_chat_id"),
]


@pytest.mark.parametrize(("body", "field"), [c[1:] for c in BAD_CREATES], ids=[c[0] for c in BAD_CREATES])
async def test_bad_monitor_is_refused_naming_the_field(
    api: ApiClient, body: dict[str, Any], field: str
) -> None:
    assert_error(await api.post("/api/v1/monitors", json=body), (400, 422), field)
    listed = await api.get("/api/v1/monitors")
    assert listed.json["items"] == []


async def test_blocked_target_is_refused_naming_the_url(api: ApiClient) -> None:
    # Only loopback is allowed to these tests; a metadata address stays denied.
    error = assert_error(
        await api.post("/api/v1/monitors", json=with_(url="http://169.254.169.254/latest")), (400, 422), "url"
    )
    assert error["code"] == "target_blocked", error


BAD_PATCHES = [
    ("interval below the minimum", {"interval_seconds": 0.5}, "interval_seconds"),
    ("negative timeout", {"timeout_seconds": -3}, "timeout_seconds"),
    ("unknown field", {"colour": "red"}, "colour"),
    ("bad url", {"url": "nope"}, "url"),
    ("null name", {"name": None}, "name"),
    ("paused not a boolean", {"paused": "yes"}, "paused"),
]


@pytest.mark.parametrize(("body", "field"), [c[1:] for c in BAD_PATCHES], ids=[c[0] for c in BAD_PATCHES])
async def test_bad_patch_is_refused_naming_the_field(
    api: ApiClient, body: dict[str, Any], field: str
) -> None:
    monitor = await api.create_monitor(**VALID)
    assert_error(await api.patch(f"/api/v1/monitors/{monitor['id']}", json=body), (400, 422), field)
    assert await api.monitor(monitor["id"]) == monitor


BAD_BODIES = [
    ("malformed JSON", b'{"name": "x", '),
    ("not UTF-8", b'{"name": "\xff"}'),
    ("JSON list", b"[1, 2]"),
    ("JSON string", b'"monitor"'),
    ("JSON null", b"null"),
    ("empty body", b""),
]


@pytest.mark.parametrize("method", ["POST", "PATCH"])
@pytest.mark.parametrize("data", [c[1] for c in BAD_BODIES], ids=[c[0] for c in BAD_BODIES])
async def test_body_that_is_not_a_json_object_is_refused(api: ApiClient, method: str, data: bytes) -> None:
    monitor = await api.create_monitor(**VALID)
    path = "/api/v1/monitors" if method == "POST" else f"/api/v1/monitors/{monitor['id']}"
    assert_error(await api.request(method, path, data=data), (400,), None)


ID_PATHS = [
    ("GET", "/api/v1/monitors/{id}"),
    ("PATCH", "/api/v1/monitors/{id}"),
    ("DELETE", "/api/v1/monitors/{id}"),
    ("GET", "/api/v1/monitors/{id}/checks"),
    ("GET", "/api/v1/monitors/{id}/incidents"),
    ("GET", "/api/v1/monitors/{id}/uptime"),
]


@pytest.mark.parametrize("monitor_id", [str(UNKNOWN_ID), "0", "abc", "99999999999999999999999"])
@pytest.mark.parametrize(("method", "path"), ID_PATHS, ids=[f"{m} {p}" for m, p in ID_PATHS])
async def test_unknown_monitor_is_404(api: ApiClient, method: str, path: str, monitor_id: str) -> None:
    await api.create_monitor(**VALID)  # some monitor exists; just not this one
    kwargs = {"json": {"name": "renamed"}} if method == "PATCH" else {}
    error = assert_error(await api.request(method, path.format(id=monitor_id), **kwargs), (404,), None)
    assert error["code"] == "not_found", error


async def test_deleted_monitor_is_404(api: ApiClient) -> None:
    monitor = await api.create_monitor(**VALID)
    assert (await api.delete(f"/api/v1/monitors/{monitor['id']}")).status == 204
    assert_error(await api.get(f"/api/v1/monitors/{monitor['id']}"), (404,), None)
    assert_error(await api.delete(f"/api/v1/monitors/{monitor['id']}"), (404,), None)


async def test_monitor_without_checks_has_no_uptime_figure(api: ApiClient) -> None:
    monitor = await api.create_monitor(**VALID)
    now = datetime.now(UTC)
    queries: list[dict[str, str]] = [
        {},
        {"window": "7d"},
        {"from": rfc3339(now - timedelta(days=1)), "to": rfc3339(now)},
    ]
    for params in queries:
        response = await api.get(f"/api/v1/monitors/{monitor['id']}/uptime", params=params)
        assert response.status == 200, (params, response)
        body = response.json
        assert body["monitor_id"] == monitor["id"]
        assert body["uptime_percent"] is None, (params, body)
        assert body["checks"] == 0 and body["checks_up"] == 0, (params, body)
    checks = await api.get(f"/api/v1/monitors/{monitor['id']}/checks")
    assert checks.status == 200 and checks.json["items"] == [], checks


BAD_QUERIES = [
    ("uptime", {"from": "yesterday"}, "from"),
    ("uptime", {"to": "2024-01-01T00:00:00"}, "to"),  # no time zone
    ("uptime", {"from": "2024-01-02T00:00:00Z", "to": "2024-01-01T00:00:00Z"}, "from"),
    ("uptime", {"window": "1y"}, "window"),
    ("uptime", {"window": "24h", "from": "2024-01-01T00:00:00Z"}, "window"),
    ("checks", {"limit": "0"}, "limit"),
    ("checks", {"limit": "many"}, "limit"),
    ("checks", {"cursor": "not-a-cursor"}, "cursor"),
]


@pytest.mark.parametrize(
    ("resource", "params", "field"), BAD_QUERIES, ids=[f"{r} {p}" for r, p, _ in BAD_QUERIES]
)
async def test_bad_query_is_refused_naming_the_parameter(
    api: ApiClient, resource: str, params: dict[str, str], field: str
) -> None:
    monitor = await api.create_monitor(**VALID)
    response = await api.get(f"/api/v1/monitors/{monitor['id']}/{resource}", params=params)
    assert_error(response, (400, 422), field)


async def test_database_unreachable_is_503_and_health_stays_up(
    procs: ProcessFactory, api_client: Callable[[str], ApiClient]
) -> None:
    closed = f"postgresql://postgres@127.0.0.1:{free_port()}/monitor_test"
    proc = await procs.start("api", env={"MONITOR_DATABASE_URL": closed})
    api = api_client(proc.base_url)

    requests: list[tuple[str, str, dict[str, Any]]] = [
        ("GET", "/api/v1/monitors", {}),
        ("POST", "/api/v1/monitors", {"json": VALID}),
        ("GET", "/api/v1/monitors/1", {}),
        ("PATCH", "/api/v1/monitors/1", {"json": {"name": "x"}}),
        ("DELETE", "/api/v1/monitors/1", {}),
        ("GET", "/api/v1/monitors/1/checks", {}),
        ("GET", "/api/v1/monitors/1/incidents", {}),
        ("GET", "/api/v1/monitors/1/uptime", {}),
    ]
    for method, path, kwargs in requests:
        response = await api.request(method, path, **kwargs)
        error = assert_error(response, (503,), None)
        assert error["code"], (method, path, error)

    health = await api.get("/healthz")
    assert health.status == 200 and health.is_json, health
    ready = await api.get("/readyz")
    assert ready.status == 503 and ready.is_json, ready

    # The key is checked against the database before anything else, so even bad input is a 503.
    assert_error(await api.post("/api/v1/monitors", json=with_(interval_seconds=0.5)), (503,), None)

    assert await proc.terminate() == 0
    assert proc.tracebacks() == []
