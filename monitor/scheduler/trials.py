"""Trial checks: a monitor's body checked once, on request, through the path every tick's check
takes; nothing kept.

The api (``domain/trials.py``) adds a request to ``keys.TRIALS_STREAM``: the monitor as the row
it would be stored as (its secrets sealed, as in ``monitor_secrets``), the list to push the
answer on, and a deadline. Every scheduler reads the stream in one consumer group
(``keys.TRIALS_GROUP``), so each request goes to one of them; it is acknowledged and deleted as
it is read: a request is done once, or, should its scheduler die meanwhile, not at all (the api
then says that no scheduler answered). At most ``keys.TRIAL_CONCURRENCY`` run at once; one
read after its deadline is dropped (the api gave up on it).

The row (``checks/jobs.row_form``, as a heavy check's job carries its monitor) becomes a spec as
the catalogue loads a monitor (``checks/jobs.spec_of``), the check runs
through ``ticker.run_check`` with the scheduler's own ``CheckContext`` (its SSRF-guarded
session, the operator's TLS and body limits) and within the same hard deadline (a heavy type's
goes to a worker with its row, through the Dispatcher, ``dispatch.py``), and the
result is judged by judging's pure part (``judging.degraded_by``: too slow, a certificate about
to expire): up, degraded or down. The state, the writer, incidents and alerts never see it.
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError, ResponseError

from monitor import keys
from monitor import logging as mlog
from monitor.aio import Slots
from monitor.checks import REGISTRY, CheckContext
from monitor.checks.certificate import cert_not_after
from monitor.checks.jobs import row_form, spec_of
from monitor.models import CheckResult, Failure, MonitorSpec
from monitor.scheduler.dispatch import Dispatcher
from monitor.scheduler.judging import degraded_by
from monitor.scheduler.ticker import run_check
from monitor.secrets import SecretBox

log = mlog.get(__name__)

# The fields of a check as the checks API shows one (``domain/history.render_check`` reads them).
SHOWN = ("time", "ok", "status_code", "latency_ms", "error", "location", "checked_from",
         "dns_ms", "connect_ms", "tls_ms", "ttfb_ms", "details")  # fmt: skip


def verdict(spec: MonitorSpec, result: CheckResult) -> tuple[str, str | None]:
    """(``up``, ``degraded`` or ``down``, why it is degraded) of one result, as judging weighs a
    success (its latency, the certificate the result carries); pure."""
    if not result.ok:
        return "down", None
    expiry = cert_not_after(result.details) if result.details else None
    reason = degraded_by(spec, result, expiry, result.time)
    return ("degraded", reason) if reason is not None else ("up", None)


def answer(
    spec: MonitorSpec, result: CheckResult, duration: float, checked_from: str | None
) -> dict[str, Any]:
    """The reply to the api: the verdict, the failure's kind, how long the check took, and the
    check's fields (``SHOWN``)."""
    status, degraded = verdict(spec, result)
    row = dict(zip(CheckResult.COLUMNS, result.row(result.error, None, checked_from), strict=True))
    check = {name: row[name] for name in SHOWN}
    check["time"] = result.time.isoformat()
    check["details"] = result.details
    return {
        "status": status,
        "degraded": degraded,
        "failure": result.failure.value if result.failure is not None else None,
        "duration_ms": round(duration * 1000, 3),
        "check": check,
    }


class Trials:
    """The consumer of trial requests in this scheduler: :meth:`run` until cancelled, then
    :meth:`close`."""

    def __init__(
        self,
        redis: aioredis.Redis,
        box: SecretBox,
        ctx: CheckContext,
        consumer: str,
        *,
        location: str = "default",
        dispatcher: Dispatcher | None = None,
        concurrency: int = keys.TRIAL_CONCURRENCY,
        block_ms: int = 1000,
    ) -> None:
        self._redis = redis
        self._box = box
        self._ctx = ctx
        self._consumer = consumer
        self._location = location
        self._dispatcher = dispatcher
        self._limit = Slots(concurrency)
        self._block_ms = block_ms
        self._tasks: set[asyncio.Task[None]] = set()

    async def run(self) -> None:
        """Take requests, one per free slot, until cancelled; Redis errors are waited out."""
        group_ready = False
        delay = 1.0
        while True:
            await self._limit.acquire()
            taken = False
            try:
                if not group_ready:
                    await self._make_group()
                    group_ready = True
                entries = await self._read()
                delay = 1.0
                for entry_id, fields in entries:
                    await self._done(entry_id)
                    task = asyncio.create_task(self._serve(fields), name="trial")
                    self._tasks.add(task)
                    task.add_done_callback(self._finished)
                    taken = True
            except RedisError as exc:
                if isinstance(exc, ResponseError) and "NOGROUP" in str(exc):
                    group_ready = False  # Redis lost its data: make the group again
                log.warning("trials.read_failed", error=str(exc) or type(exc).__name__, retry_in_s=delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10.0)
            finally:
                if not taken:
                    self._limit.release()

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._limit.release()
        if not task.cancelled() and (exc := task.exception()) is not None:  # never lost
            log.error("trial.failed", error=str(exc)[:300] or type(exc).__name__)

    async def close(self) -> None:
        """Cancel the trials in flight (their askers are told no scheduler answered)."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _make_group(self) -> None:
        # From the start of the stream: entries are deleted as they are read, so what is there
        # was added while no scheduler read (the stale among them are dropped by their deadline).
        try:
            await self._redis.xgroup_create(keys.TRIALS_STREAM, keys.TRIALS_GROUP, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    async def _read(self) -> list[tuple[Any, dict[Any, Any]]]:
        reply: Any = await self._redis.xreadgroup(
            keys.TRIALS_GROUP, self._consumer, {keys.TRIALS_STREAM: ">"}, count=1, block=self._block_ms
        )
        return [entry for _stream, items in reply or [] for entry in items]

    async def _done(self, entry_id: Any) -> None:
        """Acknowledged and deleted as read: done once, and its sealed secrets not left behind."""
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.xack(keys.TRIALS_STREAM, keys.TRIALS_GROUP, entry_id)
            pipe.xdel(keys.TRIALS_STREAM, entry_id)
            await pipe.execute()

    async def _serve(self, fields: dict[Any, Any]) -> None:
        raw = fields.get(keys.TRIAL_FIELD.encode(), fields.get(keys.TRIAL_FIELD))
        try:
            request = json.loads(raw or "null")
            trial_id, reply, deadline = str(request["id"]), str(request["reply"]), float(request["deadline"])
            row = request["row"]
        except (TypeError, ValueError, KeyError) as exc:
            log.warning("trial.unreadable", error=str(exc)[:200] or type(exc).__name__)
            return
        if time.time() > deadline:
            log.info("trial.stale", trial_id=trial_id, late_s=round(time.time() - deadline, 3))
            return
        replied = await self.check(row)
        try:
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.rpush(reply, json.dumps(replied, separators=(",", ":")))
                pipe.expire(reply, keys.TRIAL_REPLY_TTL_SECONDS)
                await pipe.execute()
        except RedisError as exc:
            log.warning("trial.reply_failed", trial_id=trial_id, error=str(exc) or type(exc).__name__)
            return
        log.info(
            "trial.checked",
            trial_id=trial_id,
            type=row.get("type"),
            status=replied["status"],
            duration_ms=replied["duration_ms"],
        )

    async def check(self, row: dict[str, Any]) -> dict[str, Any]:
        """The answer to one trial of ``row`` (a ``monitors`` row, secrets sealed)."""
        started = time.time()
        at = datetime.fromtimestamp(started, UTC)
        checked_from = self._location if self._location != "default" else None
        whole = {"id": 0, "confirm_after": 1, "paused": False, **row}
        try:
            spec = spec_of(whole, self._box)
        except Exception as exc:  # another secret key than the api's, a newer version's settings
            error = f"internal error: this scheduler cannot run it ({str(exc)[:200] or type(exc).__name__})"
            failed = CheckResult(0, at, ok=False, error=error, failure=Failure.CHECKER)
            return answer(_NOBODY, failed, time.time() - started, checked_from)
        if self._dispatcher is not None and REGISTRY.get(spec.type).heavy:
            # A worker runs it, as it runs the type's ticks: the row goes to it as it came.
            result = await self._dispatcher.send(spec, at, row_form(whole))
        else:
            result = await run_check(spec, self._ctx, at, asyncio.get_running_loop())
        return answer(spec, result, time.time() - started, checked_from)


# The spec of a trial whose row could not be read (only its verdict, down, is asked of it).
_NOBODY = MonitorSpec(0, "", "", "", 0.0, 0.0, 1, False)
