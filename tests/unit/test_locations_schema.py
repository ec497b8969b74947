"""``locations`` and ``quorum`` (issue 16, item 3): every refusal names its field, on a new
monitor, on a PATCH alone, and on a PATCH merged with the stored monitor."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from monitor.api.errors import from_validation
from monitor.api.openapi import Limits, document
from monitor.config import Settings
from monitor.domain.schemas.locations import LOCATION, check_quorum, majority, patch_problem
from monitor.domain.schemas.monitors import PATCH_BODIES, MonitorCreate, validate_create

CTX = {"min_interval_seconds": 30}
HTTP = {"name": "site", "url": "https://example.com/"}
TCP = {"type": "tcp", "name": "smtp", "host": "mail.example.com", "port": 25}
BEAT = {"type": "heartbeat", "name": "backup", "cron": "0 3 * * *"}


def test_the_location_rule_is_the_schedulers() -> None:
    assert LOCATION.pattern == Settings.model_json_schema()["properties"]["location"]["pattern"]


@pytest.mark.parametrize(("count", "quorum"), [(1, 1), (2, 2), (3, 2), (4, 3), (16, 9)])
def test_majority(count: int, quorum: int) -> None:
    assert majority(count) == quorum


# (case, body, locations and quorum as validated)
GOOD: list[tuple[str, dict[str, Any], tuple[list[str], int | None]]] = [
    ("none: checked once per tick, as before", HTTP, ([], None)),
    ("two, a majority", {**HTTP, "locations": ["eu", "us"]}, (["eu", "us"], None)),
    ("two, both", {**HTTP, "locations": ["eu", "us"], "quorum": 2}, (["eu", "us"], 2)),
    ("one of three", {**TCP, "locations": ["eu", "us", "ap-1"], "quorum": 1}, (["eu", "us", "ap-1"], 1)),
    ("sixteen", {**HTTP, "locations": [f"l{i}" for i in range(16)], "quorum": 16},
     ([f"l{i}" for i in range(16)], 16)),
    ("a heartbeat without", {**BEAT, "locations": []}, ([], None)),
    ("null quorum without locations", {**HTTP, "quorum": None}, ([], None)),
]  # fmt: skip


@pytest.mark.parametrize(("body", "expected"), [g[1:] for g in GOOD], ids=[g[0] for g in GOOD])
def test_accepted(body: dict[str, Any], expected: tuple[list[str], int | None]) -> None:
    spec: Any = validate_create(body, CTX)
    assert (spec.locations, spec.quorum) == expected


# (case, body, the field named, words of the message)
BAD: list[tuple[str, dict[str, Any], str, str]] = [
    ("a quorum without locations", {**HTTP, "quorum": 1}, "quorum", "without locations"),
    ("more than there are", {**HTTP, "locations": ["eu", "us"], "quorum": 3}, "quorum", "never go down"),
    ("more than the one", {**TCP, "locations": ["eu"], "quorum": 2}, "quorum", "more than 1 location:"),
    ("a quorum of 0", {**HTTP, "locations": ["eu"], "quorum": 0}, "quorum", "greater than or equal to 1"),
    ("a quorum of 17", {**HTTP, "locations": ["eu"], "quorum": 17}, "quorum", "less than or equal to 16"),
    ("a quorum as a string", {**HTTP, "locations": ["eu"], "quorum": "1"}, "quorum", "integer"),
    ("a quorum of true", {**HTTP, "locations": ["eu"], "quorum": True}, "quorum", "integer"),
    ("twice the same", {**HTTP, "locations": ["eu", "us", "eu"]}, "locations", "'eu' is listed twice"),
    ("upper case", {**HTTP, "locations": ["EU"]}, "locations.0", "is not a location"),
    ("a space", {**HTTP, "locations": ["eu", "us east"]}, "locations.1", "is not a location"),
    ("too long", {**HTTP, "locations": ["x" * 33]}, "locations.0", "is not a location"),
    ("empty", {**HTTP, "locations": [""]}, "locations.0", "is not a location"),
    ("seventeen", {**HTTP, "locations": [f"l{i}" for i in range(17)]}, "locations", "at most 16"),
    ("not a list", {**HTTP, "locations": "eu"}, "locations", "list"),
    ("null", {**HTTP, "locations": None}, "locations", "list"),
    ("a heartbeat with one", {**BEAT, "locations": ["eu"]}, "locations", "pings come to the api"),
    ("a heartbeat with a quorum", {**BEAT, "quorum": 1}, "quorum", "without locations"),
]  # fmt: skip


@pytest.mark.parametrize(("body", "field", "words"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_refused_naming_the_field(body: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(ValidationError) as info:
        validate_create(body, CTX)
    error = from_validation(info.value, MonitorCreate)
    assert (error.status, error.field) == (422, field), error.message
    assert error.message.startswith(f"{field}: ") and words in error.message, error.message


# (case, the monitor's type, the PATCH, the field named or None)
PATCHES: list[tuple[str, str, dict[str, Any], str | None]] = [
    ("locations alone", "http", {"locations": ["eu", "us"]}, None),
    ("none again", "tcp", {"locations": []}, None),
    ("a quorum alone (checked against the stored locations)", "http", {"quorum": 2}, None),
    ("back to a majority", "dns", {"quorum": None}, None),
    ("both, fitting", "ping", {"locations": ["eu", "us"], "quorum": 2}, None),
    ("both, too many", "http", {"locations": ["eu"], "quorum": 2}, "quorum"),
    ("locations null", "http", {"locations": None}, "locations"),
    ("locations repeated", "tls", {"locations": ["eu", "eu"]}, "locations"),
    ("a bad name", "http", {"locations": ["eu", "Us"]}, "locations.1"),
    ("a heartbeat's locations", "heartbeat", {"locations": ["eu"]}, "locations"),
    ("a heartbeat's none", "heartbeat", {"locations": []}, None),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "body", "field"), [p[1:] for p in PATCHES], ids=[p[0] for p in PATCHES])
def test_a_patch_alone(kind: str, body: dict[str, Any], field: str | None) -> None:
    model = PATCH_BODIES[kind]
    if field is None:
        assert model.model_validate(body, context=CTX).model_fields_set == set(body)
        return
    with pytest.raises(ValidationError) as info:
        model.model_validate(body, context=CTX)
    assert from_validation(info.value, model).field == field


# (case, the PATCH's values, the stored locations and quorum, words of the problem or None)
MERGED: list[tuple[str, dict[str, Any], tuple[list[str], int | None], str | None]] = [
    ("one location left under a quorum of 2", {"locations": ["eu"]}, (["eu", "us"], 2),
     "the monitor's quorum of 2 is more than the 1 location given; lower quorum"),
    ("none left under a quorum", {"locations": []}, (["eu", "us"], 1),
     "the monitor's quorum of 1 needs locations; set quorum to null"),
    ("one location left, a majority", {"locations": ["eu"]}, (["eu", "us"], None), None),
    ("more locations under a quorum", {"locations": ["eu", "us", "ap"]}, (["eu", "us"], 2), None),
    ("a quorum above the stored locations", {"quorum": 3}, (["eu", "us"], None),
     "3 is more than the monitor's 2 locations"),
    ("a quorum without stored locations", {"quorum": 1}, ([], None),
     "null when the monitor's locations is empty"),
    ("a quorum within", {"quorum": 2}, (["eu", "us"], 1), None),
    ("a quorum back to null", {"quorum": None}, ([], None), None),
    ("both given: the schema's", {"locations": ["eu"], "quorum": 2}, ([], None), None),
    ("neither", {"name": "x"}, (["eu"], 5), None),
]  # fmt: skip


@pytest.mark.parametrize(("values", "stored", "words"), [m[1:] for m in MERGED], ids=[m[0] for m in MERGED])
def test_a_patch_merged_with_the_stored(
    values: dict[str, Any], stored: tuple[list[str], int | None], words: str | None
) -> None:
    problem = patch_problem(values, {"locations": stored[0], "quorum": stored[1]})
    if words is None:
        assert problem is None
    else:
        assert problem is not None and words in problem, problem


@pytest.mark.parametrize(
    ("quorum", "locations", "ok"),
    [(None, [], True), (None, ["a"], True), (1, ["a"], True), (2, ["a", "b", "c"], True), (1, [], False),
     (2, ["a"], False), (4, ["a", "b", "c"], False)],
)  # fmt: skip
def test_check_quorum(quorum: int | None, locations: list[str], ok: bool) -> None:
    if ok:
        check_quorum(quorum, locations)
    else:
        with pytest.raises(ValueError):
            check_quorum(quorum, locations)


def test_the_document_describes_them() -> None:
    found = document(Limits(30))
    schemas = found["components"]["schemas"]
    http = schemas["HttpMonitorCreate"]["properties"]
    assert http["locations"]["maxItems"] == 16 and http["locations"]["items"]["pattern"] == LOCATION.pattern
    assert http["quorum"]["anyOf"][0] == {"type": "integer", "minimum": 1, "maximum": 16}
    assert schemas["HeartbeatMonitorCreate"]["properties"]["locations"]["maxItems"] == 0
    assert schemas["HeartbeatMonitorPatch"]["properties"]["locations"]["maxItems"] == 0
    assert {"locations", "quorum", "location_status"} <= set(schemas["Monitor"]["properties"])
    assert "locations" in schemas["Uptime"]["properties"]
    checks = found["paths"]["/api/v1/monitors/{id}/checks"]["get"]["parameters"]
    assert any(p["name"] == "checked_from" for p in checks)
