"""What a check observed, as the assertions read it: the body decoded and parsed once.

Also the two pattern languages users write (regular expressions and RFC 9535 JSONPath),
compiled here so the models validate with exactly what the rules run, and bounded in time.
"""

from __future__ import annotations

import codecs
import json
import math
import re
import time
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import jsonpath
import regex
from jsonpath import function_extensions

from monitor.checks.wording import clip, size

REGEX_BUDGET_SECONDS = 0.1
# RFC 9110 token: the characters of a header name.
HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_CHARSET = re.compile(r';\s*charset\s*=\s*"?([^";\s]+)', re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Observed:
    status: int | None
    headers: Mapping[str, tuple[str, ...]]  # lower-case name -> values (those Judge.header_names asked for)
    body: bytes | None  # decoded body, at most body_cap bytes; None if not read
    body_truncated: bool  # the cap was reached: body holds the first body_cap bytes
    body_cap: int
    body_error: str | None  # e.g. "cannot decode the body: unsupported Content-Encoding 'utf-8'"
    elapsed_ms: float
    content_type: str | None  # for the charset (default utf-8, errors="replace")
    https: bool = False  # the final response came over TLS (HSTS counts only then)
    url: str = ""  # the final response's URL (a relative canonical resolves against it)
    site: Any = None  # an seo assertion's robots.txt and sitemap verdict (seo_site.SiteReport)


@dataclass(frozen=True, slots=True)
class Outcome:
    ok: bool
    assertion: str  # what was asserted, e.g. 'keyword "Welcome" present'
    message: str | None  # on failure, the cause a person can act on
    details: Mapping[str, Any] | None = None  # what the assertion found, for details.assertions


# -- regular expressions and JSONPath ----------------------------------------------------------


# Counted repeats are expanded when a pattern compiles: ((a{100}){100}){100} is 24 characters
# and 300 MB. A pattern may expand to this many items at most (by the estimate below; 10,000
# compiled in ~75 ms and 2.6 MB, 100,000 in a second and 30 MB).
MAX_REPEAT_WEIGHT = 20_000
_COUNTED = re.compile(r"\{(\d*)(?:,(\d*))?\}")


def repeat_weight(pattern: str) -> int:
    """An upper estimate of how many items ``pattern`` expands to when compiled: the items of
    a group add up, and a counted repeat ``{m,n}`` multiplies the item before it by its
    largest count. Escapes and character classes count as one item."""
    stack: list[int] = [0]  # the weight of each open group so far
    last = 0  # the weight of the item just ended (what a quantifier applies to)
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            i += 2
            last = 1
        elif ch == "[":
            close = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("]", "^") else i + 1)
            i = n if close < 0 else close + 1
            last = 1
        elif ch == "(":
            stack.append(0)
            i += 1
            last = 0
            continue
        elif ch == ")" and len(stack) > 1:
            last = max(stack.pop(), 1)
            i += 1
        elif ch == "{" and (counted := _COUNTED.match(pattern, i)):
            low, high = counted.group(1), counted.group(2)
            times = max(int(low or 0), int(high or 0)) if counted.group(2) is not None else int(low or 1)
            stack[-1] += last * (times - 1)  # the item counted once already
            last *= times
            i = counted.end()
            if stack[-1] > MAX_REPEAT_WEIGHT:
                return stack[-1]
            continue
        else:
            i += 1
            last = 1
        stack[-1] += last
    return max(sum(stack), 1)


def compile_regex(pattern: str) -> regex.Pattern[str]:
    weight = repeat_weight(pattern)
    if weight > MAX_REPEAT_WEIGHT:
        raise ValueError(
            f"not a valid regular expression: its counted repeats expand to over {MAX_REPEAT_WEIGHT} items"
        )
    try:
        return regex.compile(pattern)
    except regex.error as exc:
        raise ValueError(f"not a valid regular expression: {exc.msg} at position {exc.pos}") from None
    except RecursionError:
        raise ValueError("not a valid regular expression: nested too deeply") from None
    except (OverflowError, ValueError, TypeError) as exc:  # what the parser lets through
        raise ValueError(f"not a valid regular expression: {clip(str(exc), 80)}") from None
    except MemoryError:
        raise ValueError("not a valid regular expression: too large to compile") from None


# When the regular expressions of the JSONPath being evaluated must give up (monotonic).
REGEX_DEADLINE: ContextVar[float] = ContextVar("assertion_regex_deadline", default=math.inf)


def _time_left() -> float | None:
    deadline = REGEX_DEADLINE.get()
    if deadline == math.inf:
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("regex timed out")
    return left


class _BoundedMatch(function_extensions.Match):
    def __call__(self, value: object, pattern: object) -> bool:
        if not isinstance(value, str) or not isinstance(pattern, str):
            return False
        compiled = self.check_cache(pattern)
        return compiled is not None and compiled.fullmatch(value, timeout=_time_left()) is not None


class _BoundedSearch(function_extensions.Search):
    def __call__(self, value: object, pattern: object) -> bool:
        if not isinstance(value, str) or not isinstance(pattern, str):
            return False
        compiled = self.check_cache(pattern)
        return compiled is not None and compiled.search(value, timeout=_time_left()) is not None


class _JsonPathEnvironment(jsonpath.JSONPathEnvironment):
    """RFC 9535 (strict) JSONPath whose ``match()`` and ``search()`` keep to the budget."""

    def setup_function_extensions(self) -> None:
        super().setup_function_extensions()
        self.function_extensions["match"] = _BoundedMatch()
        self.function_extensions["search"] = _BoundedSearch()


JSONPATH = _JsonPathEnvironment(strict=True)


# The pattern argument of match() and search() in a filter, as a string literal.
_PATH_PATTERN = re.compile(r"""\b(?:match|search)\s*\(.*?,\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')""")


def compile_path(path: str) -> jsonpath.JSONPath | jsonpath.CompoundJSONPath:
    # The filter's patterns compile when the path first runs, in the scheduler: judge them now.
    for literal in _PATH_PATTERN.findall(path):
        if repeat_weight(literal[1:-1]) > MAX_REPEAT_WEIGHT:
            raise ValueError(
                f"not a valid JSONPath (RFC 9535): a pattern's counted repeats expand to over "
                f"{MAX_REPEAT_WEIGHT} items"
            )
    try:
        return JSONPATH.compile(path)
    except jsonpath.JSONPathError as exc:
        reason = str(exc.args[0]) if exc.args else "syntax error"
    except RecursionError:
        reason = "nested too deeply"
    except (OverflowError, ValueError, TypeError, IndexError, KeyError) as exc:  # the parser let it through
        reason = clip(str(exc), 80) or type(exc).__name__
    raise ValueError(f"not a valid JSONPath (RFC 9535): {reason}")


# -- the body ------------------------------------------------------------------------------


def charset_of(content_type: str | None) -> str:
    """The codec named by ``charset=``, if Python knows it as a text encoding; else utf-8."""
    found = _CHARSET.search(content_type) if content_type else None
    if found:
        try:
            info = codecs.lookup(found.group(1))
        except LookupError:
            return "utf-8"
        if getattr(info, "_is_text_encoding", True):
            return info.name
    return "utf-8"


class Body:
    """The body of one observation, decoded and parsed on first use, then shared."""

    __slots__ = ("_json", "_text", "cap", "charset", "data", "truncated")

    def __init__(self, observed: Observed) -> None:
        self.data = observed.body or b""
        self.truncated = observed.body_truncated
        self.cap = observed.body_cap
        self.charset = charset_of(observed.content_type)
        self._text: str | None = None
        self._json: tuple[Any, str | None] | None = None

    def text(self) -> str:
        if self._text is None:
            try:
                self._text = self.data.decode(self.charset, "replace")
            except (UnicodeError, LookupError, ValueError):  # a codec that refuses "replace"
                self._text = self.data.decode("utf-8", "replace")
        return self._text

    def byte_offset(self, index: int) -> int:
        """The byte offset of character ``index`` of ``text()`` (exact unless bytes were replaced)."""
        try:
            return len(self.text()[:index].encode(self.charset, "replace"))
        except (UnicodeError, LookupError, ValueError):
            return len(self.text()[:index].encode("utf-8", "replace"))

    def where(self) -> str:
        """Where a search looked: ``in the first 1 MiB`` or ``in the body (12.3 KiB)``."""
        if self.truncated:
            return f"in the first {size(self.cap)}"
        return f"in the body ({size(len(self.data))})"

    def json(self) -> tuple[Any, str | None]:
        """(the parsed body, None) or (None, why it is not JSON)."""
        if self._json is None:
            self._json = self._parse()
        return self._json

    def _parse(self) -> tuple[Any, str | None]:
        if not self.data.strip():
            return None, "the body is empty, not JSON"
        try:
            return json.loads(self.data), None
        except (ValueError, RecursionError) as exc:
            if self.truncated:
                return None, f"the body is not JSON: it was cut at {size(self.cap)} (max_body_bytes)"
            if isinstance(exc, json.JSONDecodeError):
                reason = f"{exc.msg} at line {exc.lineno} column {exc.colno}"
            elif isinstance(exc, UnicodeDecodeError):
                reason = f"not valid UTF-8 at byte {exc.start}"
            elif isinstance(exc, RecursionError):
                reason = "nested too deeply"
            else:
                reason = clip(str(exc), 80)
            return None, f"the body is not JSON: {reason}"
