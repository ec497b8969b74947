"""An HTTP monitor's request options in the API: what is valid, how it is stored, how it reads.

The fields sit flat beside ``url``: method, headers, body, content_type, auth,
max_body_bytes, tls_verify, assertions. They are stored split in two (formats in
sql/006_http_options.sql): the parts that are not secret in ``monitors.settings``, defaults
left out so a plain monitor stays ``{}``; the credentials (auth, and the values of headers
whose names look sensitive, :func:`is_secret_header`) in one ``monitor_secrets`` row, absent
when there are none.

Reads never fetch a secret: ``SECRET_VIEW`` gives auth's type and username and the names of
the secret headers, and each secret shows as ``MASK``. A PATCH that sends ``MASK`` back where
a secret is stored keeps that secret, so a client can read a monitor, change one field and
send the whole of it back. No error message quotes a value of these fields.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StringConstraints,
    ValidationInfo,
    field_validator,
)

from monitor.api.errors import ApiError
from monitor.checks.assertions import Assertion, storable
from monitor.checks.http import DEFAULT_MAX_BODY_BYTES
from monitor.checks.observed import HEADER_NAME
from monitor.checks.wording import quote
from monitor.net.target import FRAMING_HEADERS  # the check frames the request itself; a monitor may not
from monitor.secrets import MASK

Method = Literal["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
# settings.http_max_body_bytes, when the validation context does not say.
DEFAULT_HTTP_MAX_BODY_BYTES = 10 * 1_048_576
MAX_HEADERS = 50
MAX_HEADER_VALUE_BYTES = 8 * 1024
MAX_REQUEST_BODY_BYTES = 16 * 1024
MAX_ASSERTIONS = 20
# Headers whose values are credentials: these names, and names with one of the parts in them.
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})
SECRET_NAME_PARTS = (
    "token",
    "secret",
    "password",
    "passwd",
    "api-key",
    "apikey",
    "api_key",
    "auth",
    "session",
    "key",
)
FIELDS = ("method", "headers", "body", "content_type", "auth", "max_body_bytes", "tls_verify", "assertions")
DEFAULTS: dict[str, Any] = {
    "method": "GET",
    "headers": {},
    "body": None,
    "content_type": None,
    "auth": None,
    "max_body_bytes": DEFAULT_MAX_BODY_BYTES,
    "tls_verify": True,
    "assertions": [],
}
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # every control character but HTAB
_MEDIA_TYPE = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+/[!#$%&'*+.^_`|~0-9A-Za-z-]+(\s*;[^\x00-\x1f\x7f]*)?$")
_BODYLESS = ("GET", "HEAD")

# A read's view of the secrets: no secret value leaves the database.
SECRET_VIEW = """(SELECT jsonb_build_object(
        'auth', (x.secrets -> 'auth') - 'password' - 'token',
        'header_names', coalesce(
            (SELECT jsonb_agg(h -> 0) FROM jsonb_array_elements(x.secrets -> 'headers') h), '[]'::jsonb))
    FROM monitor_secrets x WHERE x.monitor_id = m.id) AS secret_view"""


def is_secret_header(name: str) -> bool:
    key = name.lower()
    return key in SECRET_HEADERS or any(part in key for part in SECRET_NAME_PARTS)


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
_HEADERS_DOC = (
    "request headers, name -> value; the values of sensitive headers (Authorization, Cookie, names "
    f"with token, key, secret, auth, session, password) are secrets and read back as {MASK!r}"
)
Headers = Annotated[dict[str, str], Field(max_length=MAX_HEADERS, description=_HEADERS_DOC)]
RequestBody = Annotated[
    str,
    StringConstraints(strip_whitespace=False),
    Field(max_length=MAX_REQUEST_BODY_BYTES, description="the request body (not with GET or HEAD)"),
]
ContentType = Annotated[str, Field(max_length=256, description="the body's media type (only with a body)")]
MaxBodyBytes = Annotated[
    StrictInt, Field(ge=1, description="how much of the body the assertions read (the rest is not fetched)")
]
TlsVerify = Annotated[
    StrictBool, Field(description="false: do not check the certificate (if the operator allows)")
]
Assertions = Annotated[
    list[Assertion], Field(max_length=MAX_ASSERTIONS, description="all must hold for the check to be up")
]


class HttpChecks(BaseModel):
    """The validators of the fields above, for every model that has them (``check_fields``
    off, as a PATCH model has them optional). Rules between fields (a body needs a method
    that sends one) run when ``whole`` is true: on a create, and on the stored options a
    PATCH changed; not on the PATCH alone."""

    whole: ClassVar[bool] = True

    @field_validator("headers", check_fields=False)
    @classmethod
    def _headers(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        seen: set[str] = set()
        for name, text in (value or {}).items():
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

    @field_validator("body", check_fields=False)
    @classmethod
    def _body(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        storable(value)
        if len(value.encode()) > MAX_REQUEST_BODY_BYTES:
            raise ValueError(f"longer than {MAX_REQUEST_BODY_BYTES} bytes (UTF-8)")
        method = info.data.get("method")
        if cls.whole and method in _BODYLESS:
            raise ValueError(f"a {method} request has no body: set method (POST, PUT, ...) or leave body out")
        return value

    @field_validator("content_type", check_fields=False)
    @classmethod
    def _content_type(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        if not _MEDIA_TYPE.match(value):
            raise ValueError("must be a media type like 'application/json' (parameters after ';')")
        if cls.whole:
            if info.data.get("body") is None:
                raise ValueError("only with a body")
            if any(name.lower() == "content-type" for name in info.data.get("headers") or {}):
                raise ValueError("headers already set Content-Type; give one or the other")
        return value

    @field_validator("auth", check_fields=False)
    @classmethod
    def _auth(cls, value: BasicAuth | BearerAuth | None, info: ValidationInfo) -> Any:
        if value is not None and cls.whole:
            if any(name.lower() == "authorization" for name in info.data.get("headers") or {}):
                raise ValueError("headers already set Authorization; give one or the other")
        return value

    @field_validator("max_body_bytes", check_fields=False)
    @classmethod
    def _max_body_bytes(cls, value: int | None, info: ValidationInfo) -> int | None:
        limit = int((info.context or {}).get("http_max_body_bytes", DEFAULT_HTTP_MAX_BODY_BYTES))
        if value is not None and value > limit:
            raise ValueError(f"must be between 1 and {limit} (the operator's MONITOR_HTTP_MAX_BODY_BYTES)")
        return value

    @field_validator("assertions", check_fields=False)
    @classmethod
    def _assertions(cls, value: list[Any] | None, info: ValidationInfo) -> list[Any] | None:
        if value and sum(a.type == "security_headers" for a in value) > 1:
            # Two grades of the same headers: the stricter is the only one that can fail.
            raise ValueError("at most one security_headers assertion (one min_grade)")
        if value and cls.whole and info.data.get("method") == "HEAD":
            reading = next((a for a in value if a.needs_body), None)
            if reading is not None:
                # Judged on the empty body of a HEAD answer, a keyword check would be always
                # down and an "absent" one always up.
                raise ValueError(f"a HEAD answer has no body for a {reading.type} assertion: use GET")
        return value

    @field_validator("tls_verify", check_fields=False)
    @classmethod
    def _tls_verify(cls, value: bool | None, info: ValidationInfo) -> bool | None:
        if value is False and not (info.context or {}).get("allow_insecure_tls", False):
            raise ValueError("may be false only where the operator sets MONITOR_ALLOW_INSECURE_TLS=true")
        return value


class RequestOptions(HttpChecks):
    """The options whole, as stored after a change; validated again on every PATCH of them."""

    model_config = ConfigDict(extra="forbid")

    method: Method = "GET"
    headers: Headers = Field(default_factory=dict)
    body: RequestBody | None = None
    content_type: ContentType | None = None
    auth: Auth | None = None
    max_body_bytes: MaxBodyBytes = DEFAULT_MAX_BODY_BYTES
    tls_verify: TlsVerify = True
    assertions: Assertions = Field(default_factory=list)


# -- stored form ---------------------------------------------------------------------------


def to_stored(options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(``monitors.settings``, ``monitor_secrets.secrets`` or None) of validated options,
    given as plain JSON (``model_dump(mode="json")``)."""
    settings: dict[str, Any] = {}
    secrets: dict[str, Any] = {}
    for name in ("method", "body", "content_type", "max_body_bytes", "tls_verify", "assertions"):
        value = options.get(name, DEFAULTS[name])
        if value != DEFAULTS[name]:
            settings[name] = value
    public = [[n, v] for n, v in (options.get("headers") or {}).items() if not is_secret_header(n)]
    hidden = [[n, v] for n, v in (options.get("headers") or {}).items() if is_secret_header(n)]
    if public:
        settings["headers"] = public
    if hidden:
        secrets["headers"] = hidden
    if options.get("auth"):
        secrets["auth"] = dict(options["auth"])
    return settings, secrets or None


def from_stored(settings: Mapping[str, Any] | None, secrets: Mapping[str, Any] | None) -> dict[str, Any]:
    """The options whole (secrets included) of their stored form: what a PATCH changes."""
    settings, secrets = settings or {}, secrets or {}
    found = {name: settings.get(name, DEFAULTS[name]) for name in FIELDS}
    found["headers"] = {
        str(n): str(v) for n, v in [*settings.get("headers", ()), *secrets.get("headers", ())]
    }
    found["auth"] = secrets.get("auth")
    return found


def render(settings: Mapping[str, Any] | None, view: Mapping[str, Any] | None) -> dict[str, Any]:
    """The options as the API shows them: every field, each secret as ``MASK``."""
    settings, view = settings or {}, view or {}
    shown = {name: settings.get(name, DEFAULTS[name]) for name in FIELDS}
    shown["headers"] = {str(n): str(v) for n, v in settings.get("headers", ())}
    shown["headers"].update((str(n), MASK) for n in view.get("header_names") or ())
    auth = view.get("auth")
    if auth and auth.get("type") == "basic":
        shown["auth"] = {"type": "basic", "username": auth.get("username", ""), "password": MASK}
    elif auth:
        shown["auth"] = {"type": "bearer", "token": MASK}
    return shown


def unmask(given: dict[str, Any], stored: Mapping[str, Any]) -> dict[str, Any]:
    """``given`` (plain fields of a request) with each ``MASK`` sent where a secret goes
    replaced by the stored secret; a 422 where no secret is stored to keep."""
    auth = given.get("auth")
    if auth:
        secret = "password" if auth["type"] == "basic" else "token"
        if auth[secret] == MASK:
            kept = stored.get("auth") or {}
            if kept.get("type") != auth["type"]:
                field = f"auth.{secret}"
                raise ApiError(422, "invalid", f"{field}: {MASK} stands for a stored {secret}, and there is "
                               f"none to keep; send the {secret} itself", field)  # fmt: skip
            given["auth"] = {**auth, secret: kept[secret]}
    headers = given.get("headers")
    if headers:
        kept_headers = {n.lower(): v for n, v in (stored.get("headers") or {}).items() if is_secret_header(n)}
        for name, value in headers.items():
            if value == MASK and is_secret_header(name):
                if name.lower() not in kept_headers:
                    raise ApiError(422, "invalid", f"headers: {MASK} stands for the stored value of {name}, "
                                   "and there is none to keep; send the value itself", "headers")  # fmt: skip
                headers[name] = kept_headers[name.lower()]
    return given
