"""The compiled form of each assertion kind: one ``Rule`` per assertion, made once from
its model when the monitor loads, called at every check.

``monitor.checks.assertions`` is the public side (models, ``Judge``). Messages quote
target text only through ``monitor.checks.wording``.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import jsonpath
import regex

from monitor.checks import security_headers, seo
from monitor.checks.observed import (
    REGEX_BUDGET_SECONDS,
    REGEX_DEADLINE,
    Body,
    Observed,
    Outcome,
    compile_path,
    compile_regex,
)
from monitor.checks.wording import clip, durations, json_type, json_value, pattern, printable, quote

if TYPE_CHECKING:
    from monitor.checks.assertions import (
        AnyAssertion,
        Header,
        Json,
        Keyword,
        Regex,
        ResponseTime,
        SecurityHeaders,
        Seo,
    )

ORDERING: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}

# -- rules ---------------------------------------------------------------------------------


class Rule:
    """One compiled assertion: ``rule(observed, body)`` -> its Outcome."""

    __slots__ = ("assertion", "passed")

    def __init__(self, model: AnyAssertion) -> None:
        self.assertion = model.describe()
        self.passed = Outcome(True, self.assertion, None)

    def fail(self, message: str) -> Outcome:
        return Outcome(False, self.assertion, message)

    def __call__(self, observed: Observed, body: Body | None) -> Outcome:
        raise NotImplementedError


class _BodyRule(Rule):
    __slots__ = ()

    def __call__(self, observed: Observed, body: Body | None) -> Outcome:
        if observed.body_error is not None:
            return self.fail(observed.body_error)
        if observed.body is None or body is None:
            raise RuntimeError(f"{self.assertion}: needs the body, which the check did not read")
        return self.check(body)

    def check(self, body: Body) -> Outcome:
        raise NotImplementedError


class _KeywordRule(_BodyRule):
    __slots__ = ("absent", "encoded", "folded", "keyword", "shown")

    def __init__(self, model: Keyword) -> None:
        super().__init__(model)
        self.keyword = model.keyword
        self.absent = model.absent
        self.shown = quote(model.keyword)
        # Case-sensitive in a UTF-8 body: search the bytes, no decoding needed.
        self.encoded = model.keyword.encode() if model.case_sensitive else None
        self.folded = None if model.case_sensitive else regex.compile(regex.escape(model.keyword), regex.I)

    def check(self, body: Body) -> Outcome:
        if self.encoded is not None and body.charset == "utf-8":
            at = body.data.find(self.encoded)
        else:
            if self.folded is not None:
                found = self.folded.search(body.text())
                index = found.start() if found else -1
            else:
                index = body.text().find(self.keyword)
            at = body.byte_offset(index) if index >= 0 else -1
        if (at >= 0) != self.absent:
            return self.passed
        if self.absent:
            return self.fail(f"keyword {self.shown} found at byte {at}")
        return self.fail(f"keyword {self.shown} not found {body.where()}")


class _RegexRule(_BodyRule):
    __slots__ = ("absent", "pattern", "shown")

    def __init__(self, model: Regex) -> None:
        super().__init__(model)
        self.pattern = compile_regex(model.pattern)
        self.absent = model.absent
        self.shown = pattern(model.pattern)

    def check(self, body: Body) -> Outcome:
        try:
            found = self.pattern.search(body.text(), timeout=REGEX_BUDGET_SECONDS)
        except TimeoutError:
            return self.fail(f"pattern {self.shown} took too long (over {REGEX_BUDGET_SECONDS:g} s)")
        if (found is not None) != self.absent:
            return self.passed
        if found is not None:
            at = body.byte_offset(found.start())
            return self.fail(f"pattern {self.shown} matched {quote(found.group())} at byte {at}")
        return self.fail(f"pattern {self.shown} not found {body.where()}")


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values: ``true`` is not ``1``, ``1`` is ``1.0``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _items(value: Any) -> str:
    if isinstance(value, list):
        return f" ({len(value)} items)"
    if isinstance(value, dict):
        return f" ({len(value)} keys)"
    return ""


class _JsonRule(_BodyRule):
    __slots__ = ("op", "path", "shown", "value")

    def __init__(self, model: Json) -> None:
        super().__init__(model)
        self.path = compile_path(model.path)
        self.op = model.op
        self.value = model.value
        self.shown = printable(clip(model.path), quotes=False)

    def check(self, body: Body) -> Outcome:
        parsed, error = body.json()
        if error is not None:
            return self.fail(error)
        token = REGEX_DEADLINE.set(time.monotonic() + REGEX_BUDGET_SECONDS)
        try:
            match = self.path.match(parsed)
        except TimeoutError:
            return self.fail(f"{self.shown}: a pattern in the path took too long")
        except (
            jsonpath.JSONPathError,
            RecursionError,
            ArithmeticError,
            ValueError,
            TypeError,
            LookupError,
        ) as exc:
            # Whatever the body makes the library trip on is this assertion's failure, never the check's.
            reason = str(exc.args[0]) if exc.args else type(exc).__name__
            return self.fail(f"{self.shown}: {clip(reason, 80)}")
        finally:
            REGEX_DEADLINE.reset(token)
        if match is None:
            return self.passed if self.op == "not_exists" else self.fail(f"{self.shown}: no match")
        problem = self.compare(match.obj)
        return self.passed if problem is None else self.fail(problem)

    def compare(self, found: Any) -> str | None:
        """None when ``found`` satisfies the op, else what is wrong."""
        op, want, path = self.op, self.value, self.shown
        is_ = f"{path} is {json_value(found)}"
        if op == "exists":
            return None
        if op == "not_exists":
            return f"{is_}, expected no match"
        if op in ("empty", "not_empty"):
            if not isinstance(found, str | list | dict):
                kind = "an empty" if op == "empty" else "a non-empty"
                return f"{is_} ({json_type(found)}), expected {kind} string, array or object"
            if (len(found) == 0) == (op == "empty"):
                return None
            return f"{is_}{_items(found)}, expected {'empty' if op == 'empty' else 'not empty'}"
        if op in ("==", "!="):
            if json_equal(found, want) == (op == "=="):
                return None
            if op == "!=":
                return f"{is_}, expected != {json_value(want)}"
            if json_type(found) != json_type(want):
                return f"{is_} ({json_type(found)}), expected {json_value(want)} ({json_type(want)})"
            return f"{is_}, expected {json_value(want)}"
        if op == "contains":
            return self._contains(found, want, is_)
        if not ((_number(found) and _number(want)) or (isinstance(found, str) and isinstance(want, str))):
            return f"{is_} ({json_type(found)}), expected {op} {json_value(want)} ({json_type(want)})"
        return None if ORDERING[op](found, want) else f"{is_}, expected {op} {json_value(want)}"

    @staticmethod
    def _contains(found: Any, want: Any, is_: str) -> str | None:
        if isinstance(found, list):
            if any(json_equal(item, want) for item in found):
                return None
            return f"{is_}{_items(found)}, expected to contain {json_value(want)}"
        if isinstance(found, str | dict) and not isinstance(want, str):
            return f"{is_} ({json_type(found)}), which can contain only a string, not {json_type(want)}"
        if isinstance(found, str):
            return None if want in found else f"{is_}, expected to contain {json_value(want)}"
        if isinstance(found, dict):
            return None if want in found else f"{is_}{_items(found)}, expected a key {json_value(want)}"
        return f"{is_} ({json_type(found)}), expected a string, an array or an object"


class _HeaderRule(Rule):
    __slots__ = ("key", "name", "op", "pattern", "value")

    def __init__(self, model: Header) -> None:
        super().__init__(model)
        self.key = model.name.lower()
        self.name = printable(model.name)
        self.op = model.op
        self.value = model.value if isinstance(model.value, str) else ""
        self.pattern = compile_regex(self.value) if model.op == "matches" else None

    def __call__(self, observed: Observed, body: Body | None) -> Outcome:
        values = observed.headers.get(self.key, ())
        if self.op == "absent":
            if not values:
                return self.passed
            return self.fail(f"header {self.name} is present: {quote(values[0])}{_more(values)}")
        if not values:
            return self.fail(f"header {self.name} is missing")
        if self.op == "exists":
            return self.passed
        if self.op == "==":
            hit = self.value in values
        elif self.op == "contains":
            hit = any(self.value in v for v in values)
        else:
            try:
                hit = self._matches(values)
            except TimeoutError:
                return self.fail(f"header {self.name}: pattern {pattern(self.value)} took too long")
        if hit:
            return self.passed
        expected = {"==": "expected", "contains": "expected to contain", "matches": "expected to match"}
        shown = f"{quote(values[0])}{_more(values)}"
        wanted = pattern(self.value) if self.op == "matches" else quote(self.value)
        return self.fail(f"header {self.name} is {shown}, {expected[self.op]} {wanted}")

    def _matches(self, values: Sequence[str]) -> bool:
        assert self.pattern is not None
        deadline = time.monotonic() + REGEX_BUDGET_SECONDS
        for value in values:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("regex timed out")
            if self.pattern.search(value, timeout=left) is not None:
                return True
        return False


def _more(values: Sequence[str]) -> str:
    return "" if len(values) < 2 else f" (and {len(values) - 1} more)"


class _ResponseTimeRule(Rule):
    __slots__ = ("below_ms",)

    def __init__(self, model: ResponseTime) -> None:
        super().__init__(model)
        self.below_ms = model.below_ms

    def __call__(self, observed: Observed, body: Body | None) -> Outcome:
        if observed.elapsed_ms < self.below_ms:
            return self.passed
        took, bound = durations(observed.elapsed_ms, self.below_ms)
        sign = ">" if observed.elapsed_ms > self.below_ms else ">="
        return self.fail(f"response time {took} {sign} {bound}")


class _SecurityHeadersRule(Rule):
    __slots__ = ("min_grade",)

    def __init__(self, model: SecurityHeaders) -> None:
        super().__init__(model)
        self.min_grade = model.min_grade

    def __call__(self, observed: Observed, body: Body | None) -> Outcome:
        report = security_headers.grade(observed.headers, https=observed.https)
        details = {"security_headers": report.as_json()}
        if security_headers.at_least(report.grade, self.min_grade):
            return Outcome(True, self.assertion, None, details)
        problems = "; ".join(report.problems())
        message = f"security headers grade {report.grade} is below {self.min_grade}: {problems}"
        return Outcome(False, self.assertion, message, details)


class _SeoRule(_BodyRule):
    __slots__ = ("page",)

    def __init__(self, model: Seo) -> None:
        super().__init__(model)
        self.page = seo.PageRules(
            noindex=model.noindex,
            canonical=model.canonical if isinstance(model.canonical, str) else None,
            title=model.title,
            description=model.description,
            json_ld=model.json_ld,
        )

    def __call__(self, observed: Observed, body: Body | None) -> Outcome:
        if observed.body_error is not None:
            return self.fail(observed.body_error)
        if body is None:
            raise RuntimeError(f"{self.assertion}: needs the body, which the check did not read")
        findings = seo.judge_page(
            self.page,
            text=body.text(),
            headers=observed.headers,
            url=observed.url,
            content_type=observed.content_type,
            truncated_at=body.cap if body.truncated else None,
        )
        site = observed.site
        if site is not None:
            findings += site.findings
        report: dict[str, Any] = {"findings": [f.as_json() for f in findings]}
        if site is not None:
            report["files_checked_at"] = site.checked_at.isoformat().replace("+00:00", "Z")
        details = {"seo": report}
        failed = [f.message for f in findings if not f.ok]
        if not failed:
            return Outcome(True, self.assertion, None, details)
        return Outcome(False, self.assertion, "; ".join(failed), details)


RULES: dict[str, Callable[[Any], Rule]] = {
    "keyword": _KeywordRule,
    "regex": _RegexRule,
    "json": _JsonRule,
    "header": _HeaderRule,
    "response_time": _ResponseTimeRule,
    "security_headers": _SecurityHeadersRule,
    "seo": _SeoRule,
}


def rule_for(model: AnyAssertion) -> Rule:
    return RULES[model.type](model)


def judge_all(rules: Sequence[Rule], observed: Observed, *, needs_body: bool) -> list[Outcome]:
    body = Body(observed) if needs_body and observed.body_error is None else None
    return [rule(observed, body) for rule in rules]
