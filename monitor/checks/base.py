"""The small interface every check type implements."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from monitor.models import CheckResult, MonitorSpec
from monitor.net.client import HttpSession
from monitor.net.policy import AddressPolicy


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

    def options(self, settings: dict[str, Any] | None, secrets: dict[str, Any] | None) -> Any:
        """The runtime form of a monitor's stored settings and secrets, built once when the
        scheduler loads it (None: the type's defaults). Raises ValueError for stored settings
        this version cannot run."""
        return None

    async def run(self, monitor: MonitorSpec, ctx: CheckContext, started: datetime) -> CheckResult:
        raise NotImplementedError


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
