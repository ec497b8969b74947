"""Assertion models: what each kind accepts (and the field a mistake names), how it reads,
how it is stored, and the wording helpers its messages use."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from monitor.checks import wording
from monitor.checks.assertions import ASSERTIONS, Header, Keyword

MIB = 1 << 20


def kw(keyword: str, **extra: Any) -> dict[str, Any]:
    return {"type": "keyword", "keyword": keyword, **extra}


def rx(pattern: str, **extra: Any) -> dict[str, Any]:
    return {"type": "regex", "pattern": pattern, **extra}


def js(path: str, op: str, *value: Any) -> dict[str, Any]:
    return {"type": "json", "path": path, "op": op, **({"value": value[0]} if value else {})}


def hd(name: str, op: str, *value: str) -> dict[str, Any]:
    return {"type": "header", "name": name, "op": op, **({"value": value[0]} if value else {})}


# -- describe ----------------------------------------------------------------------------

DESCRIBE = [
    (kw("Welcome"), 'keyword "Welcome" present'),
    (kw("Error", absent=True), 'keyword "Error" absent'),
    (kw("ok", case_sensitive=False), 'keyword "ok" present (any case)'),
    (rx(r"v\d+"), 'body matches "v\\d+"'),
    (rx("Error", absent=True), 'body does not match "Error"'),
    (js("$.status", "==", "ok"), '$.status == "ok"'),
    (js("$.count", ">", 5), "$.count > 5"),
    (js("$.tags", "contains", "x"), '$.tags contains "x"'),
    (js("$.a", "exists"), "$.a exists"),
    (js("$.a", "not_exists"), "$.a does not exist"),
    (js("$.a", "empty"), "$.a is empty"),
    (js("$.a", "not_empty"), "$.a is not empty"),
    (hd("Content-Type", "exists"), "header Content-Type present"),
    (hd("Server", "absent"), "header Server absent"),
    (hd("Content-Type", "==", "text/html"), 'header Content-Type == "text/html"'),
    (hd("Content-Type", "contains", "json"), 'header Content-Type contains "json"'),
    (hd("Content-Type", "matches", "json"), 'header Content-Type matches "json"'),
    ({"type": "response_time", "below_ms": 1500}, "response time below 1.5 s"),
    ({"type": "response_time", "below_ms": 250}, "response time below 250 ms"),
]


@pytest.mark.parametrize(("assertion", "text"), DESCRIBE, ids=[d[1] for d in DESCRIBE])
def test_describe(assertion: dict[str, Any], text: str) -> None:
    [model] = ASSERTIONS.validate_python([assertion])
    assert model.describe() == text


# -- validation --------------------------------------------------------------------------

NESTED: Any = 1
for _ in range(22):
    NESTED = [NESTED]

INVALID = [
    ("unknown type", {"type": "xpath"}, (0,)),
    ("no type", {"keyword": "a"}, (0,)),
    ("unknown field", kw("a", colour="red"), (0, "keyword", "colour")),
    ("keyword empty", kw(""), (0, "keyword", "keyword")),
    ("keyword too long", kw("a" * 1001), (0, "keyword", "keyword")),
    ("keyword not a string", kw(5), (0, "keyword", "keyword")),
    ("keyword with NUL", kw("a\x00"), (0, "keyword", "keyword")),
    ("keyword with a lone surrogate", kw("a\ud800"), (0, "keyword", "keyword")),
    ("absent not a boolean", kw("a", absent="yes"), (0, "keyword", "absent")),
    ("case_sensitive as a number", kw("a", case_sensitive=0), (0, "keyword", "case_sensitive")),
    ("pattern does not compile", rx("(unclosed"), (0, "regex", "pattern")),
    ("pattern empty", rx(""), (0, "regex", "pattern")),
    ("pattern nested too deeply", rx("(" * 500 + ")" * 500), (0, "regex", "pattern")),
    ("path with a number out of range", js("$[?@.a == 1e999]", "exists"), (0, "json", "path")),
    ("path nested too deeply", js("$" + "[?(" * 400, "exists"), (0, "json", "path")),
    ("path does not compile", js("$.", "exists"), (0, "json", "path")),
    ("path without root", js("status", "exists"), (0, "json", "path")),
    ("path with an unknown function", js("$[?nope(@)]", "exists"), (0, "json", "path")),
    ("unknown op", js("$.a", "~=", 1), (0, "json", "op")),
    ("value missing for ==", js("$.a", "=="), (0, "json", "value")),
    ("value missing for contains", js("$.a", "contains"), (0, "json", "value")),
    ("value given for exists", js("$.a", "exists", 1), (0, "json", "value")),
    ("value null given for empty", js("$.a", "empty", None), (0, "json", "value")),
    ("ordering against a boolean", js("$.a", ">", True), (0, "json", "value")),
    ("ordering against an array", js("$.a", "<", [1]), (0, "json", "value")),
    ("ordering against null", js("$.a", "<=", None), (0, "json", "value")),
    ("value infinite", js("$.a", "==", float("inf")), (0, "json", "value")),
    ("value nested too deep", js("$.a", "==", NESTED), (0, "json", "value")),
    ("value too long", js("$.a", "==", "x" * 5000), (0, "json", "value")),
    ("value with NUL", js("$.a", "==", {"k": "a\x00"}), (0, "json", "value")),
    ("header name not a token", hd("Bad Name", "exists"), (0, "header", "name")),
    ("header name empty", hd("", "exists"), (0, "header", "name")),
    ("header op unknown", hd("A", "startswith", "x"), (0, "header", "op")),
    ("header value missing", hd("A", "=="), (0, "header", "value")),
    ("header value given for exists", hd("A", "exists", "x"), (0, "header", "value")),
    ("header value given for absent", hd("A", "absent", ""), (0, "header", "value")),
    ("header contains empty", hd("A", "contains", ""), (0, "header", "value")),
    ("header pattern does not compile", hd("A", "matches", "[z-a]"), (0, "header", "value")),
    ("response time zero", {"type": "response_time", "below_ms": 0}, (0, "response_time", "below_ms")),
    ("response time too long", {"type": "response_time", "below_ms": 600_001},
     (0, "response_time", "below_ms")),
    ("response time as a string", {"type": "response_time", "below_ms": "100"},
     (0, "response_time", "below_ms")),
    ("response time as a boolean", {"type": "response_time", "below_ms": True},
     (0, "response_time", "below_ms")),
    ("response time NaN", {"type": "response_time", "below_ms": float("nan")},
     (0, "response_time", "below_ms")),
]  # fmt: skip


@pytest.mark.parametrize(("assertion", "loc"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
def test_invalid_assertions_name_their_field(assertion: dict[str, Any], loc: tuple[Any, ...]) -> None:
    with pytest.raises(ValidationError) as info:
        ASSERTIONS.validate_python([assertion])
    assert info.value.errors()[0]["loc"] == loc


def test_validation_messages_explain() -> None:
    with pytest.raises(ValidationError, match=r"not a valid regular expression: missing \) at position 9"):
        ASSERTIONS.validate_python([rx("(unclosed")])
    with pytest.raises(
        ValidationError, match=r"not a valid JSONPath \(RFC 9535\): expected a shorthand selector"
    ):
        ASSERTIONS.validate_python([js("$.", "exists")])
    with pytest.raises(ValidationError, match="required with op '=='"):
        ASSERTIONS.validate_python([js("$.a", "==")])


def test_stored_form_round_trips_and_leaves_out_absent_values() -> None:
    given = [kw("Welcome"), js("$.a", "exists"), js("$.n", "==", None), hd("A", "absent"), hd("B", "==", "x"),
             {"type": "response_time", "below_ms": 1500}]  # fmt: skip
    dumped = [m.model_dump(mode="json") for m in ASSERTIONS.validate_python(given)]
    assert dumped[0] == {"type": "keyword", "keyword": "Welcome", "absent": False, "case_sensitive": True}
    assert dumped[1] == {"type": "json", "path": "$.a", "op": "exists"}
    assert dumped[2] == {"type": "json", "path": "$.n", "op": "==", "value": None}
    assert dumped[3] == {"type": "header", "name": "A", "op": "absent"}
    assert ASSERTIONS.validate_python(dumped) == ASSERTIONS.validate_python(given)
    assert isinstance(ASSERTIONS.validate_python(dumped)[0], Keyword)
    assert isinstance(ASSERTIONS.validate_python(dumped)[3], Header)


# -- wording -----------------------------------------------------------------------------

SIZES = [(0, "0 bytes"), (1, "1 byte"), (1023, "1023 bytes"), (1024, "1 KiB"), (12_600, "12.3 KiB"),
         (MIB, "1 MiB"), (MIB * 3 // 2, "1.5 MiB"), (10 * MIB, "10 MiB")]  # fmt: skip


@pytest.mark.parametrize(("n", "text"), SIZES, ids=[s[1] for s in SIZES])
def test_sizes(n: int, text: str) -> None:
    assert wording.size(n) == text


DURATIONS = [(843, "840 ms"), (8.43, "8.4 ms"), (0.5, "0.5 ms"), (999.4, "1 s"), (1000, "1 s"),
             (2430, "2.4 s"), (12_345, "12 s"), (600_000, "600 s")]  # fmt: skip


@pytest.mark.parametrize(("ms", "text"), DURATIONS, ids=[d[1] for d in DURATIONS])
def test_durations(ms: float, text: str) -> None:
    assert wording.duration(ms) == text


QUOTES = [("plain", '"plain"'), ('a "b"', '"a \\"b\\""'), ("back\\slash", '"back\\\\slash"'),
          ("line\nbreak\r\t", '"line\\nbreak\\r\\t"'), ("\x00\x7f", '"\\x00\\x7f"'),
          ("\u202eevil", '"\\u202eevil"'), ("é ü 日本", '"é ü 日本"'),
          ("y" * 61, '"' + "y" * 60 + '…"')]  # fmt: skip


@pytest.mark.parametrize(("text", "quoted"), QUOTES, ids=[q[1] for q in QUOTES])
def test_quotes_are_clipped_and_printable(text: str, quoted: str) -> None:
    assert wording.quote(text) == quoted


@pytest.mark.parametrize(
    ("pattern", "ok"),
    [
        (r"\d{3}-\d{4}", True),
        ("(?:a{100}){100}", True),
        ("a{20000}", True),
        # 24 characters that compile to ~300 MB, and worse: refused before compiling.
        ("(?:(?:a{100}){100}){100}", False),
        ("((a{1000}){1000}){1000}", False),
        ("a{20001}", False),
    ],
)
def test_counted_repeats_are_bounded_before_compiling(pattern: str, ok: bool) -> None:
    models = [
        {"type": "regex", "pattern": pattern},
        {"type": "header", "name": "x", "op": "matches", "value": pattern},
        {"type": "json", "path": f"$[?match(@.a, {json.dumps(pattern)})]", "op": "exists"},
    ]
    for model in models:
        if ok:
            ASSERTIONS.validate_python([model])
        else:
            with pytest.raises(ValidationError, match="counted repeats expand to over 20000 items"):
                ASSERTIONS.validate_python([model])
