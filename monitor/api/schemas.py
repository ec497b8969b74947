"""Request schemas: the single place where API input is validated.

Limits that depend on configuration (the minimum interval, the largest body cap, whether
tls_verify may be false) come in through pydantic's validation context, so the same schema
serves every deployment. The HTTP request options have a module of their own,
``schemas_http.py``.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal, Union, get_args

from pydantic import (
    BaseModel,
    Discriminator,
    Field,
    RootModel,
    StrictBool,
    StrictInt,
    Tag,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo

from monitor.api.schemas_http import (
    Assertions,
    Auth,
    ContentType,
    Headers,
    HttpChecks,
    MaxBodyBytes,
    Method,
    RequestBody,
    RequestOptions,
    TlsVerify,
)
from monitor.api.schemas_locations import QUORUM_DOC, Locations, Quorum, check_quorum, unlocated
from monitor.channels.telegram import parse_chat_id
from monitor.checks import REGISTRY as CHECKS
from monitor.checks import Check
from monitor.domain.schemas.common import TAG as TAG  # the monitors' handlers read it here
from monitor.domain.schemas.common import Body as _Body
from monitor.domain.schemas.common import Name, TagName
from monitor.net.policy import InvalidTarget, parse_target_url

MAX_INTERVAL_SECONDS = 86_400
MAX_TIMEOUT_SECONDS = 120
DEFAULT_TIMEOUT_SECONDS = 10.0
# Of the URL as stored (normalised: non-ASCII characters percent-encoded, the host in IDNA),
# which is what a client reads back and may send again in a PATCH.
MAX_URL_LENGTH = 2048
_STATUS_RANGE = re.compile(r"^([1-5])xx$|^(\d{3})(?:-(\d{3}))?$")
ChannelId = Annotated[int, Field(strict=True, ge=1, le=2**63 - 1)]
MonitorRef = Annotated[int, Field(strict=True, ge=1, le=2**63 - 1)]

Number = Annotated[float, Field(allow_inf_nan=False, strict=True)]


_URL_DOC = (
    "http:// or https://, no credentials (those go in auth); at most "
    f"{MAX_URL_LENGTH} characters as stored, non-ASCII characters percent-encoded"
)
_TIMEOUT_DOC = (
    f"at most interval_seconds; default {DEFAULT_TIMEOUT_SECONDS:g}, or interval_seconds when that is shorter"
)


def check_timeout(timeout: float, interval: float, *, unchanged: str | None = None) -> None:
    """Refuse a check timeout longer than the interval: such a check would still run when the
    next one is due, which is then skipped. ``unchanged`` names the field of the pair that a
    PATCH leaves as stored, if one. The error is always about ``timeout_seconds``."""
    if timeout <= interval:
        return
    if unchanged == "timeout_seconds":
        raise ValueError(
            f"the monitor's {timeout:g} s is longer than the new interval_seconds ({interval:g} s); "
            "lower timeout_seconds in the same PATCH"
        )
    whose = "the monitor's " if unchanged == "interval_seconds" else ""
    raise ValueError(
        f"{timeout:g} s is longer than {whose}interval_seconds ({interval:g} s): "
        "a check must end before the next one is due"
    )


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


def _default_expected() -> list[int | str]:
    return ["200-399"]


class _MonitorFields(_Body):
    @field_validator("url", check_fields=False)
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is None:
            return None
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

    @field_validator("interval_seconds", check_fields=False)
    @classmethod
    def _interval(cls, value: float | None, info: ValidationInfo) -> float | None:
        minimum = float((info.context or {}).get("min_interval_seconds", 30))
        if value is not None and not (minimum <= value <= MAX_INTERVAL_SECONDS):
            raise ValueError(f"must be between {minimum:g} and {MAX_INTERVAL_SECONDS} seconds")
        return value

    @field_validator("timeout_seconds", check_fields=False)
    @classmethod
    def _timeout(cls, value: float | None, info: ValidationInfo) -> float | None:
        # Both given: checked here. One of them in a PATCH: against the stored other, by the handler.
        interval = info.data.get("interval_seconds")
        if value is not None and interval is not None:
            check_timeout(value, interval)
        return value

    @field_validator("quorum", check_fields=False)
    @classmethod
    def _quorum(cls, value: int | None, info: ValidationInfo) -> int | None:
        # Both known: checked here. A PATCH of one of them: against the stored other, by the handler.
        locations = info.data.get("locations")
        if locations is not None:
            check_quorum(value, locations)
        return value

    @field_validator("expected_status", check_fields=False)
    @classmethod
    def _expected(cls, value: list[int | str] | None) -> list[int | str] | None:
        if value is None:
            return None
        return render_status_ranges(parse_status_ranges(value))

    @field_validator("telegram_chat_id", mode="before", check_fields=False)
    @classmethod
    def _chat(cls, value: Any) -> Any:
        return parse_chat_id(value)


class _MonitorCommon(_MonitorFields):
    """The fields every type of monitor has: its name, schedule, alert rules and channels."""

    name: Name
    interval_seconds: Number = 60
    timeout_seconds: Number = Field(
        DEFAULT_TIMEOUT_SECONDS, gt=0, le=MAX_TIMEOUT_SECONDS, description=_TIMEOUT_DOC
    )
    confirm_after: StrictInt = Field(2, ge=1, le=10)
    recover_after: StrictInt = Field(
        1, ge=1, le=10, description="consecutive successes before a down monitor is up again"
    )
    remind_every_minutes: StrictInt | None = Field(
        None, ge=1, le=10080, description="while down, remind every N minutes (null: no reminders)"
    )
    remind_max: StrictInt | None = Field(
        None, ge=1, le=1000, description="at most this many reminders per outage (null: no limit)"
    )
    degraded_above_ms: StrictInt | None = Field(
        None, ge=1, le=600000, description="degraded when responses take longer (confirm_after in a row)"
    )
    cert_warn_days: StrictInt = Field(
        14, ge=0, le=365, description="https and tls: degraded when the certificate expires sooner (0: never)"
    )
    depends_on: list[MonitorRef] = Field(
        default_factory=list,
        max_length=20,
        description="monitors this one depends on: while one is down, this one's alerts are held",
    )
    flap_threshold: StrictInt | None = Field(
        None, ge=2, le=100, description="more changes than this within flap_window_minutes: flapping"
    )
    flap_window_minutes: StrictInt = Field(30, ge=1, le=1440)
    telegram_chat_id: str | None = None
    paused: StrictBool = False
    tags: list[TagName] = Field(default_factory=list, max_length=20)
    channel_ids: list[ChannelId] = Field(default_factory=list, max_length=20)
    locations: Locations = Field(default_factory=list)
    quorum: Quorum | None = Field(None, description=QUORUM_DOC)

    @model_validator(mode="after")
    def _default_timeout(self) -> Any:
        # The default timeout is shortened to an interval shorter than it (where the operator's
        # MONITOR_MIN_INTERVAL_SECONDS allows one); a timeout given is checked as given.
        if "timeout_seconds" not in self.model_fields_set and self.timeout_seconds > self.interval_seconds:
            self.timeout_seconds = self.interval_seconds
        return self


class HttpMonitorCreate(_MonitorCommon, RequestOptions):
    """An http monitor: its URL and (from ``RequestOptions``) the request and what "up" means
    beyond the status. ``type`` may be left out: http is the default."""

    type: Literal["http"] = "http"
    url: str = Field(min_length=1, max_length=MAX_URL_LENGTH, description=_URL_DOC)
    expected_status: list[StrictInt | str] = Field(default_factory=_default_expected, max_length=20)
    follow_redirects: StrictBool = False


def _title(kind: str) -> str:
    return kind.title().replace("_", "")


def _typed_create(check: Check) -> type[BaseModel]:
    """The body that creates a monitor of a type with ``Settings``: the common fields, its
    ``type`` tag and the type's own fields, flat."""
    assert check.Settings is not None
    clash = set(check.Settings.model_fields) & set(_MonitorCommon.model_fields)
    if clash:
        raise TypeError(f"check type {check.kind!r} redefines common monitor fields {sorted(clash)}")
    model: type[BaseModel] = create_model(
        f"{_title(check.kind)}MonitorCreate",
        __base__=(_MonitorCommon, check.Settings),
        __doc__=(check.Settings.__doc__ or f"A monitor of type {check.kind!r}.").strip(),
        __validators__=_unlocated(check),
        type=(Literal[check.kind], ...),  # type: ignore[arg-type]
        confirm_after=(StrictInt, Field(check.confirm_after, ge=1, le=10)),
    )
    return model


def _unlocated(check: Check) -> dict[str, Any]:
    """A type not checked by the schedulers (a heartbeat) refuses locations."""
    if check.scheduled:
        return {}
    return {"_unlocated": field_validator("locations", mode="before")(unlocated(check.kind))}


TYPED = {c.kind: c for c in (CHECKS.get(k) for k in CHECKS.kinds) if c.Settings is not None}
CREATE_BODIES: dict[str, type[BaseModel]] = {"http": HttpMonitorCreate}
CREATE_BODIES.update((kind, _typed_create(check)) for kind, check in TYPED.items())


def _body_type(body: Any) -> str:
    return str(body.get("type", "http") if isinstance(body, dict) else getattr(body, "type", "http"))


class MonitorCreate(RootModel[Any]):
    """A new monitor: ``type`` (default http) selects its own fields."""

    root: Annotated[
        Union[tuple(Annotated[m, Tag(k)] for k, m in CREATE_BODIES.items())],  # type: ignore[valid-type]  # noqa: UP007
        Discriminator(_body_type),
    ]


def validate_create(body: dict[str, Any], context: dict[str, Any]) -> BaseModel:
    """The body as the model of its type (pydantic's ValidationError if it breaks it); an
    unknown ``type`` is a ValueError naming the known ones."""
    kind = body.get("type", "http")
    if not isinstance(kind, str) or kind not in CREATE_BODIES:
        shown = repr(kind) if isinstance(kind, str) else "(not a string)"
        raise ValueError(f"type: unknown type {shown[:60]} (one of: {', '.join(sorted(CREATE_BODIES))})")
    return MonitorCreate.model_validate(body, context=context).root


class _PatchCommon(_MonitorFields):
    """Every field optional; ``null`` removes ``telegram_chat_id`` (and, for http, ``body``,
    ``content_type`` and ``auth``)."""

    whole: ClassVar[bool] = False

    name: Name | None = None
    interval_seconds: Number | None = None
    timeout_seconds: Number | None = Field(None, gt=0, le=MAX_TIMEOUT_SECONDS, description=_TIMEOUT_DOC)
    confirm_after: StrictInt | None = Field(None, ge=1, le=10)
    recover_after: StrictInt | None = Field(None, ge=1, le=10)
    remind_every_minutes: StrictInt | None = Field(None, ge=1, le=10080)
    remind_max: StrictInt | None = Field(None, ge=1, le=1000)
    degraded_above_ms: StrictInt | None = Field(None, ge=1, le=600000)
    cert_warn_days: StrictInt | None = Field(None, ge=0, le=365)
    depends_on: list[MonitorRef] | None = Field(None, max_length=20)
    flap_threshold: StrictInt | None = Field(None, ge=2, le=100)
    flap_window_minutes: StrictInt | None = Field(None, ge=1, le=1440)
    telegram_chat_id: str | None = None
    paused: StrictBool | None = None
    tags: list[TagName] | None = Field(None, max_length=20)
    channel_ids: list[ChannelId] | None = Field(None, max_length=20)
    locations: Locations | None = None
    quorum: Quorum | None = Field(None, description=QUORUM_DOC)

    @field_validator(
        "name",
        "interval_seconds",
        "timeout_seconds",
        "confirm_after",
        "recover_after",
        "cert_warn_days",
        "depends_on",
        "flap_window_minutes",
        "paused",
        "tags",
        "channel_ids",
        "locations",
        mode="before",
    )
    @classmethod
    def _not_null(cls, value: Any) -> Any:
        if value is None:
            raise ValueError("may not be null")
        return value


class MonitorPatch(_PatchCommon, HttpChecks):
    """A change to an http monitor. The rules between request options are checked on the
    options as changed."""

    url: str | None = Field(None, min_length=1, max_length=MAX_URL_LENGTH, description=_URL_DOC)
    method: Method | None = None
    headers: Headers | None = None
    body: RequestBody | None = None
    content_type: ContentType | None = None
    auth: Auth | None = None
    max_body_bytes: MaxBodyBytes | None = None
    tls_verify: TlsVerify | None = None
    assertions: Assertions | None = None
    type: Literal["http"] | None = None
    expected_status: list[StrictInt | str] | None = Field(None, max_length=20)
    follow_redirects: StrictBool | None = None

    @field_validator(
        "url",
        "type",
        "expected_status",
        "follow_redirects",
        "method",
        "headers",
        "max_body_bytes",
        "tls_verify",
        "assertions",
        mode="before",
    )
    @classmethod
    def _not_null_http(cls, value: Any) -> Any:
        if value is None:
            raise ValueError("may not be null")
        return value


def _typed_patch(check: Check) -> type[BaseModel]:
    """A change to a monitor of a type with ``Settings``: the common fields and the type's own,
    each optional. The type's fields are checked again whole, merged with the stored ones
    (``Settings`` may have rules between them)."""
    assert check.Settings is not None
    fields: dict[str, Any] = {"type": (Literal[check.kind] | None, None)}
    required: list[str] = ["type"]  # null is no value for these: "not given" is leaving them out
    for name, info in check.Settings.model_fields.items():
        optional = FieldInfo.merge_field_infos(info, default=None)
        optional.default_factory = None
        optional.validate_default = False  # "not given" is None, checked against nothing
        fields[name] = (info.annotation | None, optional)  # type: ignore[operator]
        if not _takes_none(info.annotation):
            required.append(name)
    refuse = field_validator(*required, mode="before")(_refuse_null)
    model: type[BaseModel] = create_model(
        f"{_title(check.kind)}MonitorPatch",
        __base__=_PatchCommon,
        __doc__=f"A change to a {check.kind} monitor: every field optional.",
        __validators__={"_not_null_typed": refuse, **_unlocated(check)},
        **fields,
    )
    return model


def _refuse_null(cls: Any, value: Any) -> Any:
    if value is None:
        raise ValueError("may not be null")
    return value


def _takes_none(annotation: Any) -> bool:
    return annotation is None or type(None) in get_args(annotation) or annotation is Any


PATCH_BODIES: dict[str, type[BaseModel]] = {"http": MonitorPatch}
PATCH_BODIES.update((kind, _typed_patch(check)) for kind, check in TYPED.items())


class MonitorUpdate(RootModel[Any]):
    """A change to a monitor: the fields of its type (``HttpMonitorPatch`` is ``MonitorPatch``),
    each optional. Documentation only: the handler validates against the monitor's own type."""

    root: Union[tuple(PATCH_BODIES.values())]  # type: ignore[valid-type]  # noqa: UP007
