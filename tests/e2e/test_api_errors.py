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
    "interval_seconds": 5,
    "timeout_seconds": 5,
    "confirm_after": 2,
}
UNKNOWN_ID = 987_654_321
# 720 characters, 4,225 once its non-ASCII letters are percent-encoded (as it would be stored).
LONG_ONCE_STORED = "http://127.0.0.1:9/" + "я" * 701
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
    ("unknown type", with_(type="smtp"), "type"),
    ("name missing", with_(name=DROP), "name"),
    ("name empty", with_(name=""), "name"),
    ("confirm_after zero", with_(confirm_after=0), "confirm_after"),
    ("confirm_after a string", with_(confirm_after="2"), "confirm_after"),
    ("expected_status out of range", with_(expected_status=[999]), "expected_status"),
    ("telegram_chat_id not a chat", with_(telegram_chat_id="hello world"), "telegram_chat_id"),
    ("timeout longer than the interval", with_(interval_seconds=2, timeout_seconds=2.5), "timeout_seconds"),
    ("url longer than 2048 once stored", with_(url=LONG_ONCE_STORED), "url"),
    ("name only invisible characters", with_(name="\u200b\u3164\u2800"), "name"),
    ("name with a right-to-left override", with_(name="pay\u202egnp.exe"), "name"),
    ("name with a bidi isolate", with_(name="a\u2066b"), "name"),
    ("name with BEL", with_(name="shop\x07"), "name"),
    ("name with ESC", with_(name="\x1b[2Jshop"), "name"),
    ("name with a newline", with_(name="shop\nRECOVERED"), "name"),
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
    ("timeout longer than the stored interval", {"timeout_seconds": 6}, "timeout_seconds"),
    ("interval shorter than the stored timeout", {"interval_seconds": 4}, "timeout_seconds"),
    (
        "timeout longer than the new interval",
        {"interval_seconds": 10, "timeout_seconds": 11},
        "timeout_seconds",
    ),
    ("url longer than 2048 once stored", {"url": LONG_ONCE_STORED}, "url"),
    ("name only invisible characters", {"name": "\u200d\ufeff"}, "name"),
    ("name with a left-to-right override", {"name": "\u202dname"}, "name"),
    ("name with a newline", {"name": "a\nb"}, "name"),
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
        # A heartbeat's job is told to retry: its ping is not lost.
        ("GET", f"/ping/{'a' * 32}", {}),
        ("POST", f"/ping/{'a' * 32}/fail", {"data": b"disk full"}),
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


def etag_of(response: ApiResponse) -> str:
    return next(v for k, v in response.headers.items() if k.lower() == "etag")


# -- fields named as written, the timeout, URLs as stored, If-Match lists, names ---------------

# (case, body, the exact field, words of the message)
EXACT = [
    ("a status code of the wrong type", with_(expected_status=[200, 1.5]), "expected_status.1", ""),
    ("a keyword assertion's flag",
     with_(assertions=[{"type": "keyword", "keyword": "ok", "case_sensitive": "no"}]),
     "assertions.0.case_sensitive", ""),
    ("basic auth without a password", with_(auth={"type": "basic", "username": "u"}), "auth.password",
     "field required"),
    ("credentials in the URL", with_(url="http://user:secret@127.0.0.1:9/"), "url",
     "put them in the auth field, not in the URL"),
    ("timeout longer than the interval", with_(interval_seconds=2, timeout_seconds=3), "timeout_seconds",
     "3 s is longer than interval_seconds (2 s)"),
    ("url longer than 2048 once stored", with_(url=LONG_ONCE_STORED), "url",
     "longer than 2048 characters as stored (4225 once normalised"),
    ("name only invisible characters", with_(name="\u200b"), "name", "at least one visible character"),
]  # fmt: skip


@pytest.mark.parametrize(("body", "field", "says"), [c[1:] for c in EXACT], ids=[c[0] for c in EXACT])
async def test_the_field_is_named_as_written(
    api: ApiClient, body: dict[str, Any], field: str, says: str
) -> None:
    error = assert_error(await api.post("/api/v1/monitors", json=body), (422,), field)
    assert error["field"] == field, error  # never a union branch: not expected_status.1.int
    assert error["message"].startswith(f"{field}: ") and says in error["message"], error
    assert "secret" not in error["message"]


async def test_a_patch_of_the_timeout_or_the_interval_is_checked_against_the_stored_other(
    api: ApiClient,
) -> None:
    monitor = await api.create_monitor(**with_(interval_seconds=10, timeout_seconds=4))
    path = f"/api/v1/monitors/{monitor['id']}"
    error = assert_error(await api.patch(path, json={"interval_seconds": 3}), (422,), "timeout_seconds")
    assert error["message"] == (
        "timeout_seconds: the monitor's 4 s is longer than the new interval_seconds (3 s); "
        "lower timeout_seconds in the same PATCH"
    )
    error = assert_error(await api.patch(path, json={"timeout_seconds": 11}), (422,), "timeout_seconds")
    assert "11 s is longer than the monitor's interval_seconds (10 s)" in error["message"], error
    assert await api.monitor(monitor["id"]) == monitor
    # Both at once, or each within the other: taken.
    changed = await api.patch(path, json={"interval_seconds": 3, "timeout_seconds": 3})
    assert changed.status == 200, changed
    assert (changed.json["interval_seconds"], changed.json["timeout_seconds"]) == (3, 3)
    assert (await api.patch(path, json={"interval_seconds": 20})).status == 200
    assert (await api.patch(path, json={"timeout_seconds": 20})).status == 200


async def test_the_default_timeout_is_never_longer_than_the_interval(api: ApiClient) -> None:
    short = await api.create_monitor(**with_(interval_seconds=2, timeout_seconds=DROP))
    assert short["timeout_seconds"] == 2
    usual = await api.create_monitor(**with_(interval_seconds=60, timeout_seconds=DROP))
    assert usual["timeout_seconds"] == 10


async def test_a_stored_url_can_be_sent_back(api: ApiClient) -> None:
    # 358 characters, 2,048 as stored (each letter is percent-encoded to six): as long as a URL can be.
    url = "http://127.0.0.1:9/" + "я" * 338 + "a" * 1
    monitor = await api.create_monitor(**with_(url=url))
    assert len(monitor["url"]) == 2048 and monitor["url"] != url
    read = await api.get(f"/api/v1/monitors/{monitor['id']}")
    back = {k: v for k, v in read.json.items() if k in VALID}
    response = await api.patch(
        f"/api/v1/monitors/{monitor['id']}", json=back, headers={"If-Match": etag_of(read)}
    )
    assert response.status == 200, response
    assert response.json["url"] == monitor["url"]


# (case, If-Match given the current ETag as {etag}, status)
IF_MATCH = [
    ("the current ETag", "{etag}", 200),
    ("a list holding it", '"1-1", {etag}', 200),
    ("a list holding it, no spaces", '{etag},"2-2"', 200),
    ("any", "*", 200),
    ("a list without it", '"1-1", "2-2"', 412),
    ("the current ETag, weak", "W/{etag}", 412),
    ("a list holding it only weak", '"1-1", W/{etag}', 412),
    ("malformed", "{etag} garbage", 412),
]


@pytest.mark.parametrize(("header", "status"), [c[1:] for c in IF_MATCH], ids=[c[0] for c in IF_MATCH])
async def test_if_match_takes_a_list_of_etags(api: ApiClient, header: str, status: int) -> None:
    monitor = await api.create_monitor(**VALID)
    path = f"/api/v1/monitors/{monitor['id']}"
    etag = etag_of(await api.get(path))
    response = await api.patch(path, json={"name": "renamed"}, headers={"If-Match": header.format(etag=etag)})
    assert response.status == status, response
    if status == 412:
        assert response.json["error"]["code"] == "precondition_failed"
        assert (await api.monitor(monitor["id"]))["name"] == VALID["name"]
    else:
        assert response.json["name"] == "renamed" and etag_of(response) != etag


BAD_CHANNEL_NAMES = [
    ("empty", ""),
    ("only invisible characters", "\u200b\u2060"),
    ("a right-to-left override", "ops\u202e"),
    ("a pop directional isolate", "ops\u2069"),
    ("ESC", "ops\x1b]0;title\x07"),
    ("a newline", "ops\nDOWN: everything"),
]


@pytest.mark.parametrize("name", [c[1] for c in BAD_CHANNEL_NAMES], ids=[c[0] for c in BAD_CHANNEL_NAMES])
async def test_a_channel_name_must_show_and_not_steer(api: ApiClient, name: str) -> None:
    channel = {"kind": "telegram", "name": name, "config": {"chat_id": "-1001"}}
    assert_error(await api.post("/api/v1/channels", json=channel), (422,), "name")
    made = await api.post("/api/v1/channels", json={**channel, "name": "ops"})
    assert made.status == 201, made
    assert_error(await api.patch(f"/api/v1/channels/{made.json['id']}", json={"name": name}), (422,), "name")
    assert (await api.get(f"/api/v1/channels/{made.json['id']}")).json["name"] == "ops"
