"""The worker service: heavy checks taken from their kinds' streams and run, a few at a time.

A worker reads every heavy kind of its registry (``Check.heavy``) from one stream per kind in
the ``workers`` group (``queue.py``), runs at most ``MONITOR_WORKER_CONCURRENCY`` jobs at once
(each with its monitor's timeout, cut by the job's deadline: ``jobs.py``), and answers each on
its scheduler's reply stream before acknowledging it. While a job runs its claim is renewed
every third of the claim threshold (``MONITOR_WORKER_CLAIM_IDLE_SECONDS``); every half of it,
a worker with a free slot takes over the jobs left idle longer (a dead worker's) and runs them
if their deadline leaves time, else answers NOT_RUN. Its heartbeat in Redis (``presence.py``)
is what ``monitor cluster status`` lists.

Its checks get a ``CheckContext`` of their own, built as the scheduler builds its own
(``checks/tools.py``: the same address policy and guarded session) with ``browser`` set to a
Chromium launcher (``monitor/browser/chromium.py``, each run under ``MONITOR_WORKER_MEMORY_MB``)
and ``screenshots`` to the store browser checks keep theirs in (``monitor/visual/store.py``,
on the database: :func:`run.default_screenshots`). The worker needs Redis and the secret key
(to open the sealed secrets of a job's row); the database only for the screenshots (without
MONITOR_DATABASE_URL the checks run and keep none).

A stop has two phases (``lifecycle.serve``): ``drain`` stops reading and waits for the jobs in
hand; what is still running when the shutdown timeout ends is cancelled in ``close`` and handed
back (its idle time set past any threshold), so the next worker takes it over at once if its
deadline still leaves time.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from dataclasses import dataclass, replace
from typing import Any

import redis.asyncio as aioredis
from aiohttp import web
from redis.exceptions import RedisError, ResponseError

from monitor import keys, probes, redisconn
from monitor import logging as mlog
from monitor.aio import Slots
from monitor.checks import REGISTRY, Registry
from monitor.checks.base import CheckContext
from monitor.checks.tools import CheckTools, check_tools
from monitor.config import Settings
from monitor.health import ping_redis, watch_loop
from monitor.models import CheckResult, Failure
from monitor.secrets import SecretBox
from monitor.visual.store import ScreenshotStore
from monitor.worker.jobs import Job, JobError, budget, not_run
from monitor.worker.metrics import WorkerMetrics
from monitor.worker.presence import Presence
from monitor.worker.queue import Entry, WorkQueue
from monitor.worker.run import default_browser, default_screenshots, execute

log = mlog.get(__name__)

# Past its given time, a check that does not stop itself is cut off this much later.
HARD_MARGIN_SECONDS = 1.0
DEFAULT = object()


@dataclass
class _InHand:
    task: asyncio.Task[None]
    job: Job | None = None


class Worker:
    """``settings``, ``redis`` (made from the settings when None, and then closed with the
    worker) and the ``registry`` whose heavy kinds it runs; ``browser`` and ``screenshots`` go
    into its checks' context (defaults: :func:`default_browser`, :func:`default_screenshots`;
    None: none)."""

    name = "worker"

    def __init__(
        self,
        settings: Settings,
        redis: aioredis.Redis | None = None,
        registry: Registry = REGISTRY,
        *,
        browser: Any = DEFAULT,
        screenshots: Any = DEFAULT,
        block_ms: int = 1000,
    ) -> None:
        self.settings = settings
        self.registry = registry
        self.kinds = [k for k in registry.kinds if registry.get(k).heavy]
        self.id = f"{socket.gethostname()}-{os.getpid()}-{os.urandom(3).hex()}"
        self.concurrency = settings.worker_concurrency
        self.claim_idle = settings.worker_claim_idle_seconds
        self.metrics = WorkerMetrics()
        self._redis = redis
        self._owns_redis = redis is None
        self._browser = browser
        self._screenshots = screenshots
        self._block_ms = block_ms
        self._slots = Slots(self.concurrency)
        self._stopping = asyncio.Event()
        self._in_hand: dict[tuple[str, str], _InHand] = {}
        self._intake: list[asyncio.Task[None]] = []
        self._keeping: list[asyncio.Task[None]] = []
        self._tools: CheckTools | None = None
        self._ctx: CheckContext | None = None
        self._box: SecretBox | None = None
        self._queue: WorkQueue | None = None
        self._presence: Presence | None = None
        self._probes: web.AppRunner | None = None
        self._store: ScreenshotStore | None = None  # the one this worker opened
        self.answered = 0

    @property
    def running(self) -> int:
        return len(self._in_hand)

    # -- lifecycle -----------------------------------------------------------------

    async def start(self) -> None:
        s = self.settings
        s.require("secret_key", *(() if self._redis is not None else ("redis_url",)))
        self._box = s.secret_box()
        if self._redis is None:
            self._redis = redisconn.from_settings(s, socket_timeout=10, socket_connect_timeout=5)
        tools = self._tools = check_tools(s, log, limit=max(10, 10 * self.concurrency))
        browser = default_browser(s, tools) if self._browser is DEFAULT else self._browser
        self._browser = browser
        if self._screenshots is DEFAULT:
            self._screenshots = self._store = await default_screenshots(s)
        self._ctx = replace(
            tools.ctx, browser=browser, screenshots=self._screenshots, lighthouse=s.lighthouse_path
        )
        if browser is None:
            log.warning("worker.no_browser", hint="heavy checks that need a browser fail")
        if not self.kinds:
            log.warning("worker.no_heavy_kinds", hint="this version has no heavy check type; nothing to run")
        self._queue = WorkQueue(self._redis, self.id, self.kinds, claim_idle=self.claim_idle)
        self._presence = Presence(
            self.id, socket.gethostname(), os.getpid(), list(self.kinds), self.concurrency, time.time()
        )
        self.metrics.running.set_function(lambda: len(self._in_hand))
        # Bind the listener before any work starts: a port in use fails the start cleanly.
        self._probes = await probes.start(
            s.probe_host, s.worker_http_port, self.metrics.registry, self._ready
        )
        self._intake = [asyncio.create_task(self._read(), name="worker-read")]
        self._keeping = [
            asyncio.create_task(self._keep_claims(), name="worker-claims"),
            asyncio.create_task(self._beat(), name="worker-heartbeat"),
            asyncio.create_task(watch_loop(self.metrics.loop_blocked), name="loop-watch"),
        ]
        log.info("worker.ready", worker_id=self.id, kinds=self.kinds, concurrency=self.concurrency)

    async def _ready(self) -> dict[str, bool]:
        assert self._redis is not None
        return {"redis": await ping_redis(self._redis)}

    async def drain(self) -> None:
        """Stop reading, then wait for the jobs in hand (their claims still renewed)."""
        self._stopping.set()
        if self._intake:
            _done, late = await asyncio.wait(self._intake, timeout=self._block_ms / 1000 + 1)
            for task in late:
                task.cancel()
        tasks = [h.task for h in self._in_hand.values()]
        if tasks:
            log.info("worker.waiting_for_jobs", running=len(tasks))
            await asyncio.wait(tasks)

    def abandoned(self) -> list[str]:
        n = len(self._in_hand)
        return [f"{n} jobs running (handed back to the other workers)"] if n else []

    async def close(self) -> None:
        self._stopping.set()
        for task in self._intake:
            task.cancel()
        in_hand = list(self._in_hand)
        for held in list(self._in_hand.values()):
            held.task.cancel()
        await asyncio.gather(*self._intake, *(h.task for h in self._in_hand.values()), return_exceptions=True)
        if in_hand and self._queue is not None:
            try:
                await self._queue.hand_back(in_hand)
                log.info("worker.handed_back", jobs=len(in_hand), answered_before=self.answered)
            except RedisError as exc:
                log.warning(
                    "worker.hand_back_failed", jobs=len(in_hand), error=str(exc) or type(exc).__name__
                )
        for task in self._keeping:
            task.cancel()
        await asyncio.gather(*self._keeping, return_exceptions=True)
        if self._presence is not None and self._redis is not None:
            try:
                await self._presence.leave(self._redis)
            except RedisError:
                pass  # it expires
        if self._probes is not None:
            await self._probes.cleanup()
        if self._browser is not None and hasattr(self._browser, "close"):
            await self._browser.close()
        if self._store is not None:
            await self._store.close()
        await self.registry.close()
        if self._tools is not None:
            await self._tools.close()
        if self._redis is not None and self._owns_redis:
            await self._redis.aclose()

    # -- the loops -------------------------------------------------------------------

    async def _read(self) -> None:
        """Until stopping: one job per free slot, new ones and (every half of the claim
        threshold) those a dead worker left; Redis errors are waited out."""
        assert self._queue is not None
        queue = self._queue
        groups_ready = False
        next_takeover = 0.0
        delay = 1.0
        while not self._stopping.is_set():
            if not self.kinds:
                await self._sleep(self._block_ms / 1000)
                continue
            await self._slots.acquire()
            taken = False
            try:
                if not groups_ready:
                    await queue.make_groups()
                    groups_ready = True
                if time.monotonic() >= next_takeover:
                    entries = await queue.take_over(1)
                    # Another look at once while there are some: a dead worker left several.
                    next_takeover = 0.0 if entries else time.monotonic() + self.claim_idle / 2
                    if entries:
                        self.metrics.taken_over.inc()
                        log.info("worker.taken_over", kind=entries[0][0], entry_id=entries[0][1])
                        self._take(entries[0], taken_over=True)
                        taken = True
                        continue
                if self._stopping.is_set():
                    break
                for entry in await queue.read(1, self._block_ms):
                    self._take(entry, taken_over=False)
                    taken = True
                delay = 1.0
            except (RedisError, OSError) as exc:
                if isinstance(exc, ResponseError) and "NOGROUP" in str(exc):
                    groups_ready = False  # Redis lost its data: make the groups again
                log.warning("worker.read_failed", error=str(exc) or type(exc).__name__, retry_in_s=delay)
                await self._sleep(delay)
                delay = min(delay * 2, 10.0)
            finally:
                if not taken:
                    self._slots.release()

    def _take(self, entry: Entry, *, taken_over: bool) -> None:
        """Run one entry in a task of its own; it holds the slot just taken until it ends."""
        kind, entry_id, fields = entry
        key = (kind, entry_id)
        task = asyncio.create_task(self._serve(kind, entry_id, fields, taken_over), name="worker-job")
        self._in_hand[key] = _InHand(task)

        def finished(task: asyncio.Task[None]) -> None:
            self._in_hand.pop(key, None)
            self._slots.release()
            if not task.cancelled() and (exc := task.exception()) is not None:  # never lost
                log.error(
                    "worker.job_failed",
                    kind=kind,
                    entry_id=entry_id,
                    error=str(exc)[:300] or type(exc).__name__,
                )

        task.add_done_callback(finished)

    async def _keep_claims(self) -> None:
        """Until closed: keep the jobs in hand ours; stop the runs of those another took."""
        assert self._queue is not None
        while True:
            await asyncio.sleep(self.claim_idle * keys.WORK_RENEW_FRACTION)
            if not self._in_hand:
                continue
            try:
                lost = await self._queue.renew(list(self._in_hand))
            except (RedisError, OSError) as exc:
                log.warning("worker.claim_refresh_failed", error=str(exc) or type(exc).__name__)
                continue
            for key in lost:
                held = self._in_hand.get(key)
                if held is not None:
                    self.metrics.claims_lost.inc()
                    log.warning(
                        "worker.claim_lost", kind=key[0], entry_id=key[1], reason="taken over or gone"
                    )
                    held.task.cancel()

    async def _beat(self) -> None:
        assert self._presence is not None and self._redis is not None
        while True:
            try:
                await self._presence.beat(self._redis, self._running_jobs)
            except (RedisError, OSError) as exc:
                log.warning("worker.heartbeat_failed", error=str(exc) or type(exc).__name__)
            await asyncio.sleep(keys.WORKER_HEARTBEAT_SECONDS)

    def _running_jobs(self) -> list[dict[str, Any]]:
        return [
            {"kind": kind, "job_id": h.job.id, "monitor_id": h.job.monitor_id}
            for (kind, _entry), h in self._in_hand.items()
            if h.job is not None
        ]

    async def _sleep(self, seconds: float) -> None:
        try:
            await asyncio.wait_for(self._stopping.wait(), timeout=seconds)
        except TimeoutError:
            pass

    # -- one job ---------------------------------------------------------------------

    async def _run(self, job: Job, given: float) -> CheckResult:
        assert self._box is not None and self._ctx is not None
        return await execute(job, given, box=self._box, registry=self.registry, ctx=self._ctx)

    async def _serve(self, kind: str, entry_id: str, fields: dict[Any, Any], taken_over: bool) -> None:
        assert self._queue is not None
        try:
            job = Job.from_fields(fields)
        except JobError as exc:
            log.warning("worker.job_unreadable", kind=kind, entry_id=entry_id, error=str(exc))
            await self._queue.done(kind, entry_id)
            return
        held = self._in_hand.get((kind, entry_id))
        if held is not None:
            held.job = job
        with mlog.bound(monitor_id=job.monitor_id, job_id=job.id):
            started = time.time()
            given, why = budget(job, started, taken_over=taken_over)
            result = not_run(job, why) if why is not None else await self._run(job, given or 0.0)
            try:
                await self._queue.answer(kind, entry_id, job.id, job.reply, result)
            except (RedisError, OSError) as exc:  # left pending: another worker answers it
                log.warning("worker.reply_failed", error=str(exc) or type(exc).__name__)
                return
            self.answered += 1
            label = "not_run" if result.failure is Failure.NOT_RUN else ("up" if result.ok else "down")
            self.metrics.jobs.labels(label).inc()
            duration = time.time() - started
            self.metrics.duration.observe(duration)
            log.info(
                "worker.job_done", kind=kind, result=label, duration_ms=round(duration * 1000, 1),
                error=result.error, taken_over=taken_over,
            )  # fmt: skip
