"""A 422 names the field as the client wrote it: never a union branch pydantic adds to it."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel, ValidationError

from monitor.api.errors import from_validation
from monitor.checks.http_settings import RequestOptions
from monitor.domain.fieldpath import field_path
from monitor.domain.schemas.channels import ChannelCreate
from monitor.domain.schemas.monitors import HttpMonitorCreate, MonitorPatch

CTX = {"min_interval_seconds": 30}
GOOD = {"name": "site", "url": "https://example.com/health"}
KEYWORD = {"type": "keyword", "keyword": "ok"}


def error_of(model: type[BaseModel], body: dict[str, Any]) -> tuple[Any, str | None, str]:
    """(pydantic's location, the field the API names, its message) of the first problem."""
    with pytest.raises(ValidationError) as info:
        model.model_validate(body, context=CTX)
    error = from_validation(info.value, model)
    return info.value.errors()[0]["loc"], error.field, error.message


# (case, model, body, pydantic's location, the field named)
CASES = [
    ("a float status code", HttpMonitorCreate, {**GOOD, "expected_status": [200, 1.5]},
     ("expected_status", 1, "int"), "expected_status.1"),
    ("a boolean status code", MonitorPatch, {"expected_status": [True]},
     ("expected_status", 0, "int"), "expected_status.0"),
    ("a keyword assertion's flag", HttpMonitorCreate,
     {**GOOD, "assertions": [KEYWORD, {**KEYWORD, "case_sensitive": "no"}]},
     ("assertions", 1, "keyword", "case_sensitive"), "assertions.1.case_sensitive"),
    ("a keyword assertion without its keyword", MonitorPatch, {"assertions": [{"type": "keyword"}]},
     ("assertions", 0, "keyword", "keyword"), "assertions.0.keyword"),
    ("an unknown field of a json assertion", RequestOptions,
     {"assertions": [{"type": "json", "path": "$.a", "op": "exists", "colour": 1}]},
     ("assertions", 0, "json", "colour"), "assertions.0.colour"),
    ("basic auth without a password", HttpMonitorCreate, {**GOOD, "auth": {"type": "basic", "username": "u"}},
     ("auth", "basic", "password"), "auth.password"),
    ("a bearer token of the wrong type", MonitorPatch, {"auth": {"type": "bearer", "token": 5}},
     ("auth", "bearer", "token"), "auth.token"),
    ("a header value of the wrong type", HttpMonitorCreate, {**GOOD, "headers": {"X-A": 1}},
     ("headers", "X-A"), "headers.X-A"),
    ("an unknown field", ChannelCreate, {"kind": "telegram", "name": "n", "config": {"chat_id": "1"}, "x": 1},
     ("telegram", "x"), "x"),
    ("a channel's chat id", ChannelCreate, {"kind": "telegram", "name": "n", "config": {"chat_id": []}},
     ("telegram", "config", "chat_id"), "config.chat_id"),
]  # fmt: skip


@pytest.mark.parametrize(("model", "body", "loc", "field"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_field_is_named_without_union_branches(
    model: type[BaseModel], body: dict[str, Any], loc: tuple[Any, ...], field: str
) -> None:
    found_loc, named, message = error_of(model, body)
    assert found_loc == loc  # what pydantic says, so the case still tests what it names
    assert named == field
    assert message.startswith(f"{field}: ")


class _A(BaseModel):
    kind: Literal["a"]
    x: int


class _B(BaseModel):
    kind: Literal["b"]
    y: int


class _Plain(BaseModel):
    """A plain (not discriminated) union of models, nested in a list that may be null."""

    items: list[_A | _B] | None = None
    pair: dict[str, int | list[int]] = {}


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"items": [{"kind": "a", "x": "no"}]}, ["items.0.x", "items.0.kind", "items.0.y"]),
        ({"items": [{"kind": "a", "x": 1}, {"kind": "b"}]}, ["items.1.kind", "items.1.x", "items.1.y"]),
        ({"pair": {"k": "v"}}, ["pair.k", "pair.k"]),
        ({"pair": {"k": [1, "v"]}}, ["pair.k", "pair.k.1"]),
    ],
)
def test_a_plain_union_of_models_is_walked_too(body: dict[str, Any], fields: list[str]) -> None:
    # Each branch reports its own errors (at "items.0._A.x", "items.0._B.kind", ...).
    with pytest.raises(ValidationError) as info:
        _Plain.model_validate(body)
    assert [field_path(_Plain, e["loc"]) for e in info.value.errors()] == fields
    assert from_validation(info.value, _Plain).field == fields[0]


def test_a_location_that_does_not_fit_the_model_is_kept_as_it_is() -> None:
    assert field_path(HttpMonitorCreate, ("nowhere", 1, "x")) == "nowhere.1.x"
    assert field_path(HttpMonitorCreate, ("headers", "X-A", "[key]")) == "headers.X-A.[key]"


class _Leaf(BaseModel):
    model_config = {"extra": "forbid"}
    x: int


class _Tree(BaseModel):
    """Recursive, and with a model used twice: its core schema has definitions and references."""

    model_config = {"extra": "forbid"}
    kids: list[_Tree | _Leaf] = []
    leaf: _Leaf | int | None = None


def test_definitions_and_recursion_are_followed() -> None:
    with pytest.raises(ValidationError) as info:
        _Tree.model_validate({"kids": [{"kids": [{"x": "no"}]}], "leaf": {"x": "no"}})
    assert info.value.errors()[0]["loc"] == ("kids", 0, "_Tree", "kids", 0, "_Tree", "x")
    assert [field_path(_Tree, e["loc"]) for e in info.value.errors()] == [
        "kids.0.kids.0.x",  # as a _Tree: an unknown field
        "kids.0.kids.0.x",  # as a _Leaf: not an int
        "kids.0.x",  # the outer kid as a _Leaf: x missing,
        "kids.0.kids",  # and kids unknown
        "leaf.x",
        "leaf",
    ]
