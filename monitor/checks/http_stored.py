"""An http monitor's fields as stored and as read back: its secrets apart, and masked.

They are stored split in three (formats in sql/006_http_options.sql and sql/020_http_settings.sql):
``url`` in ``monitors.url`` (the target every type has); in ``monitors.settings`` the parts that
are not secret, each left out at its default so a plain monitor stays ``{}``
(``expected_status`` as its ranges, ``[[200, 299]]``; ``follow_redirects`` only when true);
and the credentials in one ``monitor_secrets`` row, sealed (``monitor/secrets.py``), absent
when there are none. The credentials are what ``HttpCheck.secrets`` declares: ``auth``, and
of ``headers`` the values of those whose names look sensitive (:func:`is_secret_header`).

Reads never open a secret: ``secrets.SECRET_VIEW`` gives auth's type and username and the names
of the secret headers, and each secret shows as ``MASK``. A PATCH that sends ``MASK`` back where
a secret is stored keeps that secret, so a client can read a monitor, change one field and
send the whole of it back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from monitor.checks.assertions import Assertion
from monitor.checks.base import SettingsError
from monitor.checks.http_settings import (
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_STATUSES,
    HttpSettings,
    Method,
    parse_status_ranges,
    render_status_ranges,
)
from monitor.secrets import MASK

# The fields that hold secrets (HttpCheck.secrets): kept in monitor_secrets, read back masked.
SECRET_FIELDS = frozenset({"auth", "headers"})

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


def is_secret_header(name: str) -> bool:
    key = name.lower()
    return key in SECRET_HEADERS or any(part in key for part in SECRET_NAME_PARTS)


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
    replaced by the stored secret; a ``SettingsError`` naming the field where no secret is
    stored to keep."""
    auth = given.get("auth")
    if auth:
        secret = "password" if auth["type"] == "basic" else "token"
        if auth[secret] == MASK:
            kept = stored.get("auth") or {}
            if kept.get("type") != auth["type"]:
                raise SettingsError(f"auth.{secret}", f"{MASK} stands for a stored {secret}, and there is "
                                    f"none to keep; send the {secret} itself")  # fmt: skip
            given["auth"] = {**auth, secret: kept[secret]}
    headers = given.get("headers")
    if headers:
        kept_headers = {n.lower(): v for n, v in (stored.get("headers") or {}).items() if is_secret_header(n)}
        for name, value in headers.items():
            if value == MASK and is_secret_header(name):
                if name.lower() not in kept_headers:
                    raise SettingsError("headers", f"{MASK} stands for the stored value of {name}, "
                                        "and there is none to keep; send the value itself")  # fmt: skip
                headers[name] = kept_headers[name.lower()]
    return given


# -- the whole of an http monitor's fields ---------------------------------------------------


def stored_settings(settings: HttpSettings) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(``monitors.settings``, ``monitor_secrets.secrets`` or None) of an http monitor's
    validated fields (``url`` is ``monitors.url``, not in either)."""
    stored, secrets = to_stored(settings.model_dump(include=set(FIELDS), mode="json"))
    statuses = parse_status_ranges(settings.expected_status)
    if statuses != DEFAULT_STATUSES:
        stored["expected_status"] = statuses
    if settings.follow_redirects:
        stored["follow_redirects"] = True
    return stored, secrets


def whole(url: str, settings: Mapping[str, Any] | None, secrets: Mapping[str, Any] | None) -> dict[str, Any]:
    """Every field of a stored http monitor as a body gives them (secrets included): what a
    PATCH's fields replace."""
    settings = settings or {}
    return {
        "url": url,
        "expected_status": render_status_ranges(settings.get("expected_status", DEFAULT_STATUSES)),
        "follow_redirects": bool(settings.get("follow_redirects", False)),
        **from_stored(settings, secrets),
    }


def shown(url: str, settings: Mapping[str, Any] | None, view: Mapping[str, Any] | None) -> dict[str, Any]:
    """Every field of a stored http monitor as the API shows it, each secret as ``MASK``."""
    settings = settings or {}
    return {
        "url": url,
        "expected_status": render_status_ranges(settings.get("expected_status", DEFAULT_STATUSES)),
        "follow_redirects": bool(settings.get("follow_redirects", False)),
        **render(settings, view),
    }


def legacy_columns(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The columns the release before this one read statuses and redirects from, as stored
    ``settings`` give them (sql/020: written until its contract step drops them)."""
    return {
        "expected_status": settings.get("expected_status", DEFAULT_STATUSES),
        "follow_redirects": bool(settings.get("follow_redirects", False)),
    }


# -- as the API's answers show them ----------------------------------------------------------


class _Shown(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BasicAuthShown(_Shown):
    type: Literal["basic"]
    username: str
    password: Literal["********"] = Field(description="always the mask: the password is never shown")


class BearerAuthShown(_Shown):
    type: Literal["bearer"]
    token: Literal["********"] = Field(description="always the mask: the token is never shown")


class HttpShown(_Shown):
    """An http monitor's own fields in the answers about it (``HttpCheck.Shown``): its
    ``Settings`` with each secret masked; absent from other types' monitors."""

    expected_status: list[int | str] | SkipJsonSchema[None] = Field(
        None, description="http: status codes, 'low-high' ranges or 'Nxx' classes"
    )
    follow_redirects: bool | SkipJsonSchema[None] = None
    method: Method | SkipJsonSchema[None] = None
    headers: dict[str, str] | SkipJsonSchema[None] = Field(
        None, description=f"http: the values of sensitive headers read as {MASK!r}"
    )
    body: str | None = None
    content_type: str | None = None
    auth: Annotated[BasicAuthShown | BearerAuthShown, Field(discriminator="type")] | None = Field(
        None, description=f"http: credentials read as {MASK!r}; send the mask back to keep them"
    )
    max_body_bytes: int | SkipJsonSchema[None] = None
    tls_verify: bool | SkipJsonSchema[None] = None
    assertions: list[Assertion] | SkipJsonSchema[None] = None
