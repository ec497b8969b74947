"""Heavy check types: the ones a browser runs, seconds and hundreds of MiB each, on a queue of
their own so that a slow page-speed run never delays a fast http check.

A ``HeavyCheck`` is a ``Check`` whose ``run`` the scheduler hands to ``CheckContext.dispatch``
(the scheduler's queue client, ``scheduler/dispatch.py``): the job goes on the kind's Redis
stream at the tick's due time, a ``monitor worker`` takes it and calls ``execute`` with its own
``CheckContext`` (``browser`` set, ``dispatch`` None), and the result comes back to the same
``judging.conclude``, state machine, writer and alerts as every other check's. A job no worker
finished in time comes back as ``Failure.NOT_RUN``: written, never judged as down.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import ClassVar

from monitor.checks.base import Check, CheckContext
from monitor.models import CheckResult, MonitorSpec

# ``CheckContext.dispatch``: the monitor's check run elsewhere, its result when it is back.
Dispatch = Callable[[MonitorSpec, datetime], Awaitable[CheckResult]]


class HeavyCheck(Check):
    heavy: ClassVar[bool] = True
    # A browser run costs seconds of CPU: no monitor of the kind is checked more often.
    min_interval_seconds: ClassVar[float] = 300.0

    async def run(self, monitor: MonitorSpec, ctx: CheckContext, started: datetime) -> CheckResult:
        if ctx.dispatch is not None:
            return await ctx.dispatch(monitor, started)
        return await self.execute(monitor, ctx, started)

    async def execute(self, monitor: MonitorSpec, ctx: CheckContext, started: datetime) -> CheckResult:
        """The check itself, in a worker (``ctx.browser`` is set there)."""
        raise NotImplementedError
