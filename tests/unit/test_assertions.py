"""Assertions: each kind validated, described and judged, scenario by scenario, without a network.

A row is (id, assertion, what the check observed, the message expected: None when it holds).
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from monitor.checks.assertions import ASSERTIONS, Judge, Observed, Outcome

MIB = 1 << 20


def observed(body: bytes | None = b"", **changes: Any) -> Observed:
    fields: dict[str, Any] = {
        "status": 200,
        "headers": {},
        "body": body,
        "body_truncated": False,
        "body_cap": MIB,
        "body_error": None,
        "elapsed_ms": 100.0,
        "content_type": None,
    }
    fields.update(changes)
    return Observed(**fields)


def one(assertion: dict[str, Any], seen: Observed) -> Outcome:
    [outcome] = Judge(ASSERTIONS.validate_python([assertion])).judge(seen)
    return outcome


def run_table(assertion: dict[str, Any], seen: Observed, message: str | None) -> None:
    outcome = one(assertion, seen)
    assert outcome.message == message, outcome
    assert outcome.ok is (message is None)


def kw(keyword: str, **extra: Any) -> dict[str, Any]:
    return {"type": "keyword", "keyword": keyword, **extra}


# -- keyword -----------------------------------------------------------------------------

KEYWORD = [
    ("present", kw("Welcome"), observed(b"<h1>Welcome</h1>"), None),
    ("missing", kw("Welcome"), observed(b"x" * 12_600), 'keyword "Welcome" not found in the body (12.3 KiB)'),
    ("missing from a small body", kw("Welcome"), observed(b"hi"),
     'keyword "Welcome" not found in the body (2 bytes)'),
    ("missing from an empty body", kw("Welcome"), observed(b""),
     'keyword "Welcome" not found in the body (0 bytes)'),
    ("missing from a cut body", kw("Welcome"), observed(b"x" * MIB, body_truncated=True),
     'keyword "Welcome" not found in the first 1 MiB'),
    ("found in a cut body", kw("Welcome"),
     observed(b"Welcome" + b"x" * 100, body_truncated=True, body_cap=107),
     None),
    ("case differs", kw("welcome"), observed(b"WELCOME"),
     'keyword "welcome" not found in the body (7 bytes)'),
    ("any case", kw("welcome", case_sensitive=False), observed(b"WELCOME"), None),
    ("any case, missing", kw("welcome", case_sensitive=False), observed(b"bye"),
     'keyword "welcome" not found in the body (3 bytes)'),
    ("absent and absent", kw("Error", absent=True), observed(b"all good"), None),
    ("absent but found", kw("Error", absent=True), observed(b"x" * 1234 + b"Error"),
     'keyword "Error" found at byte 1234'),
    ("absent but found after multibyte text", kw("Error", absent=True), observed("é€".encode() + b"Error"),
     'keyword "Error" found at byte 5'),
    ("absent, any case, found", kw("error", absent=True, case_sensitive=False), observed(b"..ERROR"),
     'keyword "error" found at byte 2'),
    ("latin-1 body", kw("café"),
     observed("un café".encode("latin-1"), content_type="text/html; charset=ISO-8859-1"),
     None),
    ("latin-1 body read as utf-8 misses", kw("café"), observed("un café".encode("latin-1")),
     'keyword "café" not found in the body (7 bytes)'),
    ("quoted charset", kw("café"),
     observed("café".encode("cp1252"), content_type='text/html; charset="windows-1252"'),
     None),
    ("utf-16 body", kw("Welcome"),
     observed("Welcome".encode("utf-16"), content_type="text/plain; charset=utf-16"),
     None),
    ("shift_jis body, byte offset in the body's encoding", kw("エラー", absent=True),
     observed("あエラー".encode("shift_jis"), content_type="text/html; charset=Shift_JIS"),
     'keyword "エラー" found at byte 2'),
    ("unknown charset falls back to utf-8", kw("café"),
     observed("café".encode(), content_type="text/html; charset=klingon"),
     None),
    ("a codec that is not a text encoding falls back to utf-8", kw("hi"),
     observed(b"hi", content_type="text/plain; charset=base64"), None),
    ("invalid utf-8 is replaced, the rest still found", kw("ok"), observed(b"\xff\xfe ok"), None),
    ("keyword longer than the clip", kw("W" * 100), observed(b"nope"),
     f'keyword "{"W" * 60}…" not found in the body (4 bytes)'),
    ("keyword with a quote and a newline", kw('say "hi"\n'), observed(b"nope"),
     'keyword "say \\"hi\\"\\n" not found in the body (4 bytes)'),
]  # fmt: skip


@pytest.mark.parametrize(
    ("assertion", "seen", "message"), [c[1:] for c in KEYWORD], ids=[c[0] for c in KEYWORD]
)
def test_keyword(assertion: dict[str, Any], seen: Observed, message: str | None) -> None:
    run_table(assertion, seen, message)


# -- regex -------------------------------------------------------------------------------


def rx(pattern: str, **extra: Any) -> dict[str, Any]:
    return {"type": "regex", "pattern": pattern, **extra}


REGEX = [
    ("matches", rx(r"\d+ items"), observed(b"there are 42 items"), None),
    ("no match", rx(r"\d+ items"), observed(b"none"),
     'pattern "\\d+ items" not found in the body (4 bytes)'),
    ("no match in a cut body", rx("ok"), observed(b"x" * 100, body_truncated=True, body_cap=100),
     'pattern "ok" not found in the first 100 bytes'),
    ("inline flags", rx("(?i)welcome"), observed(b"WELCOME"), None),
    ("absent and absent", rx("Error [0-9]+", absent=True), observed(b"fine"), None),
    ("absent but matched: the match is quoted with its byte offset", rx("Error [0-9]+", absent=True),
     observed(b"abc Error 500 xyz"), 'pattern "Error [0-9]+" matched "Error 500" at byte 4'),
    ("a long match is clipped", rx("x+", absent=True), observed(b"x" * 5000),
     f'pattern "x+" matched "{"x" * 60}…" at byte 0'),
    ("a control character in the match is escaped", rx("a.b", absent=True, ), observed(b"a\x1bb"),
     'pattern "a.b" matched "a\\x1bb" at byte 0'),
    ("charset applies", rx("caf[é]"),
     observed("café".encode("latin-1"), content_type="text/plain;charset=latin-1"),
     None),
    # The regex package optimises (a+)+$ into linear time: it answers at once, no timeout needed.
    ("nested quantifier answered at once", rx("(a+)+$"), observed(b"a" * 40 + b"b"),
     'pattern "(a+)+$" not found in the body (41 bytes)'),
    ("catastrophic backtracking hits the budget", rx("(a|aa)+$"), observed(b"a" * 40 + b"b"),
     'pattern "(a|aa)+$" took too long (over 0.1 s)'),
    ("catastrophic backtracking, absent", rx("^(a|a)*$", absent=True), observed(b"a" * 40 + b"b"),
     'pattern "^(a|a)*$" took too long (over 0.1 s)'),
]  # fmt: skip


@pytest.mark.parametrize(("assertion", "seen", "message"), [c[1:] for c in REGEX], ids=[c[0] for c in REGEX])
def test_regex(assertion: dict[str, Any], seen: Observed, message: str | None) -> None:
    started = time.process_time()  # CPU: the budget cuts the pattern off, load or not
    run_table(assertion, seen, message)
    assert time.process_time() - started < 1.0


# -- json --------------------------------------------------------------------------------


def js(path: str, op: str, *value: Any) -> dict[str, Any]:
    return {"type": "json", "path": path, "op": op, **({"value": value[0]} if value else {})}


DOC = (
    b'{"status": "degraded", "count": 3, "ratio": 0.5, "ok": true, "none": null, "name": "api-eu",'
    b' "items": [1, "two", {"three": 3}], "empty": [], "blank": "", "obj": {"a": 1}, "no": {},'
    b' "list": [{"id": 1, "state": "up"}, {"id": 2, "state": "down"}]}'
)
J = observed(DOC, content_type="application/json")

JSON = [
    ("== string", js("$.status", "==", "ok"), J, '$.status is "degraded", expected "ok"'),
    ("== string holds", js("$.status", "==", "degraded"), J, None),
    ("== number", js("$.count", "==", 3), J, None),
    ("== int and float are one number", js("$.count", "==", 3.0), J, None),
    ("== null", js("$.none", "==", None), J, None),
    ("== array", js("$.items", "==", [1, "two", {"three": 3}]), J, None),
    ("== object differs", js("$.obj", "==", {"a": 2}), J, '$.obj is {"a": 1}, expected {"a": 2}'),
    ("== true is not 1", js("$.ok", "==", 1), J, "$.ok is true (a boolean), expected 1 (a number)"),
    ("== string is not number", js("$.count", "==", "3"), J,
     '$.count is 3 (a number), expected "3" (a string)'),
    ("!= holds", js("$.status", "!=", "down"), J, None),
    ("!= fails", js("$.status", "!=", "degraded"), J, '$.status is "degraded", expected != "degraded"'),
    ("> fails", js("$.count", ">", 5), J, "$.count is 3, expected > 5"),
    (">= holds", js("$.count", ">=", 3), J, None),
    ("< holds", js("$.ratio", "<", 1), J, None),
    ("<= fails", js("$.ratio", "<=", 0.25), J, "$.ratio is 0.5, expected <= 0.25"),
    ("< on strings", js("$.name", "<", "b"), J, None),
    ("> string against number", js("$.status", ">", 5),
     J, '$.status is "degraded" (a string), expected > 5 (a number)'),
    ("> boolean against number", js("$.ok", ">", 0), J, "$.ok is true (a boolean), expected > 0 (a number)"),
    ("< null against number", js("$.none", "<", 1), J, "$.none is null (null), expected < 1 (a number)"),
    ("contains substring", js("$.name", "contains", "eu"), J, None),
    ("contains substring fails", js("$.name", "contains", "us"), J,
     '$.name is "api-eu", expected to contain "us"'),
    ("contains element", js("$.items", "contains", "two"), J, None),
    ("contains object element", js("$.items", "contains", {"three": 3}), J, None),
    ("contains element fails", js("$.items", "contains", 2), J,
     '$.items is [1, "two", {"three": 3}] (3 items), expected to contain 2'),
    ("contains true is not 1", js("$.items", "contains", True), J,
     '$.items is [1, "two", {"three": 3}] (3 items), expected to contain true'),
    ("contains key", js("$.obj", "contains", "a"), J, None),
    ("contains key fails", js("$.obj", "contains", "b"), J, '$.obj is {"a": 1} (1 keys), expected a key "b"'),
    ("contains number in a string", js("$.name", "contains", 5), J,
     '$.name is "api-eu" (a string), which can contain only a string, not a number'),
    ("contains in a number", js("$.count", "contains", 3), J,
     "$.count is 3 (a number), expected a string, an array or an object"),
    ("exists", js("$.items", "exists"), J, None),
    ("exists: null is a match", js("$.none", "exists"), J, None),
    ("exists fails", js("$.missing", "exists"), J, "$.missing: no match"),
    ("not_exists holds", js("$.missing", "not_exists"), J, None),
    ("not_exists fails", js("$.status", "not_exists"), J, '$.status is "degraded", expected no match'),
    ("empty array", js("$.empty", "empty"), J, None),
    ("empty string", js("$.blank", "empty"), J, None),
    ("empty object", js("$.no", "empty"), J, None),
    ("empty fails", js("$.items", "empty"), J,
     '$.items is [1, "two", {"three": 3}] (3 items), expected empty'),
    ("empty on a number", js("$.count", "empty"), J,
     "$.count is 3 (a number), expected an empty string, array or object"),
    ("empty on null", js("$.none", "empty"), J,
     "$.none is null (null), expected an empty string, array or object"),
    ("not_empty holds", js("$.items", "not_empty"), J, None),
    ("not_empty fails", js("$.empty", "not_empty"), J, "$.empty is [] (0 items), expected not empty"),
    ("not_empty on a boolean", js("$.ok", "not_empty"), J,
     "$.ok is true (a boolean), expected a non-empty string, array or object"),
    ("no match for a comparison", js("$.items[9]", "==", 1), J, "$.items[9]: no match"),
    ("no match for empty", js("$.nothing", "empty"), J, "$.nothing: no match"),
    ("the first match is compared", js("$.list[*].state", "==", "up"), J, None),
    ("filter", js("$.list[?@.id == 2].state", "==", "up"), J,
     '$.list[?@.id == 2].state is "down", expected "up"'),
    ("descendants", js("$..three", "==", 3), J, None),
    ("match() in a filter", js("$.list[?match(@.state, 'd.*')].id", "==", 2), J, None),
    ("a catastrophic match() in a filter hits the budget", js("$[?match(@, '(a|aa)+')]", "exists"),
     observed(b'["' + b"a" * 40 + b'b"]'), "$[?match(@, '(a|aa)+')]: a pattern in the path took too long"),
    ("root of a scalar document", js("$", "==", 5), observed(b"5"), None),
    ("not JSON", js("$.status", "==", "ok"), observed(b"<html>"),
     "the body is not JSON: Expecting value at line 1 column 1"),
    ("not JSON, later", js("$.a", "exists"), observed(b'{"a": 1 "b": 2}'),
     "the body is not JSON: Expecting ',' delimiter at line 1 column 9"),
    ("cut JSON says it was cut", js("$.a", "exists"),
     observed(b'{"a": [1, 2', body_truncated=True, body_cap=11),
     "the body is not JSON: it was cut at 11 bytes (max_body_bytes)"),
    ("empty body", js("$.a", "exists"), observed(b"  "), "the body is empty, not JSON"),
    ("invalid utf-8", js("$.a", "exists"), observed(b'{"a": "\xff"}'),
     "the body is not JSON: not valid UTF-8 at byte 7"),
    ("nested too deeply", js("$.a", "exists"), observed(b"[" * 100_000 + b"]" * 100_000),
     "the body is not JSON: nested too deeply"),
    ("a utf-8 BOM is fine", js("$.a", "==", 1), observed(b'\xef\xbb\xbf{"a": 1}'), None),
    ("a long value is clipped", js("$.s", "==", "x"), observed(b'{"s": "' + b"y" * 10_000 + b'"}'),
     f'$.s is "{"y" * 60}…", expected "x"'),
    ("a big array is clipped", js("$", "empty"), observed(b"[" + b"1, " * 100_000 + b"1]"),
     f"$ is {('[' + '1, ' * 30)[:60]}… (100001 items), expected empty"),
]  # fmt: skip


@pytest.mark.parametrize(("assertion", "seen", "message"), [c[1:] for c in JSON], ids=[c[0] for c in JSON])
def test_json(assertion: dict[str, Any], seen: Observed, message: str | None) -> None:
    run_table(assertion, seen, message)


def test_the_body_is_parsed_once_for_all_json_assertions() -> None:
    judge = Judge(ASSERTIONS.validate_python([js("$.a", "==", 1), js("$.b", "exists"), kw("a")]))
    seen = observed(b'{"a": 1, "b": 2}')
    calls = 0
    real = json.loads

    def counting(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        return real(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("monitor.checks.observed.json.loads", counting)
        assert [o.ok for o in judge.judge(seen)] == [True, True, True]
    assert calls == 1


# -- header ------------------------------------------------------------------------------


def hd(name: str, op: str, *value: str) -> dict[str, Any]:
    return {"type": "header", "name": name, "op": op, **({"value": value[0]} if value else {})}


CT = {"content-type": ("application/json; charset=utf-8",)}
COOKIES = {"set-cookie": ("a=1", "session=abc; HttpOnly", "b=2")}

HEADER = [
    ("exists", hd("Content-Type", "exists"), observed(headers=CT), None),
    ("exists, any case", hd("CONTENT-type", "exists"), observed(headers=CT), None),
    ("exists fails", hd("X-Served-By", "exists"), observed(headers=CT), "header X-Served-By is missing"),
    ("absent", hd("Server", "absent"), observed(headers={}), None),
    ("absent fails, quoting the value", hd("Server", "absent"), observed(headers={"server": ("nginx/1.2",)}),
     'header Server is present: "nginx/1.2"'),
    ("absent fails with several values", hd("Set-Cookie", "absent"), observed(headers=COOKIES),
     'header Set-Cookie is present: "a=1" (and 2 more)'),
    ("== holds", hd("Content-Type", "==", "application/json; charset=utf-8"), observed(headers=CT), None),
    ("== is exact", hd("Content-Type", "==", "application/json"), observed(headers=CT),
     'header Content-Type is "application/json; charset=utf-8", expected "application/json"'),
    ("== on a missing header", hd("Content-Type", "==", "x"), observed(headers={}),
     "header Content-Type is missing"),
    ("== empty value", hd("X-Empty", "==", ""), observed(headers={"x-empty": ("",)}), None),
    ("contains", hd("Content-Type", "contains", "json"), observed(headers=CT), None),
    ("contains fails", hd("Content-Type", "contains", "html"), observed(headers=CT),
     'header Content-Type is "application/json; charset=utf-8", expected to contain "html"'),
    ("matches", hd("Content-Type", "matches", "^application/(.+\\+)?json"), observed(headers=CT), None),
    ("matches fails", hd("Content-Type", "matches", "json"),
     observed(headers={"content-type": ("text/html",)}),
     'header Content-Type is "text/html", expected to match "json"'),
    ("any of several values holds", hd("Set-Cookie", "contains", "session="), observed(headers=COOKIES),
     None),
    ("none of several values", hd("Set-Cookie", "matches", "^token="), observed(headers=COOKIES),
     'header Set-Cookie is "a=1" (and 2 more), expected to match "^token="'),
    ("a long value is clipped", hd("X-Long", "==", "a"), observed(headers={"x-long": ("v" * 500,)}),
     f'header X-Long is "{"v" * 60}…", expected "a"'),
    ("a catastrophic pattern hits the budget", hd("X-A", "matches", "(a|aa)+$"),
     observed(headers={"x-a": ("a" * 40 + "b",) * 5}), 'header X-A: pattern "(a|aa)+$" took too long'),
]  # fmt: skip


@pytest.mark.parametrize(
    ("assertion", "seen", "message"), [c[1:] for c in HEADER], ids=[c[0] for c in HEADER]
)
def test_header(assertion: dict[str, Any], seen: Observed, message: str | None) -> None:
    started = time.process_time()  # CPU: the budget cuts the pattern off, load or not
    run_table(assertion, seen, message)
    assert time.process_time() - started < 1.0


# -- response time -----------------------------------------------------------------------

RESPONSE_TIME = [
    ("below", 1500, 1499.9, None),
    ("seconds", 1500, 2430, "response time 2.4 s > 1.5 s"),
    ("milliseconds", 500, 843, "response time 840 ms > 500 ms"),
    ("across the unit", 900, 1200, "response time 1.2 s > 900 ms"),
    ("more figures when two would read the same", 1500, 1540, "response time 1.54 s > 1.5 s"),
    ("equal is not below", 1500, 1500, "response time 1.5 s >= 1.5 s"),
    ("long", 60_000, 123_456, "response time 120 s > 60 s"),
    ("sub-millisecond bound", 0.5, 0.84, "response time 0.84 ms > 0.5 ms"),
]


@pytest.mark.parametrize(
    ("below", "elapsed", "message"), [c[1:] for c in RESPONSE_TIME], ids=[c[0] for c in RESPONSE_TIME]
)
def test_response_time(below: float, elapsed: float, message: str | None) -> None:
    run_table({"type": "response_time", "below_ms": below}, observed(None, elapsed_ms=elapsed), message)


# -- the body could not be read ----------------------------------------------------------

BODY_KINDS = [
    kw("a"),
    kw("a", absent=True),
    rx("a"),
    rx("a", absent=True),
    js("$", "exists"),
    js("$", "not_exists"),
]


@pytest.mark.parametrize(
    "assertion", BODY_KINDS, ids=lambda a: Judge(ASSERTIONS.validate_python([a]))._rules[0].assertion
)
def test_a_body_error_fails_every_body_assertion_with_its_cause(assertion: dict[str, Any]) -> None:
    error = "cannot decode the body: unsupported Content-Encoding 'utf-8'"
    for body in (None, b"a partly decoded body"):
        assert one(assertion, observed(body, body_error=error)) == Outcome(
            False, one(assertion, observed(b"")).assertion, error
        )


@pytest.mark.parametrize("assertion", BODY_KINDS, ids=str)
def test_a_body_assertion_without_a_body_is_a_bug(assertion: dict[str, Any]) -> None:
    with pytest.raises(RuntimeError, match="needs the body"):
        one(assertion, observed(None))


def test_header_and_time_assertions_need_no_body() -> None:
    judge = Judge(
        ASSERTIONS.validate_python([hd("ETag", "exists"), {"type": "response_time", "below_ms": 10}])
    )
    assert not judge.needs_body and judge.header_names == frozenset({"etag"})
    seen = observed(None, headers={"etag": ('"1"',)}, elapsed_ms=5)
    assert [o.ok for o in judge.judge(seen)] == [True, True]


def test_judge_summary_and_order() -> None:
    models = ASSERTIONS.validate_python([hd("Server", "absent"), kw("ok"), hd("X-A", "exists")])
    judge = Judge(models)
    assert judge.needs_body and judge.header_names == {"server", "x-a"}
    outcomes = judge.judge(observed(b"ok", headers={"x-a": ("1",)}))
    assert [o.assertion for o in outcomes] == [
        "header Server absent",
        'keyword "ok" present',
        "header X-A present",
    ]
    assert Judge([]).judge(observed(None)) == [] and not Judge([]).needs_body


def test_messages_stay_short_whatever_the_target_sends() -> None:
    body = b"\x00\x1b[31m" + "\u202e".encode() + b"E" * 200_000
    models = ASSERTIONS.validate_python([kw("E", absent=True), rx("E+", absent=True), js("$", "exists"),
                                         hd("Server", "absent"), hd("Server", "==", "x")])  # fmt: skip
    for outcome in Judge(models).judge(observed(body, headers={"server": ("\r\n" + "s" * 10_000,)})):
        assert outcome.message is not None and len(outcome.message) < 200, outcome
        assert outcome.message.isprintable(), outcome
