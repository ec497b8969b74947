"""The monitor forms through an in-process api, posted as a browser posts them: the fields are
read from the GET page (so the names the template renders are the ones posted), changed, and
sent back. Creating an http monitor with a keyword assertion and a tcp monitor; a 422 next to
its field with what was typed kept; "Add a row"; editing; pause and resume; deleting after the
confirmation page; a viewer refused (403) on the form and on a forged post; another account's
monitor a 404; a database away after the form was read: the form again, values kept; "test
now" showing a trial's result above the form kept.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import asyncpg
import pytest
from support import ProcessFactory, TargetServer, ensure_account
from support.dashboard import Page, Person, base_url_fixture, http_fixture  # noqa: F401
from support.db import insert_monitor
from support.inprocess import InProcessFactory, inprocess_api_fixture  # noqa: F401
from support.markup import Element
from support.people import make_user

from monitor.domain import trials

PASSWORD = "Forms-Pass-7c2d9e"


def the_form(page: Page, action: str) -> Element:
    forms = [f for f in page.tree.find_all("form") if f.attrs.get("action") == action]
    assert len(forms) == 1, f"{len(forms)} forms to {action}"
    return forms[0]


def fields_of(form: Element) -> list[tuple[str, str | None]]:
    """What a browser sends for ``form`` as it is: text inputs, checked boxes, selected options,
    text areas (no buttons); an unticked box as None (``filled`` leaves it out)."""
    out: list[tuple[str, str | None]] = []
    for e in form.iter():
        name = e.attrs.get("name")
        if not name:
            continue
        if e.tag == "input":
            kind = e.attrs.get("type", "text")
            if kind in ("checkbox", "radio"):
                out.append((name, e.attrs.get("value", "on") if "checked" in e.attrs else None))
            elif kind not in ("submit", "button"):
                out.append((name, e.attrs.get("value", "")))
        elif e.tag == "textarea":
            out.append((name, e.text()))
        elif e.tag == "select":
            options = e.find_all("option")
            chosen = next((o for o in options if "selected" in o.attrs), options[0] if options else None)
            out.append((name, chosen.attrs.get("value", "") if chosen else ""))
    return out


def filled(
    fields: list[tuple[str, str | None]], changes: dict[str, Any] | None = None
) -> list[tuple[str, str]]:
    """``fields`` with ``changes`` (a name: a value, a list for checkboxes, None to untick)."""
    changes = changes or {}
    names = {n for n, _ in fields}
    unknown = set(changes) - names - {"more"}
    assert not unknown, f"not on the form: {unknown}"
    out = [(n, v) for n, v in fields if n not in changes and v is not None]
    for name, value in changes.items():
        for one in value if isinstance(value, list) else [value]:
            if one is not None:
                out.append((name, one))
    return out


def field_error(page: Page, name: str) -> str:
    found = [
        e.text() for e in page.tree.find_all("p", "error-text") if e.attrs.get("id") == f"f-{name}-error"
    ]
    assert found, (
        f"no error shown next to {name}: {[e.text() for e in page.tree.find_all('p', 'error-text')]}"
    )
    return found[0]


async def owner(db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession) -> Person:
    account = await ensure_account(db)
    await make_user(db, "owner@example.com", PASSWORD, account, "owner")
    return await Person.sign_in(base_url, http, "owner@example.com", PASSWORD)


async def test_create_http_with_a_keyword_and_a_tcp_monitor(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
):
    person = await owner(db, base_url, http)
    account = await ensure_account(db)
    channel = await db.fetchval(
        """INSERT INTO channels (account_id, kind, name, config)
           VALUES ($1, 'telegram', 'Ops chat', $2) RETURNING id""",
        account,
        {"chat_id": "12345"},
    )
    chooser = await person.get("/monitors/new")
    assert chooser.status == 200
    links = {a.attrs["href"] for a in chooser.tree.find_all("a") if "?type=" in a.attrs.get("href", "")}
    assert {"/monitors/new?type=http", "/monitors/new?type=tcp", "/monitors/new?type=dns"} <= links

    page = await person.get("/monitors/new?type=http")
    assert page.status == 200
    form = the_form(page, "/monitors/new")
    fields = fields_of(form)
    names = {n for n, _ in fields}
    assert {
        "name",
        "url",
        "assertions.0.type",
        "assertions.0.keyword",
        "assertions.1.type",
        "headers",
    } <= names
    assert "Ops chat" in form.text()
    made = await person.post(
        "/monitors/new",
        filled(fields, {"name": "Shop", "url": "http://127.0.0.1:9/", "assertions.1.type": "keyword",
                        "assertions.1.keyword": "Welcome", "tags": "shop, web",
                        "channel_ids": [str(channel)]}),
    )  # fmt: skip
    assert made.status == 303, made.text[:2000]
    monitor_id = int(made.location.rsplit("/", 1)[1])
    row = await db.fetchrow(
        "SELECT name, type, url, settings, tags, interval_seconds FROM monitors WHERE id = $1", monitor_id
    )
    settings = json.loads(row["settings"]) if isinstance(row["settings"], str) else row["settings"]
    assert (row["name"], row["type"], row["url"], list(row["tags"])) == (
        "Shop",
        "http",
        "http://127.0.0.1:9/",
        ["shop", "web"],
    )
    assert settings["assertions"] == [
        {"type": "keyword", "keyword": "Welcome", "absent": False, "case_sensitive": True}
    ]
    assert row["interval_seconds"] == 60
    assert (
        await db.fetchval("SELECT channel_id FROM monitor_channels WHERE monitor_id = $1", monitor_id)
        == channel
    )

    tcp = the_form(await person.get("/monitors/new?type=tcp"), "/monitors/new")
    made = await person.post(
        "/monitors/new", filled(fields_of(tcp), {"name": "Mail", "host": "127.0.0.1", "port": "25"})
    )
    assert made.status == 303, made.text[:2000]
    tcp_id = int(made.location.rsplit("/", 1)[1])
    assert await db.fetchval("SELECT url FROM monitors WHERE id = $1", tcp_id) == "tcp://127.0.0.1:25"


async def test_an_error_is_next_to_its_field_and_the_values_are_kept(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
):
    person = await owner(db, base_url, http)
    fields = fields_of(the_form(await person.get("/monitors/new?type=http"), "/monitors/new"))
    # The second row has a JSON path without one: the error names assertions.1.path
    wrong = await person.post(
        "/monitors/new",
        filled(fields, {"name": "Kept name", "url": "http://127.0.0.1:9/", "assertions.0.type": "keyword",
                        "assertions.0.keyword": "ok", "assertions.1.type": "json", "assertions.1.op": "=="}),
    )  # fmt: skip
    assert wrong.status == 422
    assert "assertions.1.path" in field_error(wrong, "assertions.1.path")
    again = the_form(wrong, "/monitors/new")
    kept = dict(fields_of(again))
    assert (
        kept["name"] == "Kept name"
        and kept["assertions.0.keyword"] == "ok"
        and kept["assertions.1.type"] == "json"
    )
    assert 'aria-invalid="true"' in wrong.text
    assert await db.fetchval("SELECT count(*) FROM monitors") == 0

    wrong = await person.post(
        "/monitors/new",
        filled(fields, {"name": "Kept", "url": "http://127.0.0.1:9/", "interval_seconds": "100000"}),
    )
    assert wrong.status == 422 and "interval_seconds" in field_error(wrong, "interval_seconds")
    assert dict(fields_of(the_form(wrong, "/monitors/new")))["interval_seconds"] == "100000"

    bad_number = await person.post(
        "/monitors/new", filled(fields, {"name": "N", "url": "http://127.0.0.1:9/", "confirm_after": "two"})
    )
    assert bad_number.status == 422 and "confirm_after" in field_error(bad_number, "confirm_after")

    # "Add a row": one more empty row, nothing saved.
    more = await person.post("/monitors/new", filled(fields, {"name": "Rows", "more": "assertions"}))
    assert more.status == 200
    grown = {n for n, _ in fields_of(the_form(more, "/monitors/new"))}
    assert "assertions.2.type" in grown and "assertions.3.type" not in grown
    assert await db.fetchval("SELECT count(*) FROM monitors") == 0


async def test_edit_pause_resume_and_delete(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
):
    person = await owner(db, base_url, http)
    fields = fields_of(the_form(await person.get("/monitors/new?type=http"), "/monitors/new"))
    given = {"name": "Before", "url": "http://127.0.0.1:9/", "auth.type": "basic", "auth.username": "u",
             "auth.password": "s3cret-pass"}  # fmt: skip
    made = await person.post("/monitors/new", filled(fields, given))
    assert made.status == 303, made.text[:2000]
    monitor_id = int(made.location.rsplit("/", 1)[1])
    action = f"/monitors/{monitor_id}/edit"
    page = await person.get(action)
    assert page.status == 200 and "s3cret-pass" not in page.text
    fields = fields_of(the_form(page, action))
    assert dict(fields)["name"] == "Before" and dict(fields)["auth.username"] == "u"
    before = await db.fetchval("SELECT updated_at FROM monitors WHERE id = $1", monitor_id)
    untouched = await person.post(action, filled(fields))
    assert untouched.status == 303, untouched.text[:2000]
    assert (
        await db.fetchval("SELECT updated_at FROM monitors WHERE id = $1", monitor_id) == before
    )  # no change sent
    changed = await person.post(action, filled(fields, {"name": "After", "interval_seconds": "120"}))
    assert changed.status == 303 and changed.location == f"/monitors/{monitor_id}"
    row = await db.fetchrow("SELECT name, interval_seconds FROM monitors WHERE id = $1", monitor_id)
    assert (row["name"], row["interval_seconds"]) == ("After", 120)
    # The password left empty is kept (the domain layer keeps the stored one).
    sealed = await db.fetchval("SELECT count(*) FROM monitor_secrets WHERE monitor_id = $1", monitor_id)
    assert sealed == 1
    stale = await person.post(action, filled(fields, {"name": "Stale"}))  # read before the change
    assert stale.status == 412 and "changed since you read it" in stale.text
    assert dict(fields_of(the_form(stale, action)))["name"] == "Stale"

    page = await person.get(action)
    buttons = [b.text() for b in page.tree.find_all("button")]
    assert "Pause" in buttons and "Resume" not in buttons
    paused = await person.post(
        f"/monitors/{monitor_id}/pause", filled(fields_of(the_form(page, f"/monitors/{monitor_id}/pause")))
    )
    assert paused.status == 303 and await db.fetchval("SELECT paused FROM monitors WHERE id = $1", monitor_id)
    page = await person.get(action)
    resumed = await person.post(
        f"/monitors/{monitor_id}/resume", filled(fields_of(the_form(page, f"/monitors/{monitor_id}/resume")))
    )
    assert resumed.status == 303 and not await db.fetchval(
        "SELECT paused FROM monitors WHERE id = $1", monitor_id
    )

    confirm = await person.get(f"/monitors/{monitor_id}/delete")
    assert confirm.status == 200 and "After" in confirm.text
    gone = await person.post(
        f"/monitors/{monitor_id}/delete",
        filled(fields_of(the_form(confirm, f"/monitors/{monitor_id}/delete"))),
    )
    assert gone.status == 303 and gone.location == "/"
    assert await db.fetchval("SELECT count(*) FROM monitors WHERE id = $1", monitor_id) == 0


async def test_viewer_gets_no_forms_and_other_accounts_monitors_are_not_found(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
):
    account = await ensure_account(db)
    other = await ensure_account(db, "other")
    await make_user(db, "viewer@example.com", PASSWORD, account, "viewer")
    await make_user(db, "editor@example.com", PASSWORD, account, "editor")
    mine = await insert_monitor(db, url="http://127.0.0.1:9/", name="Mine")
    theirs = await insert_monitor(db, url="http://127.0.0.1:9/", name="Theirs", account_id=other)
    viewer = await Person.sign_in(base_url, http, "viewer@example.com", PASSWORD)
    assert (await viewer.get("/monitors/new")).status == 403
    assert (await viewer.get("/monitors/new?type=http")).status == 403
    assert (await viewer.get(f"/monitors/{mine['id']}/edit")).status == 403
    forged = await viewer.post(
        "/monitors/new", {"type": "http", "name": "Forged", "url": "http://127.0.0.1:9/"}
    )
    assert forged.status == 403
    for path in (
        f"/monitors/{mine['id']}/pause",
        f"/monitors/{mine['id']}/delete",
        f"/monitors/{mine['id']}/edit",
    ):
        assert (await viewer.post(path, {"name": "x"})).status == 403, path
    assert await db.fetchval("SELECT count(*) FROM monitors WHERE name = 'Forged'") == 0
    assert await db.fetchval("SELECT paused FROM monitors WHERE id = $1", mine["id"]) is False

    editor = await Person.sign_in(base_url, http, "editor@example.com", PASSWORD)
    assert (await editor.get(f"/monitors/{mine['id']}/edit")).status == 200
    for path in (f"/monitors/{theirs['id']}/edit", f"/monitors/{theirs['id']}/delete"):
        assert (await editor.get(path)).status == 404, path
    assert (await editor.post(f"/monitors/{theirs['id']}/pause", {})).status == 404
    assert (await editor.post(f"/monitors/{theirs['id']}/delete", {})).status == 404
    assert await db.fetchval("SELECT count(*) FROM monitors WHERE id = $1", theirs["id"]) == 1


async def test_test_now_shows_the_result_above_the_form_kept(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession, monkeypatch: pytest.MonkeyPatch
):
    """``trials.trial`` stood in for: what the page makes of its answer (a real scheduler's is
    the next test's)."""
    seen: list[dict[str, Any]] = []

    async def trial(deps: Any, actor: Any, body: dict[str, Any], redis: Any) -> dict[str, Any]:
        seen.append(body)
        return {"status": "down", "degraded": None, "failure": "assertion", "duration_ms": 12.5,
                "check": {"ok": False, "status_code": 200, "error": "keyword 'Welcome' not found",
                          "timings": {"dns_ms": 1.0, "connect_ms": 2.0, "tls_ms": None, "ttfb_ms": 5.0},
                          "details": {"assertions": [{"assertion": "body contains 'Welcome'", "ok": False,
                                                       "message": "not found"}]}}}  # fmt: skip

    monkeypatch.setattr(trials, "trial", trial)
    person = await owner(db, base_url, http)
    fields = fields_of(the_form(await person.get("/monitors/new?type=http"), "/monitors/new"))
    page = await person.post("/monitors/test-now", filled(fields, {"name": "Try", "url": "http://127.0.0.1:9/",
                             "assertions.0.type": "keyword", "assertions.0.keyword": "Welcome"}))  # fmt: skip
    assert page.status == 200, page.text[:2000]
    result = page.tree.one("section", "trial")
    assert "Down" in result.text() and "not found" in result.text() and "First byte" in result.text()
    assert seen == [{"type": "http", "name": "Try", "url": "http://127.0.0.1:9/",
                     "assertions": [{"type": "keyword", "keyword": "Welcome"}]}]  # fmt: skip
    assert dict(fields_of(the_form(page, "/monitors/new")))["assertions.0.keyword"] == "Welcome"
    assert await db.fetchval("SELECT count(*) FROM monitors") == 0


@pytest.mark.parametrize("where", ["session", "create"])
async def test_a_database_away_gives_the_form_back_with_what_was_typed(
    db: asyncpg.Connection,
    base_url: str,
    http: aiohttp.ClientSession,
    monkeypatch: pytest.MonkeyPatch,
    where: str,
):
    """The database goes away after the form was read: whether the session's look-up or the
    create meets it, the answer is the form again (503) with the values and a general message."""
    from monitor.domain import monitors, signin

    person = await owner(db, base_url, http)
    fields = fields_of(the_form(await person.get("/monitors/new?type=http"), "/monitors/new"))

    async def away(*args: Any, **kwargs: Any) -> Any:
        raise ConnectionRefusedError("database away")

    monkeypatch.setattr(
        signin if where == "session" else monitors, "session_for" if where == "session" else "create", away
    )
    page = await person.post("/monitors/new", filled(fields, {"name": "Typed", "url": "http://127.0.0.1:9/",
                             "assertions.0.type": "keyword", "assertions.0.keyword": "kept"}))  # fmt: skip
    assert page.status == 503
    shown = [p.text() for p in page.tree.find_all("p", "error-text") if "hidden" not in p.attrs]
    assert len(shown) == 1 and "database cannot be reached" in shown[0]
    kept = dict(fields_of(the_form(page, "/monitors/new")))
    assert kept["name"] == "Typed" and kept["assertions.0.keyword"] == "kept" and kept["csrf"]
    monkeypatch.undo()
    assert await db.fetchval("SELECT count(*) FROM monitors") == 0


@pytest.mark.timeout(90)
async def test_test_now_through_a_live_scheduler(
    db: asyncpg.Connection,
    base_url: str,
    http: aiohttp.ClientSession,
    procs: ProcessFactory,
    target: TargetServer,
):
    """The form's body checked by a live scheduler, its keyword assertion's outcome on the page,
    nothing saved."""
    await procs.start("scheduler")
    target.set(200, body="<h1>Welcome home</h1>", content_type="text/html")
    person = await owner(db, base_url, http)
    fields = fields_of(the_form(await person.get("/monitors/new?type=http"), "/monitors/new"))
    given = {"name": "Try", "url": target.url("/home"), "timeout_seconds": "2",
             "assertions.0.type": "keyword", "assertions.0.keyword": "Welcome"}  # fmt: skip
    page = await person.post("/monitors/test-now", filled(fields, given))
    assert page.status == 200, page.text[:3000]
    result = page.tree.one("section", "trial")
    assert "Test result: Up" in result.text() and "Holds" in result.text(), result.text()
    assert dict(fields_of(the_form(page, "/monitors/new")))["assertions.0.keyword"] == "Welcome"
    assert await db.fetchval("SELECT count(*) FROM monitors") == 0


SAMPLES = {
    "http": {"url": "http://127.0.0.1:9/"},
    "dns": {"domain": "example.com"},
    "heartbeat": {},
    "ping": {"host": "127.0.0.1"},
    "tcp": {"host": "127.0.0.1", "port": "25"},
    "tls": {"host": "127.0.0.1"},
    "browser": {"url": "http://127.0.0.1:9/", "steps.0.action": "click", "steps.0.selector": "#buy"},
    "pagespeed": {
        "url": "http://127.0.0.1:9/",
        "assertions.0.metric": "lcp_ms",
        "assertions.0.op": "<=",
        "assertions.0.value": "2500",
        "assertions.0.severity": "degraded",
    },
}


@pytest.mark.parametrize("kind", sorted(SAMPLES))
async def test_every_type_is_created_by_its_form_and_its_edit_form_changes_nothing_untouched(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession, kind: str
):
    person = await owner(db, base_url, http)
    fields = fields_of(the_form(await person.get(f"/monitors/new?type={kind}"), "/monitors/new"))
    made = await person.post("/monitors/new", filled(fields, {"name": f"A {kind}", **SAMPLES[kind]}))
    assert made.status == 303, made.text[:2000]
    monitor_id = int(made.location.rsplit("/", 1)[1])
    assert await db.fetchval("SELECT type FROM monitors WHERE id = $1", monitor_id) == kind
    before = await db.fetchval("SELECT updated_at FROM monitors WHERE id = $1", monitor_id)
    action = f"/monitors/{monitor_id}/edit"
    untouched = await person.post(action, filled(fields_of(the_form(await person.get(action), action))))
    assert untouched.status == 303, untouched.text[:2000]
    assert await db.fetchval("SELECT updated_at FROM monitors WHERE id = $1", monitor_id) == before


SECRET_PASSWORD = "Basic-Secret-3f9a1c"
SECRET_HEADER = "Bearer Header-Secret-8d2e4b"


def typed(**more: str) -> dict[str, str]:
    return {"name": "Guarded", "url": "http://127.0.0.1:9/", "auth.type": "basic", "auth.username": "robot",
            "auth.password": SECRET_PASSWORD, "headers": f"X-Env: prod\nX-Api-Token: {SECRET_HEADER}",
            **more}  # fmt: skip


def no_secret(text: str) -> None:
    assert SECRET_PASSWORD not in text and "Header-Secret-8d2e4b" not in text


async def test_secrets_are_never_shown_again(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession, monkeypatch: pytest.MonkeyPatch
):
    """A monitor's secrets (its basic-auth password, a secret header's value) are never put
    back into a page: not on a form that comes back with an error, nor on the one a database
    away gives back, nor on the edit form or the monitor's page once stored."""
    from monitor.domain import signin

    person = await owner(db, base_url, http)
    fields = fields_of(the_form(await person.get("/monitors/new?type=http"), "/monitors/new"))

    wrong = await person.post("/monitors/new", filled(fields, typed(interval_seconds="100000")))
    assert wrong.status == 422
    no_secret(wrong.text)
    shown = dict(fields_of(the_form(wrong, "/monitors/new")))
    assert shown["headers"] == "X-Env: prod\nX-Api-Token: ********"
    more = await person.post("/monitors/new", filled(fields, {**typed(), "more": "assertions"}))
    assert more.status == 200
    no_secret(more.text)

    async def away(*args: Any, **kwargs: Any) -> Any:
        raise ConnectionRefusedError("database away")

    monkeypatch.setattr(signin, "session_for", away)
    lost = await person.post("/monitors/new", filled(fields, typed()))
    assert lost.status == 503
    no_secret(lost.text)
    monkeypatch.undo()

    made = await person.post("/monitors/new", filled(fields, typed()))
    assert made.status == 303, made.status
    where = made.location or ""
    no_secret((await person.get(where)).text)
    edit = await person.get(where + "/edit")
    assert edit.status == 200
    no_secret(edit.text)
