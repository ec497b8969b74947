"""The form made from a JSON schema and read back (``dashboard/schema_form.py``,
``schema_body.py``), as tables: every registered check type gets a form from its create body,
and that form's defaults, posted with the type's required fields, make a body the domain layer
validates; each widget coerces what is typed per its schema; an edit sends what changed only.
"""

from __future__ import annotations

from typing import Any

import pytest

from monitor.checks import REGISTRY as CHECKS
from monitor.dashboard import monitor_form, schema_body, schema_form
from monitor.domain.errors import DomainError
from monitor.domain.schemas.monitors import CREATE_BODIES, validate_create
from monitor.secrets import MASK

CONTEXT = {"min_interval_seconds": 30, "http_max_body_bytes": 10 << 20, "allow_insecure_tls": False}
# What a person types in each type's required fields (a type added later needs its line here).
REQUIRED = {
    "http": {"url": "https://example.com/"},
    "dns": {"domain": "example.com"},
    "heartbeat": {},
    "ping": {"host": "example.com"},
    "tcp": {"host": "example.com", "port": "25"},
    "tls": {"host": "example.com"},
    "browser": {"url": "https://example.com/"},
    "pagespeed": {"url": "https://example.com/"},
}


def test_every_type_has_a_sample():
    assert set(REQUIRED) == set(CHECKS.kinds)


def posted_defaults(kind: str) -> tuple[list[schema_form.Field], dict[str, Any]]:
    """The form of ``kind`` as a browser posts it untouched but for the required fields."""
    fields = monitor_form.fields(kind, [("7", "Ops")], editing=False)
    rows = monitor_form.rows_for(fields, {})
    values = monitor_form.with_blank_rows(fields, monitor_form.defaults(fields), rows)
    form = {k: v for k, v in values.items() if v not in ("", None)}
    form.update({"name": f"A {kind} monitor", **REQUIRED[kind]})
    return fields, form


@pytest.mark.parametrize("kind", sorted(CREATE_BODIES))
def test_each_types_defaults_round_trip_to_a_valid_body(kind: str):
    fields, form = posted_defaults(kind)
    names = {f.name for f in fields}
    own = set(CHECKS.get(kind).Settings.model_fields)
    assert own <= names, f"{kind}: its own fields are all on the form"
    assert {"name", "interval_seconds", "timeout_seconds", "tags", "channel_ids", "depends_on"} <= names
    body, _ = schema_body.body_of(fields, form, skip_defaults=True)
    assert body["type"] == kind and body["name"] == f"A {kind} monitor"
    spec = validate_create(body, CONTEXT)
    assert spec.type == kind  # type: ignore[attr-defined]
    # The defaults are left out, so the model's own apply.
    assert "interval_seconds" not in body and "confirm_after" not in body


@pytest.mark.parametrize("kind", sorted(CREATE_BODIES))
def test_each_types_stored_values_show_and_read_back_unchanged(kind: str):
    fields, form = posted_defaults(kind)
    body, _ = schema_body.body_of(fields, form, skip_defaults=True)
    shown = validate_create(body, CONTEXT).model_dump(mode="json")
    values = schema_body.values_of(monitor_form.fields(kind, [], editing=True), shown)
    edit_fields = monitor_form.fields(kind, [], editing=True)
    again, _ = schema_body.body_of(edit_fields, values, current=shown)
    assert schema_body.changed(again, shown) == {}


def field(kind: str, name: str) -> schema_form.Field:
    return next(f for f in monitor_form.fields(kind, [("7", "Ops")], editing=False) if f.name == name)


@pytest.mark.parametrize(
    ("kind", "name", "widget", "extra"),
    [
        ("http", "url", "url", {"required": True}),
        ("http", "name", "text", {"required": True}),
        ("http", "method", "select", {"default": "GET"}),
        ("http", "body", "textarea", {"nullable": True}),
        ("http", "headers", "pairs", {}),
        ("http", "auth", "variant", {"discriminator": "type", "nullable": True}),
        ("http", "assertions", "rows", {"discriminator": "type"}),
        ("http", "expected_status", "lines", {"item": "integer|string"}),
        ("http", "follow_redirects", "checkbox", {"default": False}),
        ("http", "tls_verify", "checkbox", {"default": True}),
        ("http", "interval_seconds", "number", {"default": 60}),
        ("http", "confirm_after", "number", {"attrs": {"step": "1", "min": "1", "max": "10"}}),
        ("http", "remind_every_minutes", "number", {"nullable": True}),
        ("http", "tags", "lines", {"item": "string"}),
        ("http", "channel_ids", "lines", {"choices": True, "options": (("7", "Ops"),)}),
        ("http", "depends_on", "lines", {"item": "integer"}),
        ("http", "type", "hidden", {"default": "http"}),
        ("tcp", "port", "number", {"required": True}),
        ("tcp", "type", "hidden", {"default": "tcp"}),
    ],
)
def test_what_each_property_becomes(kind: str, name: str, widget: str, extra: dict[str, Any]):
    f = field(kind, name)
    assert f.widget == widget
    for key, value in extra.items():
        got = getattr(f, key)
        if key == "attrs":
            assert {k: got.get(k) for k in value} == value
        else:
            assert got == value, key


def test_the_assertion_rows_show_every_kinds_fields_marked_by_kind():
    rows = field("http", "assertions")
    kinds = {c.name: set(c.kinds) for c in rows.children}
    assert kinds["keyword"] == {"keyword"} and kinds["path"] == {"json"}
    assert kinds["op"] == {"json", "header"} and kinds["value"] == {"json", "header"}
    op = rows.child("op")
    assert op.widget == "select" and {"==", "matches", "not_empty"} <= {v for v, _ in op.options}
    assert [v for v, _ in rows.options][:2] == ["keyword", "regex"]
    auth = field("http", "auth")
    assert auth.child("password").widget == "password" and auth.child("token").widget == "password"


BASE = {"name": "S", "url": "https://example.com/", "type": "http"}


@pytest.mark.parametrize(
    ("posted", "expected"),
    [
        ({"expected_status": "200, 3xx\n404"}, {"expected_status": [200, "3xx", 404]}),
        ({"tags": "a, b\n\nc"}, {"tags": ["a", "b", "c"]}),
        ({"depends_on": "3,4"}, {"depends_on": [3, 4]}),
        ({"channel_ids": ["7"]}, {"channel_ids": [7]}),
        ({"interval_seconds": "90"}, {"interval_seconds": 90}),
        ({"timeout_seconds": "2.5"}, {"timeout_seconds": 2.5}),
        ({"follow_redirects": "true"}, {"follow_redirects": True}),
        ({"headers": "X-A: b\nAccept:  text/html "}, {"headers": {"X-A": "b", "Accept": "text/html"}}),
        ({"auth.type": "bearer", "auth.token": "t0k", "auth.username": "ignored"},
         {"auth": {"type": "bearer", "token": "t0k"}}),
        ({"auth.type": "", "auth.username": "u"}, {}),
        ({"remind_every_minutes": ""}, {}),
        # rows: empty ones dropped, the rest numbered again; a JSON value read as JSON, a header's as text
        ({"assertions.0.type": "", "assertions.1.type": "json", "assertions.1.path": "$.n",
          "assertions.1.op": "==", "assertions.1.value": "3",
          "assertions.2.type": "header", "assertions.2.name": "X", "assertions.2.op": "==",
          "assertions.2.value": "3"},
         {"assertions": [{"type": "json", "path": "$.n", "op": "==", "value": 3},
                         {"type": "header", "name": "X", "op": "==", "value": "3"}]}),
        ({"assertions.0.type": "keyword", "assertions.0.keyword": "ok",
          "assertions.0.case_sensitive": "true"},
         {"assertions": [{"type": "keyword", "keyword": "ok"}]}),
        ({"assertions.0.type": "keyword", "assertions.0.keyword": "ok"},
         {"assertions": [{"type": "keyword", "keyword": "ok", "case_sensitive": False}]}),
        ({"assertions.0.type": "json", "assertions.0.path": "$.a", "assertions.0.op": "==",
          "assertions.0.value": "up"},
         {"assertions": [{"type": "json", "path": "$.a", "op": "==", "value": "up"}]}),
    ],
)  # fmt: skip
def test_a_posted_form_becomes_a_body(posted: dict[str, Any], expected: dict[str, Any]):
    fields = monitor_form.fields("http", [("7", "Ops")], editing=False)
    form = {"name": "S", "url": "https://example.com/", "tls_verify": "true", **posted}
    body, _ = schema_body.body_of(fields, form, skip_defaults=True)
    assert body == {**BASE, **expected}
    validate_create(body, CONTEXT)


def test_rows_numbered_again_keep_their_values_with_them():
    fields = monitor_form.fields("http", [], editing=False)
    form = {**BASE, "tls_verify": "true", "assertions.0.type": "", "assertions.1.type": "regex",
            "assertions.1.pattern": "o+"}  # fmt: skip
    _, values = schema_body.body_of(fields, form, skip_defaults=True)
    assert values["assertions.0.type"] == "regex" and values["assertions.0.pattern"] == "o+"
    assert "assertions.1.type" not in values


@pytest.mark.parametrize(
    ("posted", "field_name"),
    [
        ({"confirm_after": "two"}, "confirm_after"),
        ({"interval_seconds": "1e999"}, "interval_seconds"),
        ({"depends_on": "3, x"}, "depends_on"),
        ({"headers": "no colon here"}, "headers"),
    ],
)
def test_what_cannot_be_coerced_is_a_422_naming_its_field(posted: dict[str, Any], field_name: str):
    fields = monitor_form.fields("http", [], editing=False)
    with pytest.raises(DomainError) as caught:
        schema_body.body_of(fields, {**BASE, **posted}, skip_defaults=True)
    assert caught.value.status == 422 and caught.value.field == field_name


def test_an_edit_sends_what_changed_and_keeps_a_secret_left_empty():
    given = {**BASE, "remind_every_minutes": 5, "tags": ["a"]}
    stored = validate_create(given, CONTEXT).model_dump(mode="json")
    current = {**stored, "auth": {"type": "basic", "username": "u", "password": MASK},
               "headers": {"Authorization": MASK}}  # fmt: skip
    fields = monitor_form.fields("http", [], editing=True)
    values = schema_body.values_of(fields, current)
    assert "auth.password" not in values and values["auth.username"] == "u"
    assert values["headers"] == f"Authorization: {MASK}"
    values.update({"name": "T", "remind_every_minutes": "", "tags": ""})
    body, _ = schema_body.body_of(fields, values, current=current)
    assert schema_body.changed(body, current) == {"name": "T", "remind_every_minutes": None, "tags": []}
    values["auth.username"] = "v"
    body, _ = schema_body.body_of(fields, values, current=current)
    assert schema_body.changed(body, current)["auth"] == {"type": "basic", "username": "v", "password": MASK}
