"""The small interface every check type implements.

A type is a ``Check`` subclass with a ``kind`` and a pydantic ``Settings`` model: the type's own
fields of a monitor, flat beside the common ones in the API's body (``{"type": "tcp", "host":
..., "port": ...}``), stored as ``monitors.settings`` JSONB. The api validates a body against it
(a 422 names the field), stores ``to_stored(settings)``, keeps ``target(settings)`` in
``monitors.url`` (what alerts and lists show) and vets ``hosts(settings)`` before it stores them
(the first of the two SSRF layers); it answers with ``shown(...)``, and a PATCH's fields replace
those of ``whole(...)`` before the result is validated again. The scheduler turns the stored
settings into the type's runtime options once per load (``options``) and calls ``run`` on every
tick. What a type's results hold in their ``details`` is its ``Details`` model.

A type whose fields hold credentials names them in ``secrets`` (as a channel kind does): its
``to_stored`` keeps them out of the settings, in the ``monitor_secrets`` row the api seals, its
``shown`` masks them and its ``unmask`` keeps a stored one that a PATCH sends back masked. http
is such a type (``checks/http.py``), and the worked example of docs/check-types.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from monitor.models import CheckResult, Failure, MonitorSpec
from monitor.net.client import HttpSession, clip_error
from monitor.net.dial import DialError
from monitor.net.policy import AddressPolicy, normal_host
from monitor.net.vetting import Refused

if TYPE_CHECKING:
    from monitor.browser import Browser
    from monitor.checks.heavy import Dispatch

# The validation context of settings read back from the database: what was stored was valid then.
STORED: dict[str, Any] = {"allow_insecure_tls": True, "min_interval_seconds": 0}

# The host a type dials, in its Settings: a name or an IP literal as checks dial it (IDNA,
# lower case, no trailing dot, IPv6 without brackets); a URL or a port is refused.
Host = Annotated[str, Field(min_length=1, max_length=260), AfterValidator(normal_host)]


@dataclass(frozen=True)
class CheckContext:
    """What a check may use: the shared session, the address policy and the operator's
    choices that bind every monitor; nothing else."""

    session: HttpSession
    policy: AddressPolicy
    # MONITOR_ALLOW_INSECURE_TLS: without it, a stored tls_verify false (set while the
    # operator allowed it) is not honoured, and certificates are checked.
    allow_insecure_tls: bool = False
    # MONITOR_HTTP_MAX_BODY_BYTES: the most body any monitor reads, whatever it stored.
    http_max_body_bytes: int = 10 * 1024 * 1024
    # A scheduler's: where a heavy type's check goes (``checks/heavy.py``); None in a worker.
    dispatch: Dispatch | None = None
    # A worker's: the Chromium its heavy checks run in (``monitor/browser``); None elsewhere.
    browser: Browser | None = None
    # A worker's: where a browser check keeps its screenshots and finds its baseline.
    screenshots: Any = None
    # A worker's MONITOR_LIGHTHOUSE_PATH: the Lighthouse CLI page-speed checks run (None: the
    # pinned install of ``make browser-tools``, else ``lighthouse`` on PATH).
    lighthouse: str | None = None


def dial_failure(exc: DialError) -> Failure:
    """Why a dialling check (tcp, tls) could not go on, by its ``DialError``."""
    if exc.blocked:
        return Failure.REFUSED
    if exc.timed_out:
        return Failure.TIMEOUT
    return Failure.TLS if exc.certificate else Failure.NETWORK


def refused(monitor_id: int, at: datetime, exc: Refused) -> CheckResult:
    """The result of a check whose host ``vet_host`` refused (denied, or not resolved)."""
    failure = Failure.REFUSED if exc.blocked else Failure.NETWORK
    return CheckResult(monitor_id, at, ok=False, error=clip_error(exc.message), failure=failure)


class ResultDetails(BaseModel):
    """What a type's results hold in their ``details`` (the ``checks.details`` column): each key
    there when the check had it to say, no other. The OpenAPI document describes ``details`` from
    these models (``domain/schemas/history.py``); the docstring of a type's model is its note there."""

    model_config = ConfigDict(extra="forbid")


class SettingsError(ValueError):
    """A type's fields that cannot be taken as given (a mask sent back where no secret is
    stored); ``field`` is the one at fault, as a client wrote it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class Check:
    kind: ClassVar[str]
    # The type's own fields of a monitor.
    Settings: ClassVar[type[BaseModel]]
    # How they read back in the API's answers where that differs from Settings (secrets masked).
    Shown: ClassVar[type[BaseModel] | None] = None
    # The Settings fields that hold secrets: stored apart and sealed, read back masked.
    secrets: ClassVar[frozenset[str]] = frozenset()
    # The type of a monitor whose body names none (http, the first type there was): one per registry.
    default: ClassVar[bool] = False
    # What its results hold in ``details`` (None: they hold none).
    Details: ClassVar[type[ResultDetails] | None] = None
    # Whether the scheduler runs it on a timer (False: heartbeat, whose results come from pings).
    scheduled: ClassVar[bool] = True
    # The default of ``confirm_after`` for the type (a heartbeat's grace time already confirms).
    confirm_after: ClassVar[int] = 2
    # Whether a worker runs it, on the kind's queue, rather than the scheduler (``checks/heavy.py``).
    heavy: ClassVar[bool] = False
    # The shortest interval a monitor of the type may have, beyond the deployment's
    # MONITOR_MIN_INTERVAL_SECONDS (0: that one alone).
    min_interval_seconds: ClassVar[float] = 0.0
    # The default of ``timeout_seconds`` for the type where the common one (10 s) is too short
    # (a browser journey's Chromium alone takes a second to start); None: the common one.
    default_timeout_seconds: ClassVar[float | None] = None
    # Whether its checks keep screenshots (``monitor/visual/store.py``): the dashboard shows them.
    screenshots: ClassVar[bool] = False

    def target(self, settings: Any) -> str:
        """What ``monitors.url`` holds for these validated ``Settings``: a URL-like name of the
        target that alerts and lists show (``tcp://mail.example.com:25``)."""
        raise NotImplementedError

    def hosts(self, settings: Any) -> tuple[str, ...]:
        """The hosts (names or literals) a check with these ``Settings`` dials: the api refuses
        the monitor if one is denied now, with the same reasons as a URL's host."""
        return ()

    def stored(self, settings: dict[str, Any] | None) -> Any:
        """The type's ``Settings`` of a monitor's stored settings, read with every choice the api
        may have allowed when it stored them (a tls_verify false). A ValueError (pydantic's
        ValidationError is one) when they are not this type's: the scheduler skips the monitor."""
        return self.Settings.model_validate(settings or {}, context=STORED)

    def to_stored(self, settings: BaseModel) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """(``monitors.settings``, the plain ``monitor_secrets.secrets`` or None) of validated
        ``Settings`` (or of a body that has them)."""
        return settings.model_dump(include=set(self.Settings.model_fields), mode="json"), None

    def legacy_columns(self, settings: dict[str, Any]) -> dict[str, Any]:
        """The ``monitors`` columns a release before this one read some of the type's fields from,
        as the stored ``settings`` give them: written beside the settings until the migration
        that moved them drops them (sql/020 for http's)."""
        return {}

    def whole(
        self, url: str, settings: dict[str, Any] | None, secrets: dict[str, Any] | None
    ) -> dict[str, Any]:
        """The type's fields of a stored monitor as a body gives them, ``secrets`` (opened)
        included: what a PATCH's fields replace before the whole is validated again."""
        return dict(settings or {})

    def unmask(self, given: dict[str, Any], stored: dict[str, Any]) -> dict[str, Any]:
        """``given`` (fields of a request) with each mask sent back where ``stored`` (``whole``)
        holds a secret replaced by it; a :class:`SettingsError` where there is none to keep."""
        return given

    def shown(
        self, url: str | None, settings: dict[str, Any] | None, view: dict[str, Any] | None
    ) -> dict[str, Any]:
        """``url`` and the type's fields as the API shows them, each secret masked (``view``:
        the readable part of the stored secrets, ``secrets.SECRET_VIEW``)."""
        fields: dict[str, Any] = {"url": url or None}
        # Stored settings were valid when stored: read them back with every choice allowed (a
        # tls_verify false stored while the operator allowed it still reads, and the check says
        # what it does with it), and, should a type's rules have tightened since, as stored.
        try:
            fields.update(self.stored(settings).model_dump(mode="json"))
        except ValueError:
            fields.update(settings or {})
        return fields

    def options(self, settings: dict[str, Any] | None, secrets: dict[str, Any] | None) -> Any:
        """The runtime form of a monitor's stored settings and secrets, built once when the
        scheduler loads it (None: the type's defaults). Raises ValueError for stored settings
        this version cannot run."""
        return None

    async def run(self, monitor: MonitorSpec, ctx: CheckContext, started: datetime) -> CheckResult:
        raise NotImplementedError

    async def close(self) -> None:
        """Release what the type keeps between checks (the dns check's resolver channels)."""


class Registry:
    def __init__(self) -> None:
        self._checks: dict[str, Check] = {}

    def register(self, check_type: type[Check]) -> None:
        if check_type.kind in self._checks:
            raise ValueError(f"check type {check_type.kind!r} registered twice")
        if check_type.default and any(c.default for c in self._checks.values()):
            raise ValueError(f"check type {check_type.kind!r} is a second default type ({self.default!r} is)")
        self._checks[check_type.kind] = check_type()

    @property
    def default(self) -> str:
        """The type of a monitor whose body names none."""
        return next(kind for kind, check in self._checks.items() if check.default)

    def get(self, kind: str) -> Check:
        try:
            return self._checks[kind]
        except KeyError:
            raise ValueError(f"unknown check type {kind!r}") from None

    @property
    def kinds(self) -> list[str]:
        return sorted(self._checks)

    async def close(self) -> None:
        for check in self._checks.values():
            await check.close()
