"""An http monitor's own fields, as the API validates them: its ``HttpCheck.Settings``.

The fields sit flat beside the common ones of every monitor: ``url`` (kept in ``monitors.url``,
the target every type has), ``expected_status``, ``follow_redirects``, and the request options
method, headers, body, content_type, auth, max_body_bytes, tls_verify and assertions. How they
are stored (secrets apart) and read back (secrets masked) is ``http_stored.py``; what the check
makes of them at run time is ``HttpOptions`` in ``http.py``.

Limits that are the operator's (the largest body cap, whether tls_verify may be false) come in
through pydantic's validation context, so one model serves every deployment. No error message
quotes the value of a field that may hold a secret.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StringConstraints,
    ValidationInfo,
    field_validator,
)

from monitor.checks.assertions import Assertion, storable
from monitor.checks.observed import HEADER_NAME
from monitor.checks.wording import quote
from monitor.net.policy import InvalidTarget, parse_target_url
from monitor.net.target import FRAMING_HEADERS  # the check frames the request itself; a monitor may not
from monitor.secrets import MASK

Method = Literal["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
DEFAULT_MAX_BODY_BYTES = 1_048_576
# Of the URL as stored (normalised: non-ASCII characters percent-encoded, the host in IDNA),
# which is what a client reads back and may send again in a PATCH.
MAX_URL_LENGTH = 2048
# What "up" is without expected_status: any status from 200 to 399, stored as its ranges.
DEFAULT_STATUSES: list[list[int]] = [[200, 399]]
# settings.http_max_body_bytes, when the validation context does not say.
DEFAULT_HTTP_MAX_BODY_BYTES = 10 * 1_048_576
MAX_HEADERS = 50
MAX_HEADER_VALUE_BYTES = 8 * 1024
MAX_REQUEST_BODY_BYTES = 16 * 1024
MAX_ASSERTIONS = 20
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # every control character but HTAB
_MEDIA_TYPE = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+/[!#$%&'*+.^_`|~0-9A-Za-z-]+(\s*;[^\x00-\x1f\x7f]*)?$")
_BODYLESS = ("GET", "HEAD")
_STATUS_RANGE = re.compile(r"^([1-5])xx$|^(\d{3})(?:-(\d{3}))?$")


def _header_text(value: str) -> str:
    """A value that can go into a request header: no control characters (HTAB allowed)."""
    if _CONTROL.search(value):
        raise ValueError("may not contain CR, LF, NUL or other control characters")
    return storable(value)


HeaderText = Annotated[str, StringConstraints(strip_whitespace=False), Field(max_length=4096)]


class BasicAuth(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["basic"]
    username: Annotated[HeaderText, Field(max_length=256)]
    password: HeaderText

    @field_validator("username")
    @classmethod
    def _username(cls, value: str) -> str:
        if ":" in value:
            raise ValueError("may not contain ':' (RFC 7617)")
        return _header_text(value)

    @field_validator("password")
    @classmethod
    def _password(cls, value: str) -> str:
        return _header_text(value)


class BearerAuth(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["bearer"]
    token: Annotated[HeaderText, Field(min_length=1)]

    @field_validator("token")
    @classmethod
    def _token(cls, value: str) -> str:
        return _header_text(value)


Auth = Annotated[BasicAuth | BearerAuth, Field(discriminator="type")]


# -- each field on its own: checked in every body that has it, a PATCH's too ----------------


def _headers(value: dict[str, str]) -> dict[str, str]:
    seen: set[str] = set()
    for name, text in value.items():
        key = name.lower()
        if len(name) > 256 or not HEADER_NAME.match(name):
            raise ValueError(f"{quote(name)} is not a header name (letters, digits and !#$%&'*+-.^_`|~)")
        if key in FRAMING_HEADERS:
            raise ValueError(f"{name} is set by the check itself and may not be given")
        if key in seen:
            raise ValueError(f"{name} is given twice (header names are case-insensitive)")
        seen.add(key)
        try:
            _header_text(text)
        except ValueError as exc:
            raise ValueError(f"the value of {name} {exc}") from None
        if len(text.encode()) > MAX_HEADER_VALUE_BYTES:
            raise ValueError(f"the value of {name} is longer than {MAX_HEADER_VALUE_BYTES} bytes")
    return value


def _body(value: str) -> str:
    storable(value)
    if len(value.encode()) > MAX_REQUEST_BODY_BYTES:
        raise ValueError(f"longer than {MAX_REQUEST_BODY_BYTES} bytes (UTF-8)")
    return value


def _media_type(value: str) -> str:
    if not _MEDIA_TYPE.match(value):
        raise ValueError("must be a media type like 'application/json' (parameters after ';')")
    return value


def _max_body_bytes(value: int, info: ValidationInfo) -> int:
    limit = int((info.context or {}).get("http_max_body_bytes", DEFAULT_HTTP_MAX_BODY_BYTES))
    if value > limit:
        raise ValueError(f"must be between 1 and {limit} (the operator's MONITOR_HTTP_MAX_BODY_BYTES)")
    return value


def _tls_verify(value: bool, info: ValidationInfo) -> bool:
    if value is False and not (info.context or {}).get("allow_insecure_tls", False):
        raise ValueError("may be false only where the operator sets MONITOR_ALLOW_INSECURE_TLS=true")
    return value


def _assertions(value: list[Any]) -> list[Any]:
    if sum(a.type == "security_headers" for a in value) > 1:
        # Two grades of the same headers: the stricter is the only one that can fail.
        raise ValueError("at most one security_headers assertion (one min_grade)")
    if sum(a.type == "seo" for a in value) > 1:
        # One set of rules per page: a second would fetch robots.txt and the sitemap again.
        raise ValueError("at most one seo assertion (its rules are fields of the one)")
    return value


def _url(value: str) -> str:
    try:
        stored = str(parse_target_url(value))
    except InvalidTarget as exc:
        raise ValueError(str(exc)) from None
    if len(stored) > MAX_URL_LENGTH:
        raise ValueError(
            f"longer than {MAX_URL_LENGTH} characters as stored ({len(stored)} once normalised: "
            "non-ASCII characters percent-encoded, the host in IDNA)"
        )
    return stored


def _statuses(value: list[int | str]) -> list[int | str]:
    return render_status_ranges(parse_status_ranges(value))


_HEADERS_DOC = (
    "request headers, name -> value; the values of sensitive headers (Authorization, Cookie, names "
    f"with token, key, secret, auth, session, password) are secrets and read back as {MASK!r}"
)
_URL_DOC = (
    "http:// or https://, no credentials (those go in auth); at most "
    f"{MAX_URL_LENGTH} characters as stored, non-ASCII characters percent-encoded"
)
Headers = Annotated[
    dict[str, str], Field(max_length=MAX_HEADERS, description=_HEADERS_DOC), AfterValidator(_headers)
]
RequestBody = Annotated[
    str,
    StringConstraints(strip_whitespace=False),
    Field(max_length=MAX_REQUEST_BODY_BYTES, description="the request body (not with GET or HEAD)"),
    AfterValidator(_body),
]
ContentType = Annotated[
    str,
    Field(max_length=256, description="the body's media type (only with a body)"),
    AfterValidator(_media_type),
]
MaxBodyBytes = Annotated[
    StrictInt,
    Field(ge=1, description="how much of the body the assertions read (the rest is not fetched)"),
    AfterValidator(_max_body_bytes),
]
TlsVerify = Annotated[
    StrictBool,
    Field(description="false: do not check the certificate (if the operator allows)"),
    AfterValidator(_tls_verify),
]
Assertions = Annotated[
    list[Assertion],
    Field(max_length=MAX_ASSERTIONS, description="all must hold for the check to be up"),
    AfterValidator(_assertions),
]
Url = Annotated[
    str, Field(min_length=1, max_length=MAX_URL_LENGTH, description=_URL_DOC), AfterValidator(_url)
]
Statuses = Annotated[list[StrictInt | str], Field(max_length=20), AfterValidator(_statuses)]


# -- the fields together: on a create, and on a PATCH's fields merged with the stored ones ----


class RequestOptions(BaseModel):
    """What to send and how to judge the answer beyond its status. Rules between fields (a body
    needs a method that sends one) hold on the options whole: a PATCH's fields are merged with
    the stored ones and validated again."""

    model_config = ConfigDict(extra="forbid")

    method: Method = "GET"
    headers: Headers = Field(default_factory=dict)
    body: RequestBody | None = None
    content_type: ContentType | None = None
    auth: Auth | None = None
    max_body_bytes: MaxBodyBytes = DEFAULT_MAX_BODY_BYTES
    tls_verify: TlsVerify = True
    assertions: Assertions = Field(default_factory=list)

    @field_validator("body")
    @classmethod
    def _body_needs_a_method(cls, value: str | None, info: ValidationInfo) -> str | None:
        method = info.data.get("method")
        if value is not None and method in _BODYLESS:
            raise ValueError(f"a {method} request has no body: set method (POST, PUT, ...) or leave body out")
        return value

    @field_validator("content_type")
    @classmethod
    def _content_type_of_the_body(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        if info.data.get("body") is None:
            raise ValueError("only with a body")
        if any(name.lower() == "content-type" for name in info.data.get("headers") or {}):
            raise ValueError("headers already set Content-Type; give one or the other")
        return value

    @field_validator("auth")
    @classmethod
    def _auth_or_a_header(cls, value: BasicAuth | BearerAuth | None, info: ValidationInfo) -> Any:
        if value is not None and any(
            name.lower() == "authorization" for name in info.data.get("headers") or {}
        ):
            raise ValueError("headers already set Authorization; give one or the other")
        return value

    @field_validator("assertions")
    @classmethod
    def _a_body_to_judge(cls, value: list[Any], info: ValidationInfo) -> list[Any]:
        if value and info.data.get("method") == "HEAD":
            reading = next((a for a in value if a.needs_body), None)
            if reading is not None:
                # Judged on the empty body of a HEAD answer, a keyword check would be always
                # down and an "absent" one always up.
                raise ValueError(f"a HEAD answer has no body for a {reading.type} assertion: use GET")
        return value


def _default_expected() -> list[int | str]:
    return ["200-399"]


class HttpSettings(RequestOptions):
    """An http monitor: its URL, the statuses that count as up, whether it follows redirects,
    and (``RequestOptions``) the request and what "up" means beyond the status. ``type`` may be
    left out: http is the default."""

    url: Url
    expected_status: Statuses = Field(default_factory=_default_expected)
    follow_redirects: StrictBool = False


def parse_status_ranges(items: list[int | str]) -> list[list[int]]:
    """``[200, "300-308", "4xx"]`` -> ``[[200, 200], [300, 308], [400, 499]]``."""
    if not items:
        raise ValueError("must list at least one status code or range")
    ranges: list[list[int]] = []
    for item in items:
        if isinstance(item, bool):
            raise ValueError("must be status codes (100-599) or ranges like '200-399' or '2xx'")
        if isinstance(item, int):
            low = high = item
        else:
            match = _STATUS_RANGE.match(item.strip())
            if not match:
                raise ValueError(f"{item!r} is not a status code, 'low-high' range or 'Nxx' class")
            if match.group(1):
                low, high = int(match.group(1)) * 100, int(match.group(1)) * 100 + 99
            else:
                low = int(match.group(2))
                high = int(match.group(3) or low)
        if not (100 <= low <= high <= 599):
            raise ValueError(f"{item!r} is outside 100-599 or its range is reversed")
        ranges.append([low, high])
    return ranges


def render_status_ranges(ranges: list[list[int]]) -> list[int | str]:
    return [low if low == high else f"{low}-{high}" for low, high in ranges]
