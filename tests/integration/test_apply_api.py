"""``POST /api/v1/apply`` and ``GET /api/v1/config/schema`` on a live api: a dry run plans and
changes nothing, an apply makes the objects and a second is "no changes", prune, the problems of
files that cannot be applied (422, each at file:line:column, nothing applied), who may do what,
the body's limits, and no secret sent coming back in an answer or a log line.

What the plan says field by field and the apply's all-or-nothing are ``monitor apply``'s
(tests/integration/test_apply_cli.py); this is the same work behind the HTTP face.
"""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest
from support import ApiClient, MonitorProcess, ensure_account, leaks

from monitor.ascode.schema import document_schema
from monitor.domain import keys as api_keys
from monitor.domain.schemas.config import MAX_FILES
from monitor.secrets import MASK

pytestmark = pytest.mark.timeout(90)

SLACK_URL = "https://hooks.slack.com/services/T0/B0/apply-api-secret-4f1c"
TOKEN = "bearer-apply-api-secret-77d2"
DOC = """\
version: 1
channels:
  ops-slack:
    kind: slack
    name: Ops on Slack
    config:
      url: ${SLACK_URL}
monitors:
  homepage:
    name: Homepage
    url: http://127.0.0.1:9/
    interval_seconds: 60
    auth: {type: bearer, token: "${TOKEN}"}
    channels: [ops-slack]
    depends_on: [gateway]
    tags: [web]
  gateway:
    type: tcp
    host: 127.0.0.1
    port: 443
  backup:
    type: heartbeat
    cron: "0 3 * * *"
    timezone: Europe/Berlin
    grace_seconds: 1800
"""
PAGES = """\
maintenance:
  sunday:
    recurring: {rrule: "FREQ=WEEKLY;BYDAY=SU", starts_at: "2026-01-04T02:00", duration_minutes: 60,
                timezone: Europe/Berlin}
    monitors: [homepage]
status_pages:
  public:
    slug: acme-apply
    title: Acme status
    groups:
      - name: Website
        monitors: [homepage, gateway]
"""
SECRETS = {"SLACK_URL": SLACK_URL, "TOKEN": TOKEN}
FILES = {"monitors.yaml": DOC, "pages.yaml": PAGES}
leaks.secret("a channel's URL sent to apply", SLACK_URL)
leaks.secret("a token sent to apply", TOKEN)


def body(files: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
    return {"files": FILES if files is None else files, "secrets": SECRETS, **fields}


async def count(db: asyncpg.Connection, table: str) -> int:
    return int(await db.fetchval(f"SELECT count(*) FROM {table}"))


def no_secret_in(text: str) -> None:
    assert SLACK_URL not in text and TOKEN not in text, text


@pytest.fixture
async def as_role(api_server: MonitorProcess, db: asyncpg.Connection) -> AsyncIterator[Any]:
    """``as_role("viewer")``: a client with a key of that role in the test account."""
    clients: list[ApiClient] = []

    async def make(role: str) -> ApiClient:
        key = await api_keys.create_key(db, await ensure_account(db), role, role)  # type: ignore[arg-type]
        clients.append(ApiClient(api_server.base_url, key=key.key))
        return clients[-1]

    yield make
    for client in clients:
        await client.close()


async def test_a_dry_run_answers_the_plan_and_changes_nothing(api: ApiClient, db: asyncpg.Connection) -> None:
    planned = await api.post("/api/v1/apply", json=body(dry_run=True))
    assert planned.status == 200, planned.text
    plan = planned.json
    assert plan["applied"] is False
    assert plan["counts"] == {"create": 6, "update": 0, "replace": 0, "delete": 0, "unchanged": 0}
    assert {(c["action"], c["kind"], c["key"]) for c in plan["changes"]} >= {
        ("create", "channels", "ops-slack"),
        ("create", "monitors", "homepage"),
        ("create", "status_pages", "public"),
    }
    no_secret_in(planned.text)
    for table in ("monitors", "channels", "maintenance_windows", "status_pages", "config_objects"):
        assert await count(db, table) == 0, table


async def test_an_apply_makes_the_objects_and_a_second_is_no_changes(
    api: ApiClient, db: asyncpg.Connection, api_server: MonitorProcess
) -> None:
    done = await api.post("/api/v1/apply", json=body())
    assert done.status == 200, done
    assert done.json["applied"] is True and done.json["counts"]["create"] == 6
    assert await count(db, "config_objects") == 6
    attached = await db.fetchval(
        "SELECT count(*) FROM monitor_channels JOIN monitors m ON m.id = monitor_id WHERE m.name = 'Homepage'"
    )
    assert attached == 1
    # The caller made them: the audit log names its key, not the account's owner.
    key_ids = await db.fetch("SELECT DISTINCT key_id FROM audit_log")
    assert [r["key_id"] for r in key_ids] == [await db.fetchval("SELECT max(id) FROM api_keys")]

    again = await api.post("/api/v1/apply", json=body())
    assert again.status == 200, again
    assert again.json["changes"] == [] and again.json["counts"]["unchanged"] == 6
    assert again.json["applied"] is False  # nothing to apply

    # A changed secret is a change whose values the plan never shows.
    changed = await api.post(
        "/api/v1/apply", json=body(secrets={**SECRETS, "TOKEN": TOKEN + "-2"}, dry_run=True)
    )
    assert changed.status == 200, changed
    [change] = changed.json["changes"]
    assert (change["key"], change["fields"]) == (
        "homepage",
        [{"field": "auth.token", "old": MASK, "new": MASK, "drift": False}],
    )
    no_secret_in(done.text + again.text + changed.text)
    no_secret_in(api_server.log_text())


async def test_a_value_sent_as_a_secret_is_masked_wherever_it_shows(api: ApiClient) -> None:
    files = {"m.yaml": "monitors:\n  web:\n    name: ${NAME}\n    url: http://127.0.0.1:9/\n"}
    made = await api.post("/api/v1/apply", json={"files": files, "secrets": {"NAME": "Old name"}})
    assert made.status == 200, made
    renamed = await api.post("/api/v1/apply", json={"files": files, "secrets": {"NAME": "New name"},
                                                    "dry_run": True})  # fmt: skip
    assert renamed.status == 200, renamed
    assert renamed.json["changes"][0]["fields"] == [{"field": "name", "old": "Old name", "new": MASK,
                                                     "drift": False}]  # fmt: skip


async def test_prune_deletes_what_the_files_no_longer_name(api: ApiClient, db: asyncpg.Connection) -> None:
    assert (await api.post("/api/v1/apply", json=body())).status == 200
    renamed = {**FILES, "monitors.yaml": DOC.replace("  backup:\n", "  backup2:\n")}
    kept = await api.post("/api/v1/apply", json=body(renamed, dry_run=True))
    assert kept.status == 200, kept
    assert {"kind": "monitors", "key": "backup"} in kept.json["kept"]
    pruned = await api.post("/api/v1/apply", json=body(renamed, prune=True))
    assert pruned.status == 200, pruned
    actions = {(c["action"], c["key"]) for c in pruned.json["changes"]}
    assert actions == {("delete", "backup"), ("create", "backup2")}
    assert await db.fetchval("SELECT count(*) FROM monitors WHERE name = 'backup'") == 0
    assert await db.fetchval("SELECT count(*) FROM monitors WHERE name = 'backup2'") == 1


# -- files that cannot be applied ------------------------------------------------------------------

M = "m.yaml"
WEB = "monitors:\n  web:\n    url: http://127.0.0.1:9/\n"
# A "billion laughs": each line nine of the one before, 9**7 values from a few hundred bytes.
LAUGHS = (
    WEB
    + "    junk:\n      a0: &a0 [x, x, x, x, x, x, x, x, x]\n"
    + "".join(f"      a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 7))
)
INVALID = [
    # (scenario, files, secrets, (file, line, column, field), what the message says)
    ("not valid YAML", {M: "monitors:\n  web: [\n"}, {}, (M, 3, 1, None), "not valid YAML"),
    ("an unknown field", {M: WEB + "    colour: red\n"}, {}, (M, 4, 13, "monitors.web.colour"),
     "unknown field"),
    ("a wrong type", {M: WEB + "    interval_seconds: often\n"}, {},
     (M, 4, 23, "monitors.web.interval_seconds"), "number"),
    ("a key that does not exist", {M: WEB + "    depends_on: [nowhere]\n"}, {},
     (M, 4, 18, "monitors.web.depends_on.0"), "no monitors key 'nowhere'"),
    ("an unset variable", {M: WEB + "    auth: {type: bearer, token: '${UNSET_TOKEN}'}\n"}, {},
     (M, 4, 33, "monitors.web.auth.token"), "${UNSET_TOKEN} is not set"),
    ("a file: reference", {M: WEB + "    auth: {type: bearer, token: 'file:/etc/hostname'}\n"}, {},
     (M, 4, 33, "monitors.web.auth.token"), "file: references are not read through the API"),
    ("a secret written inline", {M: WEB + "    auth: {type: bearer, token: inline-token}\n"}, {},
     (M, 4, 33, "monitors.web.auth.token"), "a secret: write it as ${VARIABLE}"),
    ("a tag of an application", {M: WEB + "    port: !!python/name:os.system x\n"}, {}, (M, 4, 11, None),
     "is not read"),
    ("a value its tag cannot read", {M: WEB + "    port: !!int x\n"}, {}, (M, 4, 11, None),
     "cannot be read as !!int"),
    ("aliases that expand too far", {M: LAUGHS}, {}, (M, 1, 1, None), "aliases (*name) that expand too far"),
    ("a key defined in two files", {"a.yaml": WEB, "b.yaml": WEB}, {},
     ("b.yaml", 2, 3, "monitors.web"), "defined twice (first at a.yaml:2:3)"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("files", "secrets", "where", "says"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID]
)
async def test_files_that_cannot_be_applied_are_each_problem_at_its_place(
    api: ApiClient,
    db: asyncpg.Connection,
    files: dict[str, str],
    secrets: dict[str, str],
    where: tuple[str, int, int, str | None],
    says: str,
) -> None:
    refused = await api.post("/api/v1/apply", json={"files": files, "secrets": secrets})
    assert refused.status == 422, refused
    error = refused.json["error"]
    assert error["code"] == "invalid" and "nothing applied" in error["message"]
    found = [(p["file"], p["line"], p["column"], p["field"]) for p in error["problems"]]
    assert where in found, error
    assert any(says in p["message"] for p in error["problems"]), error
    assert await count(db, "monitors") == 0


async def test_every_problem_is_told_at_once_and_nothing_is_applied(
    api: ApiClient, db: asyncpg.Connection
) -> None:
    bad = DOC.replace("depends_on: [gateway]", "depends_on: [nowhere]").replace(
        "    port: 443\n", "    port: 443\n    interval_seconds: 5000000\n"
    )
    refused = await api.post("/api/v1/apply", json={"files": {"monitors.yaml": bad}, "secrets": {}})
    assert refused.status == 422, refused
    messages = [f"{p['file']}:{p['line']}:{p['column']}: {p['field']}: {p['message']}"
                for p in refused.json["error"]["problems"]]  # fmt: skip
    assert any(m.startswith("monitors.yaml:7:12: channels.ops-slack.config.url:") for m in messages), messages
    assert any("${SLACK_URL} is not set" in m for m in messages), messages
    assert any("monitors.homepage.depends_on.0: no monitors key 'nowhere'" in m for m in messages), messages
    interval = "monitors.yaml:21:23: monitors.gateway.interval_seconds"
    assert any(m.startswith(interval) for m in messages), messages
    assert await count(db, "monitors") == 0 and await count(db, "channels") == 0


# -- who may, and the body -------------------------------------------------------------------------


async def test_who_may_apply_plan_and_read_the_schema(
    api: ApiClient, as_role: Any, api_server: MonitorProcess, db: asyncpg.Connection
) -> None:
    viewer, notify, editor = await as_role("viewer"), await as_role("notify"), await as_role("editor")
    refused = await viewer.post("/api/v1/apply", json=body())
    assert refused.status == 403 and "editor" in refused.json["error"]["message"], refused
    # A dry run only reads: a viewer may see what the files would change.
    planned = await viewer.post("/api/v1/apply", json=body(dry_run=True))
    assert planned.status == 200 and planned.json["counts"]["create"] == 6, planned
    assert (await notify.post("/api/v1/apply", json=body(dry_run=True))).status == 403
    # An editor may apply, but not a channel (admin and up): refused at the channel's place.
    by_editor = await editor.post("/api/v1/apply", json=body())
    assert by_editor.status == 422, by_editor
    [problem] = by_editor.json["error"]["problems"]
    assert (problem["file"], problem["field"]) == ("monitors.yaml", "channels.ops-slack")
    assert "admin" in problem["message"]
    assert await count(db, "monitors") == 0

    schema = await viewer.get("/api/v1/config/schema")
    assert schema.status == 200 and schema.json == document_schema()
    assert (await notify.get("/api/v1/config/schema")).status == 403
    async with ApiClient(api_server.base_url) as anonymous:
        for method, path in (("POST", "/api/v1/apply"), ("GET", "/api/v1/config/schema")):
            answer = await anonymous.request(method, path, **({"json": body()} if method == "POST" else {}))
            assert answer.status == 401, answer


@pytest.mark.parametrize(
    ("sent", "field"),
    [
        ({"files": {}}, "files"),
        ({"files": {f"{i}.yaml": "" for i in range(MAX_FILES + 1)}}, "files"),
        ({"files": {"a/b.yaml": WEB}}, "files.a/b.yaml.[key]"),
        ({"files": {M: WEB}, "secrets": {"not a name": "x"}}, "secrets.not a name.[key]"),
        ({"files": {M: WEB}, "colour": "red"}, "colour"),
        ({"files": {M: WEB}, "dry_run": "maybe"}, "dry_run"),
    ],
    ids=["no file", "too many files", "a path as a name", "a bad variable name", "an unknown field",
         "dry_run not a boolean"],
)  # fmt: skip
async def test_a_body_the_schema_refuses_is_422_naming_the_field(
    api: ApiClient, sent: dict[str, Any], field: str
) -> None:
    refused = await api.post("/api/v1/apply", json=sent)
    assert refused.status == 422, refused
    assert refused.json["error"]["field"] == field, refused


async def big_post(api: ApiClient, sent: dict[str, Any], *, chunked: bool = False) -> tuple[int, Any]:
    """A large body, streamed (aiohttp warns of one given as bytes); ``chunked``: without a
    Content-Length, so only reading it finds it too large."""
    raw = json.dumps(sent).encode()

    async def chunks() -> AsyncIterator[bytes]:
        for i in range(0, len(raw), 256 * 1024):
            yield raw[i : i + 256 * 1024]

    data: Any = chunks() if chunked else io.BytesIO(raw)
    headers = {"Authorization": f"Bearer {api.key}", "Content-Type": "application/json"}
    async with api.session.post(api.base_url + "/api/v1/apply", data=data, headers=headers) as answer:
        return answer.status, await answer.json()


async def test_files_up_to_5_mib_are_taken_and_more_is_413(api: ApiClient) -> None:
    # Comments: a big file that still plans quickly.
    padding = "# " + "x" * 1022 + "\n"
    big = WEB + padding * 4000  # about 4 MiB
    status, planned = await big_post(api, {"files": {M: big}, "dry_run": True})
    assert status == 200 and planned["counts"]["create"] == 1, planned
    status, huge = await big_post(api, {"files": {M: WEB + padding * 5200}})
    assert status == 413 and huge["error"]["code"] == "too_large", huge
    assert "5242880" in huge["error"]["message"]
    status, huge = await big_post(api, {"files": {M: WEB + padding * 5200}}, chunked=True)
    assert status == 413 and "5242880" in huge["error"]["message"], huge
    status, planned = await big_post(api, {"files": {M: WEB}, "dry_run": True}, chunked=True)
    assert status == 200, planned
    # Other routes keep their own cap.
    other = await api.post("/api/v1/keys", json={"name": "x" * 70_000})
    assert other.status == 413, other
