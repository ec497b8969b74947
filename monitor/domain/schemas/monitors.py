"""A monitor's bodies: the single place where a monitor's input is validated.

Limits that depend on configuration (the minimum interval, the largest body cap, whether
tls_verify may be false) come in through pydantic's validation context, so the same schema
serves every deployment. A monitor's body is made for each check type from the common fields
and the type's ``Settings`` (``monitor/checks/``); every such body is a module attribute under
its schema's name (``HttpMonitorCreate``, ``TcpMonitorPatch``), as clients know them.
"""

from __future__ import annotations

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

from monitor.channels.telegram import parse_chat_id
from monitor.checks import REGISTRY as CHECKS
from monitor.checks import Check
from monitor.domain.schemas.common import TAG as TAG  # the monitors' handlers read it here
from monitor.domain.schemas.common import Body as _Body
from monitor.domain.schemas.common import Name, TagName
from monitor.domain.schemas.locations import QUORUM_DOC, Locations, Quorum, check_quorum, unlocated

MAX_INTERVAL_SECONDS = 86_400
MAX_TIMEOUT_SECONDS = 120
DEFAULT_TIMEOUT_SECONDS = 10.0
ChannelId = Annotated[int, Field(strict=True, ge=1, le=2**63 - 1)]
MonitorRef = Annotated[int, Field(strict=True, ge=1, le=2**63 - 1)]

Number = Annotated[float, Field(allow_inf_nan=False, strict=True)]


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


class _MonitorFields(_Body):
    # The type's own minimum interval (``Check.min_interval_seconds``) and its kind, set on each
    # type's bodies (``_floored``): a browser run costs seconds of CPU, whatever the deployment allows.
    type_min_interval: ClassVar[tuple[float, str]] = (0.0, "")

    @field_validator("interval_seconds", check_fields=False)
    @classmethod
    def _interval(cls, value: float | None, info: ValidationInfo) -> float | None:
        minimum = float((info.context or {}).get("min_interval_seconds", 30))
        own, kind = cls.type_min_interval
        if value is not None and minimum < own and value < own <= MAX_INTERVAL_SECONDS:
            raise ValueError(f"must be at least {own:g} seconds for a {kind} monitor")
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


def _title(kind: str) -> str:
    return kind.title().replace("_", "")


def _typed_create(check: Check) -> type[BaseModel]:
    """The body that creates a monitor of a type: the common fields, its ``type`` tag and the
    type's own fields, flat."""
    clash = set(check.Settings.model_fields) & set(_MonitorCommon.model_fields)
    if clash:
        raise TypeError(f"check type {check.kind!r} redefines common monitor fields {sorted(clash)}")
    model: type[BaseModel] = create_model(
        f"{_title(check.kind)}MonitorCreate",
        __base__=(_MonitorCommon, check.Settings),
        __doc__=(check.Settings.__doc__ or f"A monitor of type {check.kind!r}.").strip(),
        __validators__=_unlocated(check),
        # The default type may be left out of the body.
        type=(Literal[check.kind], check.kind if check.default else ...),  # type: ignore[arg-type]
        confirm_after=(StrictInt, Field(check.confirm_after, ge=1, le=10)),
        **_own_defaults(check),
    )
    return model


def _own_defaults(check: Check) -> dict[str, Any]:
    """A type's own defaults of the common fields: ``timeout_seconds`` where it declares one
    (``Check.default_timeout_seconds``), ``interval_seconds`` no shorter than its minimum."""
    fields: dict[str, Any] = {}
    if check.min_interval_seconds > 60:
        fields["interval_seconds"] = (Number, check.min_interval_seconds)
    default = check.default_timeout_seconds
    if default is not None:
        doc = f"at most interval_seconds; default {default:g}, or interval_seconds when that is shorter"
        fields["timeout_seconds"] = (Number, Field(default, gt=0, le=MAX_TIMEOUT_SECONDS, description=doc))
    return fields


def _unlocated(check: Check) -> dict[str, Any]:
    """A type not checked by the schedulers (a heartbeat) refuses locations."""
    if check.scheduled:
        return {}
    return {"_unlocated": field_validator("locations", mode="before")(unlocated(check.kind))}


# The default type first (the first of the bodies a client reads), then by name.
TYPED = {kind: CHECKS.get(kind) for kind in sorted(CHECKS.kinds, key=lambda k: k != CHECKS.default)}


def _floored(model: type[BaseModel], check: Check) -> type[BaseModel]:
    """``model`` (a type's body) with the type's minimum interval, if it has one."""
    if check.min_interval_seconds > 0:
        model.type_min_interval = (check.min_interval_seconds, check.kind)  # type: ignore[attr-defined]
    return model


CREATE_BODIES: dict[str, type[BaseModel]] = {
    kind: _floored(_typed_create(check), check) for kind, check in TYPED.items()
}


def _body_type(body: Any) -> str:
    default = CHECKS.default
    return str(body.get("type", default) if isinstance(body, dict) else getattr(body, "type", default))


class MonitorCreate(RootModel[Any]):
    """A new monitor: ``type`` (default http) selects its own fields."""

    root: Annotated[
        Union[tuple(Annotated[m, Tag(k)] for k, m in CREATE_BODIES.items())],  # type: ignore[valid-type]  # noqa: UP007
        Discriminator(_body_type),
    ]


def validate_create(body: dict[str, Any], context: dict[str, Any]) -> BaseModel:
    """The body as the model of its type (pydantic's ValidationError if it breaks it); an
    unknown ``type`` is a ValueError naming the known ones."""
    kind = body.get("type", CHECKS.default)
    if not isinstance(kind, str) or kind not in CREATE_BODIES:
        shown = repr(kind) if isinstance(kind, str) else "(not a string)"
        raise ValueError(f"type: unknown type {shown[:60]} (one of: {', '.join(sorted(CREATE_BODIES))})")
    return MonitorCreate.model_validate(body, context=context).root


class _PatchCommon(_MonitorFields):
    """Every field optional; ``null`` removes ``telegram_chat_id`` (and a type's field that may
    be null, such as http's ``body``, ``content_type`` and ``auth``)."""

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


def _typed_patch(check: Check) -> type[BaseModel]:
    """A change to a monitor of a type: the common fields and the type's own, each optional.
    The type's fields are checked again whole, merged with the stored ones (``Settings`` may
    have rules between them). The default type's keeps the name it has always had in the
    document, ``MonitorPatch``."""
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
        "MonitorPatch" if check.default else f"{_title(check.kind)}MonitorPatch",
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


PATCH_BODIES: dict[str, type[BaseModel]] = {
    kind: _floored(_typed_patch(check), check) for kind, check in TYPED.items()
}
globals().update((model.__name__, model) for model in (*CREATE_BODIES.values(), *PATCH_BODIES.values()))


class MonitorUpdate(RootModel[Any]):
    """A change to a monitor: the fields of its type (``HttpMonitorPatch`` is ``MonitorPatch``),
    each optional. Documentation only: the handler validates against the monitor's own type."""

    root: Union[tuple(PATCH_BODIES.values())]  # type: ignore[valid-type]  # noqa: UP007
