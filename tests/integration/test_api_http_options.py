"""Request options, secrets and assertions through a live ``monitor api``, and what it stores.

Every option round-trips; the non-secret parts land in ``monitors.settings`` (a plain monitor's
stays ``{}``), the credentials in one ``monitor_secrets`` row, each value sealed with the
test key, read here straight from the database. No answer shows a credential whole: each
reads as the mask, and the mask sent back in a PATCH keeps what is stored, so
GET-change-PATCH works. Bad input is a 422 naming the field, and never quotes a credential.
"""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest
from support import ApiClient, ApiResponse, ProcessFactory
from support.procs import TEST_SECRET_KEY

from monitor.secrets import MASK, SecretBox, is_sealed, map_monitor_secrets, open_monitor_secrets

pytestmark = pytest.mark.timeout(60)

# A loopback literal: allowed by the test api's policy, and vetting it needs no DNS.
URL = "http://127.0.0.1:9/health"
PASSWORD = "pw-3f9a1c77e0d4"
TOKEN = "tok-8b2e55a0c9d1"
API_KEY = "key-71c0ffee4242"
COOKIE = "sid=cookie-5a5a5a5a"
SECRETS = (PASSWORD, TOKEN, API_KEY, COOKIE)

ASSERTIONS = [
    {"type": "keyword", "keyword": "Welcome", "absent": False, "case_sensitive": False},
    {"type": "regex", "pattern": r"v\d+\.\d+", "absent": False},
    {"type": "json", "path": "$.status", "op": "==", "value": "ok"},
    {"type": "json", "path": "$.items", "op": "not_empty"},
    {"type": "json", "path": "$.count", "op": ">=", "value": 3},
    {"type": "header", "name": "Content-Type", "op": "matches", "value": "json"},
    {"type": "header", "name": "X-Debug", "op": "absent"},
    {"type": "response_time", "below_ms": 1500.0},
]
FULL: dict[str, Any] = {
    "method": "POST",
    "headers": {"X-Env": "prod", "X-Api-Key": API_KEY, "Cookie": COOKIE, "Accept": "application/json"},
    "body": '{"probe": true}\n',
    "content_type": "application/json",
    "auth": {"type": "basic", "username": "robot", "password": PASSWORD},
    "max_body_bytes": 65_536,
    "tls_verify": True,
    "assertions": ASSERTIONS,
}
DEFAULTS = {"method": "GET", "headers": {}, "body": None, "content_type": None, "auth": None,
            "max_body_bytes": 1_048_576, "tls_verify": True, "assertions": []}  # fmt: skip


def masked(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` as the API shows them."""
    shown = {**options, "headers": {**options["headers"], "X-Api-Key": MASK, "Cookie": MASK}}
    shown["auth"] = {**options["auth"], "password": MASK}
    return shown


def options_of(monitor: dict[str, Any]) -> dict[str, Any]:
    return {k: monitor[k] for k in DEFAULTS}


def assert_no_secret(response: ApiResponse) -> None:
    for secret in SECRETS:
        assert secret not in response.text, (secret, response)


async def stored(db: asyncpg.Connection, monitor_id: int) -> tuple[str, dict[str, Any] | None]:
    """The monitor's settings as text, and its secrets opened (each one stored sealed)."""
    settings = await db.fetchval("SELECT settings::text FROM monitors WHERE id = $1", monitor_id)
    secrets = await db.fetchval("SELECT secrets FROM monitor_secrets WHERE monitor_id = $1", monitor_id)
    if secrets is not None:
        values: list[str] = []
        map_monitor_secrets(secrets, lambda value: values.append(value) or value)
        assert values and all(is_sealed(v) for v in values), secrets
    return settings, open_monitor_secrets(SecretBox.from_setting(TEST_SECRET_KEY), secrets)


async def test_a_plain_monitor_stores_nothing_and_reads_the_defaults(
    api: ApiClient, db: asyncpg.Connection
) -> None:
    monitor = await api.create_monitor(url=URL)
    assert options_of(monitor) == DEFAULTS
    assert options_of(await api.monitor(monitor["id"])) == DEFAULTS
    assert await stored(db, monitor["id"]) == ("{}", None)
    # The defaults given explicitly are still nothing to store.
    explicit = await api.create_monitor(url=URL, **DEFAULTS)
    assert await stored(db, explicit["id"]) == ("{}", None)


async def test_every_option_round_trips_and_secrets_are_stored_apart(
    api: ApiClient, db: asyncpg.Connection
) -> None:
    response = await api.post("/api/v1/monitors", json={"name": "full", "url": URL, **FULL})
    assert response.status == 201, response
    assert_no_secret(response)
    monitor = response.json
    assert options_of(monitor) == masked(FULL)
    for read in (await api.get(f"/api/v1/monitors/{monitor['id']}"), await api.get("/api/v1/monitors")):
        assert_no_secret(read)
    assert options_of(await api.monitor(monitor["id"])) == masked(FULL)

    settings = await db.fetchval("SELECT settings FROM monitors WHERE id = $1", monitor["id"])
    assert settings == {
        "method": "POST",
        "headers": [["X-Env", "prod"], ["Accept", "application/json"]],
        "body": '{"probe": true}\n',
        "content_type": "application/json",
        "max_body_bytes": 65_536,
        "assertions": ASSERTIONS,
    }
    assert not any(secret in str(settings) for secret in SECRETS)
    _, secrets = await stored(db, monitor["id"])
    sealed = await db.fetchval(
        "SELECT secrets::text FROM monitor_secrets WHERE monitor_id = $1", monitor["id"]
    )
    assert not any(secret in sealed for secret in SECRETS)
    assert secrets == {
        "auth": {"type": "basic", "username": "robot", "password": PASSWORD},
        "headers": [["X-Api-Key", API_KEY], ["Cookie", COOKIE]],
    }


async def test_the_masks_sent_back_keep_the_secrets(api: ApiClient, db: asyncpg.Connection) -> None:
    monitor = await api.create_monitor(url=URL, **FULL)
    before = await stored(db, monitor["id"])
    # GET, change one field, PATCH the whole read back (masks and all).
    read = await api.monitor(monitor["id"])
    body = {k: v for k, v in read.items() if k in DEFAULTS or k in ("name", "url", "interval_seconds")}
    body["headers"] = {**read["headers"], "X-Env": "staging"}
    response = await api.patch(f"/api/v1/monitors/{monitor['id']}", json=body)
    assert response.status == 200, response
    assert_no_secret(response)
    assert response.json["headers"]["X-Env"] == "staging"
    settings, secrets = await stored(db, monitor["id"])
    assert secrets == before[1]
    assert '"staging"' in settings

    # A new username with the masked password keeps the password; a new token replaces it all.
    auth = {"type": "basic", "username": "robot2", "password": MASK}
    response = await api.patch(f"/api/v1/monitors/{monitor['id']}", json={"auth": auth})
    assert response.json["auth"] == {**auth, "password": MASK}, response
    assert (await stored(db, monitor["id"]))[1]["auth"] == {**auth, "password": PASSWORD}
    bearer = {"type": "bearer", "token": TOKEN}
    response = await api.patch(f"/api/v1/monitors/{monitor['id']}", json={"auth": bearer})
    assert response.json["auth"] == {"type": "bearer", "token": MASK}, response
    assert_no_secret(response)
    assert (await stored(db, monitor["id"]))[1]["auth"] == bearer


async def test_patch_replaces_headers_removes_auth_and_drops_the_secrets_row(
    api: ApiClient, db: asyncpg.Connection
) -> None:
    monitor = await api.create_monitor(url=URL, **FULL)
    path = f"/api/v1/monitors/{monitor['id']}"
    # headers is replaced whole: the secret headers not sent back are gone.
    response = await api.patch(path, json={"headers": {"X-Env": "prod", "Cookie": MASK}})
    assert response.json["headers"] == {"X-Env": "prod", "Cookie": MASK}, response
    assert (await stored(db, monitor["id"]))[1] == {
        "auth": {"type": "basic", "username": "robot", "password": PASSWORD},
        "headers": [["Cookie", COOKIE]],
    }
    response = await api.patch(path, json={"auth": None, "headers": {}})
    assert (response.json["auth"], response.json["headers"]) == (None, {}), response
    assert (await stored(db, monitor["id"]))[1] is None  # no secret left: no row
    # Back to a plain monitor: nothing stored at all.
    plain = {
        "method": "GET",
        "body": None,
        "content_type": None,
        "max_body_bytes": 1_048_576,
        "assertions": [],
    }
    response = await api.patch(path, json=plain)
    assert options_of(response.json) == DEFAULTS, response
    assert await stored(db, monitor["id"]) == ("{}", None)


@pytest.mark.parametrize(
    "change",
    [{"auth": {"type": "bearer", "token": "new-token"}}, {"headers": {"Authorization": "Token t"}},
     {"assertions": [{"type": "keyword", "keyword": "ok"}]}, {"method": "HEAD"}],
    ids=["auth", "secret header", "assertions", "method"],
)  # fmt: skip
async def test_a_patch_of_an_option_changes_updated_at(
    api: ApiClient, db: asyncpg.Connection, change: dict[str, Any]
) -> None:
    monitor = await api.create_monitor(url=URL)
    before = await db.fetchval("SELECT updated_at FROM monitors WHERE id = $1", monitor["id"])
    response = await api.patch(f"/api/v1/monitors/{monitor['id']}", json=change)
    assert response.status == 200, response
    assert await db.fetchval("SELECT updated_at FROM monitors WHERE id = $1", monitor["id"]) > before
    assert response.json["updated_at"] != monitor["updated_at"]


# (case, body of the create, field the 422 names)
BAD_CREATES = [
    ("unknown method", {"method": "TRACE"}, "method"),
    ("framing header", {"headers": {"Transfer-Encoding": "chunked"}}, "headers"),
    ("header value with CR LF", {"headers": {"X-A": "a\r\nX-Injected: 1"}}, "headers"),
    ("header name not a token", {"headers": {"X A": "1"}}, "headers"),
    ("body with GET", {"body": "x"}, "body"),
    ("content_type without body", {"content_type": "text/plain"}, "content_type"),
    ("auth of unknown type", {"auth": {"type": "digest", "username": "u"}}, "auth"),
    ("basic auth without password", {"auth": {"type": "basic", "username": "u"}}, "auth.password"),
    ("auth and Authorization header", {"auth": {"type": "bearer", "token": "t"},
                                       "headers": {"Authorization": "Bearer t"}}, "auth"),
    ("max_body_bytes over the setting", {"max_body_bytes": 10 * 1024 * 1024 + 1}, "max_body_bytes"),
    ("tls_verify false, not allowed", {"tls_verify": False}, "tls_verify"),
    ("too many assertions", {"assertions": [{"type": "keyword", "keyword": "a"}] * 21}, "assertions"),
    ("assertion of unknown type", {"assertions": [{"type": "css"}]}, "assertions.0"),
    ("JSONPath that does not compile", {"assertions": [{"type": "json", "path": "$[", "op": "exists"}]},
     "assertions.0.path"),
    ("json value missing",
     {"assertions": [{"type": "keyword", "keyword": "a"}, {"type": "json", "path": "$.a", "op": "<"}]},
     "assertions.1.value"),
    ("regex that does not compile", {"assertions": [{"type": "regex", "pattern": "(a"}]},
     "assertions.0.pattern"),
    ("header op unknown", {"assertions": [{"type": "header", "name": "A", "op": "startswith", "value": "x"}]},
     "assertions.0.op"),
    ("response time too long", {"assertions": [{"type": "response_time", "below_ms": 700_000}]},
     "assertions.0.below_ms"),
    ("a mask with nothing stored", {"auth": {"type": "bearer", "token": MASK}}, "auth.token"),
    ("a masked header with nothing stored", {"headers": {"X-Token": MASK}}, "headers"),
]  # fmt: skip


@pytest.mark.parametrize(("body", "field"), [c[1:] for c in BAD_CREATES], ids=[c[0] for c in BAD_CREATES])
async def test_bad_options_are_refused_naming_the_field(
    api: ApiClient, body: dict[str, Any], field: str
) -> None:
    response = await api.post("/api/v1/monitors", json={"name": "bad", "url": URL, **body})
    assert response.status == 422, response
    assert response.json["error"]["field"] == field, response
    assert response.json["error"]["message"].startswith(f"{field}: "), response
    assert (await api.get("/api/v1/monitors")).json["items"] == []


# (case, options stored, the PATCH, field the 422 names): rules between fields hold on the result.
BAD_PATCHES = [
    ("body on a GET monitor", {}, {"body": "x"}, "body"),
    ("GET on a monitor with a body", {"method": "POST", "body": "x"}, {"method": "GET"}, "body"),
    ("body removed, content_type kept", {"method": "POST", "body": "x", "content_type": "text/plain"},
     {"body": None}, "content_type"),
    ("Authorization header beside stored auth", {"auth": {"type": "bearer", "token": TOKEN}},
     {"headers": {"Authorization": "Bearer other"}}, "auth"),
    ("masked bearer token over stored basic auth",
     {"auth": {"type": "basic", "username": "u", "password": "p"}},
     {"auth": {"type": "bearer", "token": MASK}}, "auth.token"),
    ("masked header that was never stored", {"headers": {"X-Api-Key": API_KEY}},
     {"headers": {"X-Api-Key": MASK, "X-Auth": MASK}}, "headers"),
    ("null for a field that has a default", {}, {"max_body_bytes": None}, "max_body_bytes"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("options", "patch", "field"), [c[1:] for c in BAD_PATCHES], ids=[c[0] for c in BAD_PATCHES]
)
async def test_bad_patches_are_refused_and_change_nothing(
    api: ApiClient, db: asyncpg.Connection, options: dict[str, Any], patch: dict[str, Any], field: str
) -> None:
    monitor = await api.create_monitor(url=URL, **options)
    before = await stored(db, monitor["id"])
    response = await api.patch(f"/api/v1/monitors/{monitor['id']}", json=patch)
    assert response.status == 422, response
    assert response.json["error"]["field"] == field, response
    assert_no_secret(response)
    assert await stored(db, monitor["id"]) == before
    assert (await api.monitor(monitor["id"]))["updated_at"] == monitor["updated_at"]


@pytest.mark.parametrize(
    "body",
    [
        {"auth": {"type": "basic", "username": "u", "password": PASSWORD + "\r\n" + PASSWORD}},
        {"auth": {"type": "bearer", "token": TOKEN * 400}},
        {"auth": {"type": "bearer", "token": TOKEN, "extra": TOKEN}},
        {"headers": {"X-Api-Key": API_KEY + "\n" + API_KEY}},
        {"headers": {"Cookie": COOKIE * 1000}},
        {"headers": {"Authorization": TOKEN}, "auth": {"type": "bearer", "token": TOKEN}},
    ],
    ids=["password with CR LF", "token too long", "unknown auth field", "key with LF", "cookie too long",
         "header beside auth"],
)  # fmt: skip
async def test_an_error_never_quotes_a_secret(api: ApiClient, body: dict[str, Any]) -> None:
    response = await api.post("/api/v1/monitors", json={"name": "bad", "url": URL, **body})
    assert response.status == 422, response
    assert_no_secret(response)


async def test_the_operator_settings_bound_the_options(
    procs: ProcessFactory, api_client: Any, db: asyncpg.Connection
) -> None:
    server = await procs.start(
        "api", env={"MONITOR_ALLOW_INSECURE_TLS": "true", "MONITOR_HTTP_MAX_BODY_BYTES": "4096"}
    )
    client: ApiClient = api_client(server.base_url)
    monitor = await client.create_monitor(url=URL, tls_verify=False, max_body_bytes=4096)
    assert (monitor["tls_verify"], monitor["max_body_bytes"]) == (False, 4096)
    assert (await db.fetchval("SELECT settings FROM monitors WHERE id = $1", monitor["id"])) == {
        "tls_verify": False,
        "max_body_bytes": 4096,
    }
    response = await client.patch(f"/api/v1/monitors/{monitor['id']}", json={"max_body_bytes": 4097})
    assert (response.status, response.json["error"]["field"]) == (422, "max_body_bytes"), response
    document = (await client.get("/api/v1/openapi.json")).json
    fields = document["components"]["schemas"]["HttpMonitorCreate"]["properties"]
    assert fields["max_body_bytes"]["maximum"] == 4096 and "const" not in fields["tls_verify"]


# Raw JSON, so the escapes reach the server as written (PostgreSQL's jsonb takes neither).
UNSTORABLE = [
    ("NUL in the request body", '{"method": "POST", "body": "a\\u0000"}', "body"),
    ("unpaired surrogate in the request body", '{"method": "POST", "body": "a\\ud800"}', "body"),
    ("NUL in a header value", '{"headers": {"X-A": "\\u0000"}}', "headers"),
    ("unpaired surrogate in a header value", '{"headers": {"X-A": "\\udfff"}}', "headers.X-A"),
    ("unpaired surrogate in a password",
     '{"auth": {"type": "basic", "username": "u", "password": "\\ud800"}}', "auth.password"),
    ("NUL in a keyword", '{"assertions": [{"type": "keyword", "keyword": "\\u0000"}]}',
     "assertions.0.keyword"),
    ("unpaired surrogate in a JSON value's key",
     '{"assertions": [{"type": "json", "path": "$", "op": "==", "value": {"\\ud800": 1}}]}',
     "assertions.0.value"),
    ("a JSON value of 1e999", '{"assertions": [{"type": "json", "path": "$", "op": "==", "value": 1e999}]}',
     "assertions.0.value"),
]  # fmt: skip


@pytest.mark.parametrize(("fields", "field"), [c[1:] for c in UNSTORABLE], ids=[c[0] for c in UNSTORABLE])
async def test_what_the_database_cannot_store_is_a_422(api: ApiClient, fields: str, field: str) -> None:
    body = '{"name": "x", "url": "' + URL + '", ' + fields[1:]
    response = await api.post("/api/v1/monitors", data=body)
    assert (response.status, response.json["error"]["field"]) == (422, field), response
