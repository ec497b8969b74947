"""What a trial check answers (``domain/trials.py``): the verdict and the check as the checks
API shows one."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from monitor.domain.schemas.common import Out
from monitor.domain.schemas.history import Check
from monitor.models import Failure


class TrialResult(Out):
    status: Literal["up", "degraded", "down"] = Field(
        description="as the monitor's status would be after this one check, alerting rules aside"
    )
    degraded: str | None = Field(description="why a successful check is degraded (slow, certificate)")
    failure: Literal[tuple(f.value for f in Failure)] | None = Field(  # type: ignore[valid-type]
        description="why it failed, by kind (the message is the check's `error`)"
    )
    duration_ms: float = Field(description="how long the scheduler took to run it")
    check: Check = Field(description="the check, as the monitor's checks show one; nothing is saved")
