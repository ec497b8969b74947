"""The scheduler's side of the heavy-check queue: ``CheckContext.dispatch``.

At a heavy monitor's due time its ticker calls the type's ``run`` (``checks/heavy.py``), which
hands the monitor here: the job (the monitor's row form as the catalogue loaded it, secrets
sealed: ``checks/jobs.py``; the tick's time; the deadline, its start plus the monitor's timeout;
an id; this scheduler's reply stream) goes on the kind's stream (``keys.work_stream``), and the
check waits for its reply. One reader task per scheduler reads the reply stream
(``keys.work_reply``, named by this Dispatcher's random id) and resolves the waiting checks by
job id; a reply for a check that stopped waiting, or a second reply for one (a job taken over
while its first worker still lived), finds nobody and is dropped: a tick has one result.

No reply by the deadline and ``keys.WORK_REPLY_MARGIN_SECONDS`` more (below the ticker's hard
margin, so the wait always ends here) is a ``Failure.NOT_RUN`` result naming why: no worker took
the job, the one that took it did not finish, or Redis could not be reached; the job is then
taken off its stream so that no worker starts it after nobody waits for it. A NOT_RUN result is
written and judged as unknown (``judging.py``), so a queue without workers never alerts.

A check waiting here holds no slot of ``MONITOR_CHECK_CONCURRENCY`` (``ticker.check`` takes none
for a heavy type): twenty page-speed runs queued for a minute do not starve the http checks.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from dataclasses import replace
from datetime import datetime
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError, ResponseError

from monitor import keys
from monitor import logging as mlog
from monitor.checks.jobs import result_of
from monitor.models import CheckResult, Failure, MonitorSpec

log = mlog.get(__name__)

# Replies read per XREAD, and how long one blocks (the reader runs only while checks wait).
READ_COUNT = 100
BLOCK_MS = 1000
# The look-up that names why a job got no reply (taken or not) must end before the ticker's
# hard deadline: the wait ends WORK_REPLY_MARGIN_SECONDS after the job's, the ticker's 5 s.
WHY_TIMEOUT_SECONDS = 1.0


def not_run(monitor: MonitorSpec, at: datetime, error: str) -> CheckResult:
    """The result of a heavy check no worker finished (``error`` says why)."""
    return CheckResult(monitor.id, at, ok=False, error=error, failure=Failure.NOT_RUN)


def _error(exc: BaseException) -> str:
    return str(exc)[:200] or type(exc).__name__


class Dispatcher:
    """``CheckContext.dispatch`` of one scheduler: call it with a monitor and its tick's time.

    ``rows``: the row form of each heavy monitor loaded (kept by the catalogue, read at each
    job); ``margin``: how long past a job's deadline its reply is waited for. :meth:`close`
    stops the reader."""

    def __init__(
        self,
        redis: aioredis.Redis,
        rows: dict[int, dict[str, Any]] | None = None,
        *,
        margin: float = keys.WORK_REPLY_MARGIN_SECONDS,
        maxlen: int = keys.WORK_MAXLEN,
    ) -> None:
        self._redis = redis
        self.rows: dict[int, dict[str, Any]] = rows if rows is not None else {}
        self.id = secrets.token_hex(8)
        self.reply_stream = keys.work_reply(self.id)
        self._margin = margin
        self._maxlen = maxlen
        self._waiting: dict[str, asyncio.Future[CheckResult]] = {}
        self._wanted = asyncio.Event()  # set while a check waits: the reader reads only then
        self._reader: asyncio.Task[None] | None = None
        # Why the reader's last read failed (None: it did not): what a NOT_RUN then names.
        self._trouble: str | None = None
        self._cleanups: set[asyncio.Task[Any]] = set()

    @property
    def waiting(self) -> int:
        """Checks waiting for a worker's reply."""
        return len(self._waiting)

    async def __call__(self, monitor: MonitorSpec, started: datetime) -> CheckResult:
        row = self.rows.get(monitor.id)
        if row is None:
            return not_run(monitor, started, "not run: this scheduler holds no row of the monitor to send")
        return await self.send(monitor, started, row)

    async def send(self, monitor: MonitorSpec, started: datetime, row: dict[str, Any]) -> CheckResult:
        """The check of ``monitor`` (whose row form is ``row``: a tick's, or a trial's) run by a
        worker: its result, or a NOT_RUN one by the deadline and the margin."""
        loop = asyncio.get_running_loop()
        deadline = started.timestamp() + monitor.timeout_seconds
        job_id = secrets.token_hex(8)
        stream = keys.work_stream(monitor.type)
        job = {
            "id": job_id,
            "reply": self.reply_stream,
            "kind": monitor.type,
            "time": started.isoformat(),
            "deadline": deadline,
            "row": row,
        }
        future: asyncio.Future[CheckResult] = loop.create_future()
        self._waiting[job_id] = future
        self._wake_reader()
        entry: Any = None
        wait = deadline + self._margin - time.time()
        try:
            async with asyncio.timeout(max(0.0, wait)):
                entry = await self._redis.xadd(
                    stream,
                    {keys.WORK_FIELD: json.dumps(job, separators=(",", ":"))},
                    maxlen=self._maxlen,
                    approximate=True,
                )
                result = await asyncio.shield(future)
            if result.monitor_id != monitor.id or result.time != started:
                # The tick's result whatever the worker stamped it with: one row per tick.
                result = replace(result, monitor_id=monitor.id, time=started)
            return result
        except RedisError as exc:
            return not_run(
                monitor, started, f"not run: Redis is unreachable ({_error(exc)}); no worker was asked"
            )
        except TimeoutError:
            if entry is None:
                return not_run(monitor, started, f"not run: Redis did not take the job within {wait:.0f} s")
            return not_run(monitor, started, await self._why(stream, entry, monitor, wait))
        finally:
            self._waiting.pop(job_id, None)
            if entry is not None and not future.done():
                self._forget(stream, entry)

    async def _why(self, stream: str, entry: Any, monitor: MonitorSpec, waited: float) -> str:
        """The error of a job that got no reply in ``waited`` seconds: was it taken?"""
        if self._trouble is not None:
            return f"not run: no reply could be read from Redis ({self._trouble})"
        try:
            async with asyncio.timeout(WHY_TIMEOUT_SECONDS):
                pending: Any = await self._redis.xpending_range(
                    stream, keys.WORK_GROUP, min=entry, max=entry, count=1
                )
        except ResponseError as exc:  # no group: no worker ever read the kind's queue
            pending = [] if "NOGROUP" in str(exc) else None
        except (RedisError, TimeoutError):
            pending = None
        if pending:
            return f"not run: the worker that took it did not finish within {waited:.0f} s"
        if pending is not None:
            return (
                f"not run: no worker took it within {waited:.0f} s "
                f"(is a `monitor worker` running for {monitor.type} checks, and free?)"
            )
        return f"not run: no worker finished it within {waited:.0f} s"

    def _forget(self, stream: str, entry: Any) -> None:
        """Take an unanswered job off its stream (in the background: the result is due now),
        so no worker starts it once nobody waits, and its sealed secrets do not stay."""

        async def delete() -> None:
            try:
                await self._redis.xdel(stream, entry)
            except RedisError as exc:
                log.debug("dispatch.forget_failed", error=_error(exc))

        task = asyncio.get_running_loop().create_task(delete())
        self._cleanups.add(task)
        task.add_done_callback(self._cleanups.discard)

    # -- the reader ------------------------------------------------------------------

    def _wake_reader(self) -> None:
        self._wanted.set()
        if self._reader is None or self._reader.done():
            self._reader = asyncio.get_running_loop().create_task(
                self._read_replies(), name="dispatch-replies"
            )

    async def _read_replies(self) -> None:
        """Until closed: while checks wait, read replies and resolve them; Redis errors are
        waited out (and named by the checks that time out meanwhile)."""
        last = "0-0"
        delay = 0.5
        while True:
            if not self._waiting:
                self._wanted.clear()
                await self._wanted.wait()
            try:
                reply: Any = await self._redis.xread(
                    {self.reply_stream: last}, count=READ_COUNT, block=BLOCK_MS
                )
                self._trouble = None
                delay = 0.5
            except RedisError as exc:
                self._trouble = _error(exc)
                log.warning("dispatch.read_failed", error=self._trouble, retry_in_s=delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
                continue
            read: list[Any] = []
            for _stream, items in reply or []:
                for entry_id, fields in items:
                    read.append(entry_id)
                    last = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
                    self._resolve(fields)
            if read:
                try:
                    await self._redis.xdel(self.reply_stream, *read)
                except RedisError as exc:  # read already; the key's expiry removes them
                    log.debug("dispatch.reply_delete_failed", error=_error(exc))

    def _resolve(self, fields: dict[Any, Any]) -> None:
        raw = fields.get(keys.WORK_REPLY_FIELD.encode(), fields.get(keys.WORK_REPLY_FIELD))
        try:
            reply = json.loads(raw or "null")
            job_id = str(reply["job"])
            result = result_of(reply["result"])
        except (TypeError, ValueError, KeyError) as exc:
            log.warning("dispatch.reply_unreadable", error=_error(exc))
            return
        future = self._waiting.get(job_id)
        if future is None or future.done():
            # Too late (already NOT_RUN), or a second worker's reply to a job taken over.
            log.info("dispatch.reply_dropped", job_id=job_id, monitor_id=result.monitor_id)
            return
        future.set_result(result)

    async def close(self) -> None:
        """Stop the reader; checks still waiting end as their deadlines come."""
        tasks = [t for t in (self._reader, *self._cleanups) if t is not None]
        if self._reader is not None:
            self._reader.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._reader is not None:
            try:
                await self._redis.delete(self.reply_stream)
            except RedisError:
                pass  # it expires
