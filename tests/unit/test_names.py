"""Names shown to people (monitors, channels, accounts): something visible, nothing that
steers a display."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from monitor.api.errors import from_validation
from monitor.domain.accounts import check_account_name
from monitor.domain.schemas.channels import ChannelCreate, ChannelPatch
from monitor.domain.schemas.monitors import HttpMonitorCreate, MonitorPatch
from monitor.names import name_problem

# (case, name, what the message says)
BAD = [
    ("only a zero-width space", "\u200b", "at least one visible character"),
    ("only zero-width joiners and a BOM", "\u200d\u200c\ufeff", "at least one visible character"),
    ("only a Hangul filler", "\u3164", "at least one visible character"),
    ("only blank braille", "\u2800\u2800", "at least one visible character"),
    ("only no-break spaces", "\u00a0\u2007", "at least one visible character"),
    ("only a combining mark", "\u0301", "at least one visible character"),
    ("a right-to-left override", "invoice \u202egnp.exe", "bidi-override characters (found U+202E)"),
    ("a left-to-right embedding", "\u202aname", "bidi-override characters (found U+202A)"),
    ("a right-to-left isolate", "a\u2067b\u2069", "bidi-override characters (found U+2067)"),
    ("a pop directional isolate", "ab\u2069", "bidi-override characters (found U+2069)"),
    ("BEL", "shop\x07", "control characters (found U+0007)"),
    ("ESC (a terminal colour)", "\x1b[31mshop", "control characters (found U+001B)"),
    ("a newline", "shop\nfake alert", "control characters (found U+000A)"),
    ("a carriage return", "shop\rx", "control characters (found U+000D)"),
    ("a tab", "shop\tx", "control characters (found U+0009)"),
    ("DEL", "shop\x7f", "control characters (found U+007F)"),
    ("a C1 control (NEL)", "shop\x85x", "control characters (found U+0085)"),
    ("a line separator", "shop\u2028x", "control characters (found U+2028)"),
]
GOOD = [
    "Shop",
    "Café — page d'accueil",
    "首页",
    "متجر\u200e (main)",  # a left-to-right mark is not an override
    "👨\u200d👩\u200d👧 family site",  # zero-width joiners inside an emoji sequence
    "a",
    "☃",
]


@pytest.mark.parametrize(("name", "says"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_a_bad_name_is_refused_saying_why(name: str, says: str) -> None:
    problem = name_problem(name)
    assert problem is not None and says in problem


@pytest.mark.parametrize("name", GOOD)
def test_a_good_name_is_taken(name: str) -> None:
    assert name_problem(name) is None
    check_account_name(name)
    assert HttpMonitorCreate.model_validate({"name": name, "url": "https://example.com/"}).name == name


MODELS: list[tuple[type[BaseModel], dict[str, Any]]] = [
    (HttpMonitorCreate, {"url": "https://example.com/"}),
    (MonitorPatch, {}),
    (ChannelCreate, {"kind": "telegram", "config": {"chat_id": "-100123"}}),
    (ChannelPatch, {}),
]


@pytest.mark.parametrize(("model", "rest"), MODELS, ids=[m.__name__ for m, _ in MODELS])
@pytest.mark.parametrize(("name", "says"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_the_api_refuses_a_bad_name_naming_the_field(
    model: type[BaseModel], rest: dict[str, Any], name: str, says: str
) -> None:
    with pytest.raises(ValidationError) as info:
        model.model_validate({**rest, "name": name})
    error = from_validation(info.value, model)
    assert (error.status, error.field) == (422, "name")
    # Surrounding whitespace is stripped first: a name of a newline alone is an empty name.
    assert says in error.message or "at least 1 character" in error.message, error.message


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("", "at least one visible character"),
        ("\u200b", "at least one visible character"),
        ("ops\n", "control characters"),
        ("x" * 101, "at most 100 characters (101 given)"),
    ],
)
def test_an_account_name_is_checked_before_the_database_sees_it(name: str, says: str) -> None:
    with pytest.raises(ValueError, match=re.escape(says)):
        check_account_name(name)
    check_account_name("x" * 100)
