"""One job as a worker reads it, and what it may still do with it; pure.

A job (``scheduler/dispatch.py``) carries its monitor's row form, the tick's time, a deadline
(the tick's start plus the monitor's timeout) and where to reply. A worker runs it only if the
deadline (and ``keys.WORK_RUN_GRACE_SECONDS``) leaves enough of the timeout
(``keys.WORK_MIN_LEFT_SHARE``), and then with what is left: the whole timeout when the queue
took no longer than the grace. A check cut short by our own queue would read as the target's
timeout, a false down, so a job with less left, or one whose shortened run timed out, is
answered ``Failure.NOT_RUN``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from monitor import keys
from monitor.models import CheckResult, Failure


class JobError(ValueError):
    """A stream entry that is not a job this version can read."""


@dataclass(frozen=True)
class Job:
    id: str
    kind: str
    reply: str
    at: datetime  # the tick's time: the result's
    deadline: float  # epoch seconds
    row: dict[str, Any]

    @property
    def monitor_id(self) -> int:
        return int(self.row.get("id") or 0)

    @property
    def timeout(self) -> float:
        return float(self.row.get("timeout_seconds") or 0.0)

    @classmethod
    def from_fields(cls, fields: dict[Any, Any]) -> Job:
        raw = fields.get(keys.WORK_FIELD.encode(), fields.get(keys.WORK_FIELD))
        try:
            data = json.loads(raw or "null")
            return cls(
                id=str(data["id"]),
                kind=str(data["kind"]),
                reply=str(data["reply"]),
                at=datetime.fromisoformat(data["time"]),
                deadline=float(data["deadline"]),
                row=dict(data["row"]),
            )
        except (TypeError, ValueError, KeyError) as exc:
            raise JobError(str(exc)[:200] or type(exc).__name__) from None


def budget(job: Job, now: float, *, taken_over: bool) -> tuple[float | None, str | None]:
    """(the seconds the job's check may run, None) or (None, why it is not run now): the
    monitor's timeout, less what the queue took beyond ``keys.WORK_RUN_GRACE_SECONDS``."""
    left = job.deadline + keys.WORK_RUN_GRACE_SECONDS - now
    timeout = job.timeout
    if left >= timeout * keys.WORK_MIN_LEFT_SHARE and left > 0:
        return min(timeout, left), None
    left = job.deadline - now  # as a person reads it: the time left of the monitor's timeout
    if taken_over:
        return None, (
            f"not run: the worker running it stopped, and {max(0.0, left):.0f} s of its "
            f"{timeout:g} s were left for another"
        )
    if left <= 0:
        return None, f"not run: no worker was free before its deadline ({-left:.0f} s ago)"
    return None, f"not run: no worker was free until {left:.0f} s of its {timeout:g} s were left"


def not_run(job: Job, error: str) -> CheckResult:
    return CheckResult(job.monitor_id, job.at, ok=False, error=error, failure=Failure.NOT_RUN)


def cut_short(job: Job, given: float, result: CheckResult) -> CheckResult:
    """``result`` of a run given ``given`` seconds: a timeout of a run shortened by the queue
    is ours, not the target's (NOT_RUN); any other result stands."""
    if result.failure is Failure.TIMEOUT and given < job.timeout - 0.001:
        return not_run(
            job, f"not run: started late, it had {given:.0f} s of its {job.timeout:g} s and timed out"
        )
    return result
