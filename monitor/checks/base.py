"""The small interface every check type implements.

A type is a ``Check`` subclass with a ``kind`` and, for every type but http (whose request
options predate this seam and live in ``api/schemas_http.py``), a pydantic ``Settings`` model:
the type's own fields of a monitor, flat beside the common ones in the API's body
(``{"type": "tcp", "host": ..., "port": ...}``), stored as ``monitors.settings`` JSONB. The
api validates a body against it (a 422 names the field), stores ``model_dump(mode="json")``,
keeps ``target(settings)`` in ``monitors.url`` (what alerts and lists show) and vets
``hosts(settings)`` before it stores them (the first of the two SSRF layers). The scheduler
turns the stored settings into the type's runtime options once per load (``options``) and
calls ``run`` on every tick.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BaseModel, Field

from monitor.models import CheckResult, MonitorSpec
from monitor.net.client import HttpSession
from monitor.net.policy import AddressPolicy, normal_host

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


class Check:
    kind: ClassVar[str]
    # The type's own fields (None: http, see the module's docstring).
    Settings: ClassVar[type[BaseModel] | None] = None
    # Whether the scheduler runs it on a timer (False: heartbeat, whose results come from pings).
    scheduled: ClassVar[bool] = True
    # The default of ``confirm_after`` for the type (a heartbeat's grace time already confirms).
    confirm_after: ClassVar[int] = 2

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
        if self.Settings is None:
            raise TypeError(f"check type {self.kind!r} has no Settings")
        return self.Settings.model_validate(settings or {}, context=STORED)

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
        self._checks[check_type.kind] = check_type()

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
