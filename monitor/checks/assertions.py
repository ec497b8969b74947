"""Assertions on an HTTP answer: what "up" means for a monitor, beyond its status code.

Pure, no I/O. Each kind is a pydantic model that validates itself (the API's 422s come
from here) and is stored as its JSON dump in ``monitors.settings``. A :class:`Judge`
compiles a monitor's assertions once, when the monitor loads; ``judge()`` turns what one
check observed into one :class:`Outcome` per assertion, in order. All must hold for the
check to be up.

Body assertions (keyword, regex, json) need the body: the check reads it only when one of
them is present (``Judge.needs_body``), up to the monitor's cap, and they judge what was
read (a cut body says so in the message). The body is decoded once per judgement, with the
charset of its Content-Type (UTF-8 by default, undecodable bytes replaced), and parsed as
JSON at most once. When the check could not read or decode the body (``body_error``), every
body assertion fails with that cause: no assertion holds on a body nobody could read.

The security_headers assertion grades the head's security headers A+ to F
(``checks/security_headers.py``) and fails below the grade the monitor asks for; its outcome
carries every finding, up or down (``Outcome.details``). The seo assertion does the same with
its rules' findings (``checks/seo.py`` for the page, ``checks/seo_site.py`` for robots.txt and
the sitemap, which the check fetches beside the page through ``Judge.site``).

Regular expressions (regex, header ``matches``, and ``match()``/``search()`` inside JSONPath
filters) run on a time budget of ``REGEX_BUDGET_SECONDS`` per assertion: a pattern that
backtracks catastrophically fails its assertion instead of stalling the scheduler.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    MISSING,
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    TypeAdapter,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
)

from monitor.checks.judging import ORDERING, Rule, judge_all, rule_for
from monitor.checks.observed import (
    HEADER_NAME,
    REGEX_BUDGET_SECONDS,
    Observed,
    Outcome,
    compile_path,
    compile_regex,
)
from monitor.checks.security_headers import HEADER_NAMES as SECURITY_HEADER_NAMES
from monitor.checks.security_headers import Grade
from monitor.checks.seo import HEADER_NAMES as SEO_HEADER_NAMES
from monitor.checks.seo import normal_url
from monitor.checks.seo_site import SiteFiles
from monitor.checks.wording import clip, duration, json_value, pattern, printable, quote

TEXT_MAX = 1000
VALUE_JSON_MAX = 4096
VALUE_DEPTH_MAX = 20
MAX_RESPONSE_TIME_MS = 600_000


# -- validation helpers ------------------------------------------------------------------


def storable(text: str) -> str:
    """Refuse what a PostgreSQL jsonb string cannot hold (NUL, unpaired surrogates)."""
    if "\x00" in text:
        raise ValueError("may not contain NUL characters")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("may not contain unpaired surrogates") from None
    return text


Text = Annotated[str, Field(min_length=1, max_length=TEXT_MAX), AfterValidator(storable)]


def _check_json_value(value: Any, depth: int = 0) -> None:
    if depth > VALUE_DEPTH_MAX:
        raise ValueError(f"nested deeper than {VALUE_DEPTH_MAX} levels")
    if isinstance(value, str):
        storable(value)
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValueError("must be a finite number")
    elif isinstance(value, list):
        for item in value:
            _check_json_value(item, depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError("object keys must be strings")
            storable(key)
            _check_json_value(item, depth + 1)
    elif value is not None and not isinstance(value, bool | int | float):
        raise ValueError("must be a JSON value")


# -- the kinds ---------------------------------------------------------------------------


class _Assertion(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    needs_body: ClassVar[bool] = True

    def describe(self) -> str:
        """What is asserted, in a few words (an Outcome's `assertion`)."""
        raise NotImplementedError


class Keyword(_Assertion):
    """The body contains `keyword` (with `absent`: does not)."""

    type: Literal["keyword"]
    keyword: Text
    absent: StrictBool = False
    case_sensitive: StrictBool = True

    def describe(self) -> str:
        case = "" if self.case_sensitive else " (any case)"
        return f"keyword {quote(self.keyword)} {'absent' if self.absent else 'present'}{case}"


class Regex(_Assertion):
    """The body matches `pattern` (syntax of the `regex` package, like Python's `re`)."""

    type: Literal["regex"]
    pattern: Text
    absent: StrictBool = False

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        compile_regex(value)
        return value

    def describe(self) -> str:
        return f"body {'does not match' if self.absent else 'matches'} {pattern(self.pattern)}"


JsonOp = Literal["==", "!=", "<", "<=", ">", ">=", "contains", "exists", "not_exists", "empty", "not_empty"]
COMPARING = frozenset({"==", "!=", "<", "<=", ">", ">=", "contains"})
_TESTS = {
    "exists": "exists",
    "not_exists": "does not exist",
    "empty": "is empty",
    "not_empty": "is not empty",
}


class Json(_Assertion):
    """The first node `path` selects in the JSON body, compared by `op` with `value`."""

    type: Literal["json"]
    path: Text
    op: JsonOp
    value: Any = Field(MISSING, validate_default=True, description="any JSON; only with a comparing op")

    @field_validator("path")
    @classmethod
    def _compiles(cls, value: str) -> str:
        compile_path(value)
        return value

    @field_validator("value")
    @classmethod
    def _fits_op(cls, value: Any, info: ValidationInfo) -> Any:
        op = info.data.get("op")
        if op is None:
            return value
        if op not in COMPARING:
            if value is not MISSING:
                raise ValueError(f"not allowed with op {op!r}")
            return value
        if value is MISSING:
            raise ValueError(f"required with op {op!r}")
        _check_json_value(value)
        if len(json.dumps(value, ensure_ascii=False)) > VALUE_JSON_MAX:
            raise ValueError(f"longer than {VALUE_JSON_MAX} characters as JSON")
        if op in ORDERING and (isinstance(value, bool) or not isinstance(value, int | float | str)):
            raise ValueError(f"op {op!r} compares with a number or a string")
        return value

    def describe(self) -> str:
        path = printable(clip(self.path), quotes=False)
        if self.op in _TESTS:
            return f"{path} {_TESTS[self.op]}"
        return f"{path} {self.op} {json_value(self.value)}"


HeaderOp = Literal["exists", "absent", "==", "contains", "matches"]


class Header(_Assertion):
    """A response header (`name` in any case) is there, or absent, or has a value that is
    `==` (exactly), `contains` or `matches` (a regular expression) `value`. A header
    sent several times holds when any of its values does."""

    needs_body: ClassVar[bool] = False

    type: Literal["header"]
    name: Annotated[str, Field(min_length=1, max_length=256, pattern=HEADER_NAME.pattern)]
    op: HeaderOp
    value: Annotated[str, Field(max_length=TEXT_MAX), AfterValidator(storable)] | MISSING = Field(
        MISSING, validate_default=True, description="not with exists and absent"
    )

    @field_validator("value")
    @classmethod
    def _fits_op(cls, value: Any, info: ValidationInfo) -> Any:
        op = info.data.get("op")
        if op in ("exists", "absent"):
            if value is not MISSING:
                raise ValueError(f"not allowed with op {op!r}")
        elif op is not None:
            if value is MISSING:
                raise ValueError(f"required with op {op!r}")
            if op != "==" and not value:
                raise ValueError(f"may not be empty with op {op!r}")
            if op == "matches":
                compile_regex(value)
        return value

    def describe(self) -> str:
        name = printable(self.name)
        if self.op == "exists":
            return f"header {name} present"
        if self.op == "absent":
            return f"header {name} absent"
        shown = pattern if self.op == "matches" else quote
        return f"header {name} {self.op} {shown(str(self.value))}"


class ResponseTime(_Assertion):
    """The check took less than `below_ms` milliseconds: from name resolution to the end of
    what it read (the response head, or the body too when a body assertion reads it)."""

    needs_body: ClassVar[bool] = False

    type: Literal["response_time"]
    below_ms: Annotated[float, Field(gt=0, le=MAX_RESPONSE_TIME_MS, strict=True, allow_inf_nan=False)]

    def describe(self) -> str:
        return f"response time below {duration(self.below_ms)}"


class SecurityHeaders(_Assertion):
    """The response's security headers grade `min_grade` or better (A+, A, B, C, D, F; F
    never fails, it only reports). The grading table is in ``checks/security_headers.py``;
    each header's finding goes with the outcome, whatever the verdict."""

    needs_body: ClassVar[bool] = False

    type: Literal["security_headers"]
    # A pattern, not an enum, in the OpenAPI document: client generators name enum members
    # after their values, and A+ and A would both be A (openapi-python-client issue #788).
    min_grade: Annotated[Grade, WithJsonSchema({"type": "string", "pattern": r"^(A\+|[ABCDF])$"})] = Field(
        "B", description="the lowest grade that is up: A+, A, B, C, D or F"
    )

    def describe(self) -> str:
        return f"security headers grade {self.min_grade} or better"


def _absolute_url(value: str) -> str:
    storable(value)
    if normal_url(value) is None:
        raise ValueError("must be an absolute http:// or https:// URL")
    return value


SeoUrl = Annotated[str, Field(min_length=1, max_length=2048), AfterValidator(_absolute_url)]
# A robots.txt user-agent token (RFC 9309 2.2.1: letters, "_" and "-"), or "*" for every crawler.
UserAgent = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^(\*|[A-Za-z_-]+)$")]


def _default_agents() -> list[str]:
    return ["*", "Googlebot"]


class Seo(_Assertion):
    """The outages that cost search traffic while visitors see none, from the page and two
    files of its site: `noindex` in a robots meta tag or X-Robots-Tag; a `canonical` other than
    the one given; a `title` or `description` missing or empty; JSON-LD that does not parse;
    robots.txt disallowing the page for one of `user_agents`; the `sitemap` (`sitemap_url`, else
    robots.txt's, else /sitemap.xml) not answering with one. robots.txt and the sitemap are
    fetched again every `files_every_minutes` at most. Rules and costs in ``checks/seo.py`` and
    ``checks/seo_site.py``; each rule's finding goes with the outcome, whatever the verdict."""

    type: Literal["seo"]
    noindex: StrictBool = Field(True, description="down when the page says noindex (or none)")
    # MISSING rather than None: left out, they are left out of the stored form too (as a
    # header assertion's value), so a form sent back unchanged is no change.
    canonical: SeoUrl | MISSING = Field(MISSING, description="the canonical URL the page must declare")
    title: StrictBool = Field(True, description="a non-empty <title>")
    description: StrictBool = Field(False, description="a non-empty meta description")
    json_ld: StrictBool = Field(True, description="every JSON-LD block parses")
    robots_txt: StrictBool = Field(True, description="robots.txt allows the page for every user agent")
    user_agents: Annotated[list[UserAgent], Field(min_length=1, max_length=10)] = Field(
        default_factory=_default_agents, description="robots.txt user agents, * for any crawler"
    )
    sitemap: StrictBool = Field(False, description="the sitemap answers with XML")
    sitemap_url: SeoUrl | MISSING = Field(MISSING, description="the sitemap (implies sitemap)")
    files_every_minutes: Annotated[StrictInt, Field(ge=1, le=1440)] = Field(
        10, description="how often robots.txt and the sitemap are fetched again"
    )

    @property
    def site_files(self) -> bool:
        return self.robots_txt or self.sitemap or isinstance(self.sitemap_url, str)

    def describe(self) -> str:
        rules = [
            "noindex" if self.noindex else "",
            f"canonical {printable(clip(self.canonical), quotes=False)}"
            if isinstance(self.canonical, str)
            else "",
            "title" if self.title else "",
            "description" if self.description else "",
            "JSON-LD" if self.json_ld else "",
            "robots.txt" if self.robots_txt else "",
            "sitemap" if self.sitemap or isinstance(self.sitemap_url, str) else "",
        ]
        return f"SEO: {', '.join(r for r in rules if r) or 'no rule'}"


AnyAssertion = Keyword | Regex | Json | Header | ResponseTime | SecurityHeaders | Seo
Assertion = Annotated[AnyAssertion, Field(discriminator="type")]
ASSERTIONS: TypeAdapter[list[AnyAssertion]] = TypeAdapter(list[Assertion])


class Judge:
    """The compiled assertions of one monitor; built once when the monitor loads.

    ``judge()`` never raises on anything the target sent; it raises only when the check
    did not read a body that an assertion needs (``needs_body`` says when to read it).
    """

    __slots__ = ("_rules", "header_names", "needs_body", "parses_html", "site")

    def __init__(self, assertions: Sequence[AnyAssertion]) -> None:
        self._rules: tuple[Rule, ...] = tuple(rule_for(a) for a in assertions)
        self.needs_body: bool = any(a.needs_body for a in assertions)
        names = {a.name.lower() for a in assertions if isinstance(a, Header)}
        if any(isinstance(a, SecurityHeaders) for a in assertions):
            names |= SECURITY_HEADER_NAMES
        seo = next((a for a in assertions if isinstance(a, Seo)), None)
        self.parses_html: bool = seo is not None
        if seo is not None:
            names |= SEO_HEADER_NAMES
        self.header_names: frozenset[str] = frozenset(names)
        # The files of the site an seo assertion judges (fetched by the check, beside the page).
        self.site: SiteFiles | None = None
        if seo is not None and seo.site_files:
            self.site = SiteFiles(
                robots=seo.robots_txt,
                agents=seo.user_agents,
                sitemap=seo.sitemap,
                sitemap_url=seo.sitemap_url if isinstance(seo.sitemap_url, str) else None,
                every_seconds=seo.files_every_minutes * 60.0,
            )

    def judge(self, observed: Observed) -> list[Outcome]:
        return judge_all(self._rules, observed, needs_body=self.needs_body)


__all__ = [
    "ASSERTIONS",
    "REGEX_BUDGET_SECONDS",
    "Assertion",
    "Header",
    "Json",
    "Judge",
    "Keyword",
    "Observed",
    "Outcome",
    "Regex",
    "ResponseTime",
    "SecurityHeaders",
    "Seo",
]
