"""The heavy-check queue in one process, with real Redis: a scheduler's Dispatcher and workers
(``monitor/worker``) on a test registry whose one heavy type waits as each test tells it.

A job's result comes back and is judged; with no worker, or Redis unreachable, the check ends
NOT_RUN on time, never a hang; a worker that dies mid-run (its tasks cancelled, nothing
acknowledged or handed back, as a SIGKILL leaves it) has its job taken over by another, or
answered NOT_RUN when too little time is left; a tick never gets two results.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, ClassVar

import pytest
import redis.asyncio as aioredis
from pydantic import BaseModel
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from support import wait_for
from support.procs import TEST_SECRET_KEY

from monitor import config, keys
from monitor.checks.base import CheckContext, Registry
from monitor.checks.heavy import HeavyCheck
from monitor.checks.jobs import row_form
from monitor.models import CheckResult, Failure, MonitorSpec
from monitor.scheduler.dispatch import Dispatcher
from monitor.scheduler.judging import Judged, Judging, conclude
from monitor.scheduler.metrics import SchedulerMetrics
from monitor.scheduler.state import State
from monitor.worker.queue import depth
from monitor.worker.service import Worker

pytestmark = pytest.mark.timeout(60)


class SlowSettings(BaseModel):
    label: str = "page"


class Slow(HeavyCheck):
    """A heavy type that runs until the test opens its gate (``gates[label]``), or forever."""

    kind = "slow"
    Settings = SlowSettings
    min_interval_seconds = 0.0
    gates: ClassVar[dict[str, asyncio.Event]] = {}
    started: ClassVar[list[tuple[str, float]]] = []

    def target(self, settings: Any) -> str:
        return "slow://" + settings.label

    def options(self, settings: dict[str, Any] | None, secrets: dict[str, Any] | None) -> Any:
        return SlowSettings.model_validate(settings or {})

    async def execute(self, monitor: MonitorSpec, ctx: CheckContext, started: datetime) -> CheckResult:
        label = monitor.options.label
        Slow.started.append((label, monitor.timeout_seconds))
        await Slow.gates.setdefault(label, asyncio.Event()).wait()
        return CheckResult(monitor.id, started, ok=True, latency_ms=5.0, details={"degraded": "lcp 3 s"})


def registry() -> Registry:
    made = Registry()
    made.register(Slow)
    return made


def monitor(monitor_id: int, label: str, timeout: float) -> tuple[MonitorSpec, dict[str, Any]]:
    row = {
        "id": monitor_id, "name": label, "type": "slow", "url": "slow://" + label, "interval_seconds": 300.0,
        "timeout_seconds": timeout, "confirm_after": 1, "paused": False, "settings": {"label": label},
        "secrets": None,
    }  # fmt: skip
    return MonitorSpec.from_row(row, SlowSettings(label=label)), row_form(row)


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(redis_url, socket_timeout=5)
    await client.flushdb()
    Slow.gates.clear()
    Slow.started.clear()
    try:
        yield client
    finally:
        await client.flushdb()
        await client.aclose()


@pytest.fixture
def settings(redis_url: str) -> config.Settings:
    return config.load({
        "MONITOR_REDIS_URL": redis_url, "MONITOR_SECRET_KEY": TEST_SECRET_KEY,
        "MONITOR_ALLOW_CIDRS": "127.0.0.0/8", "MONITOR_WORKER_HTTP_PORT": "0",
        "MONITOR_WORKER_CLAIM_IDLE_SECONDS": "1", "MONITOR_WORKER_CONCURRENCY": "2",
    })  # fmt: skip


Start = Callable[[], Awaitable[Worker]]


@pytest.fixture
async def workers(settings: config.Settings, redis: aioredis.Redis) -> AsyncIterator[Start]:
    started: list[Worker] = []

    async def start() -> Worker:
        worker = Worker(settings, redis, registry(), browser=None, block_ms=200)
        await worker.start()
        started.append(worker)
        return worker

    try:
        yield start
    finally:
        for gate in Slow.gates.values():
            gate.set()
        for worker in started:
            await worker.close()


@pytest.fixture
async def dispatcher(redis: aioredis.Redis) -> AsyncIterator[Dispatcher]:
    made = Dispatcher(redis)
    try:
        yield made
    finally:
        await made.close()


def judging(handed: list[tuple[CheckResult, Judged]]) -> Judging:
    return Judging(
        sink=lambda _spec, got, judged: handed.append((got, judged)),
        metrics=SchedulerMetrics(),
        states={1: State("up")},
    )


def die(worker: Worker) -> None:
    """The worker stops as a SIGKILL stops it: every task of its gone, nothing acknowledged,
    handed back or deregistered."""
    for task in [*worker._intake, *worker._keeping, *(h.task for h in worker._in_hand.values())]:
        task.cancel()


async def test_a_job_comes_back_and_is_judged_through_the_same_step(
    dispatcher: Dispatcher, workers: Start, redis: aioredis.Redis
) -> None:
    await workers()
    spec, row = monitor(1, "home", 10.0)
    dispatcher.rows[spec.id] = row
    Slow.gates["home"] = asyncio.Event()
    Slow.gates["home"].set()
    at = datetime.now(UTC)
    result = await dispatcher(spec, at)
    assert (result.ok, result.failure, result.monitor_id, result.time) == (True, None, 1, at), result
    assert result.details == {"degraded": "lcp 3 s"} and result.latency_ms == 5.0
    handed: list[tuple[CheckResult, Judged]] = []
    found = judging(handed)
    assert conclude(spec, result, at, found) is None
    assert found.states[1].slow == 1  # degraded, as the check said
    # The job (acknowledged after the reply was sent) and its reply are gone; nothing pending.
    await wait_for(lambda: _depth_is(redis, (0, 0)), timeout=2)
    await wait_for(lambda: _xlen_is(redis, dispatcher.reply_stream, 0), timeout=2)


async def test_without_a_worker_the_check_is_not_run_on_time(
    dispatcher: Dispatcher, redis: aioredis.Redis
) -> None:
    spec, row = monitor(1, "home", 1.0)
    dispatcher.rows[spec.id] = row
    at = datetime.now(UTC)
    began = time.monotonic()
    result = await dispatcher(spec, at)
    took = time.monotonic() - began
    assert result.failure is Failure.NOT_RUN and not result.ok, result
    assert result.error is not None, result
    assert result.error.startswith("not run: no worker took it within 4 s"), result
    assert 1.0 + keys.WORK_REPLY_MARGIN_SECONDS - 0.5 < took < 1.0 + keys.WORK_REPLY_MARGIN_SECONDS + 2.0
    handed: list[tuple[CheckResult, Judged]] = []
    found = judging(handed)
    conclude(spec, result, at, found)
    ((_, judged),) = handed
    assert found.states[1] == State("up") and judged.outcome.changes == () and judged.error == result.error
    # The job was taken off the queue: a worker started later does not run it for nobody.
    await wait_for(lambda: _xlen_is(redis, keys.work_stream("slow"), 0), timeout=2)


async def _depth_is(redis: aioredis.Redis, expected: tuple[int, int]) -> bool:
    return await depth(redis, "slow") == expected


async def _xlen_is(redis: aioredis.Redis, stream: str, n: int) -> bool:
    return int(await redis.xlen(stream)) == n


async def test_with_redis_unreachable_the_check_is_not_run_at_once() -> None:
    dead = aioredis.Redis(host="127.0.0.1", port=9, socket_connect_timeout=1, retry=Retry(NoBackoff(), 0))
    dispatcher = Dispatcher(dead)
    try:
        spec, row = monitor(1, "home", 10.0)
        dispatcher.rows[spec.id] = row
        began = time.monotonic()
        result = await dispatcher(spec, datetime.now(UTC))
        assert time.monotonic() - began < 3
        assert result.failure is Failure.NOT_RUN and result.error is not None
        assert result.error.startswith("not run: Redis is unreachable"), result.error
    finally:
        await dispatcher.close()
        await dead.aclose()


async def test_a_dead_workers_job_is_taken_over_and_answered_once(
    dispatcher: Dispatcher, workers: Start, redis: aioredis.Redis
) -> None:
    first = await workers()
    spec, row = monitor(1, "home", 20.0)
    dispatcher.rows[spec.id] = row
    at = datetime.now(UTC)
    waiting = asyncio.create_task(dispatcher(spec, at))
    await wait_for(lambda: len(Slow.started) == 1, timeout=5, message="the first worker started it")
    die(first)
    second = await workers()
    # The second takes it over once the first's claim lapsed (1 s), with its time left.
    await wait_for(lambda: len(Slow.started) == 2, timeout=10, message="taken over")
    assert second.running == 1 and Slow.started[1][1] == 20  # taken over in time for the whole 20 s
    Slow.gates["home"].set()
    result = await asyncio.wait_for(waiting, 10)
    assert result.ok and result.failure is None and result.time == at, result
    assert second.metrics.taken_over._value.get() == 1
    await wait_for(lambda: second.answered == 1, timeout=5)
    await wait_for(lambda: _depth_is(redis, (0, 0)), timeout=2)


async def test_a_dead_workers_job_with_too_little_time_left_is_not_run(
    dispatcher: Dispatcher, workers: Start
) -> None:
    first = await workers()
    spec, row = monitor(1, "home", 2.0)
    dispatcher.rows[spec.id] = row
    at = datetime.now(UTC)
    waiting = asyncio.create_task(dispatcher(spec, at))
    await wait_for(lambda: len(Slow.started) == 1, timeout=5)
    die(first)
    # The next worker comes when less than half of the 2 s would be left, the grace counted.
    late = at.timestamp() + 2.0 + keys.WORK_RUN_GRACE_SECONDS - 0.9
    await wait_for(lambda: time.time() > late, timeout=10)
    await workers()
    result = await asyncio.wait_for(waiting, 10)
    assert result.failure is Failure.NOT_RUN and result.error is not None, result
    assert result.error.startswith("not run: the worker running it stopped"), result.error
    assert len(Slow.started) == 1  # not run again


async def test_a_second_reply_to_a_tick_is_dropped(dispatcher: Dispatcher, redis: aioredis.Redis) -> None:
    """Two workers answering one job (one taken over while the first still lived): the first
    reply is the tick's result, the second finds nobody waiting."""
    spec, row = monitor(1, "home", 10.0)
    dispatcher.rows[spec.id] = row
    at = datetime.now(UTC)
    waiting = asyncio.create_task(dispatcher(spec, at))
    entries = await wait_for(lambda: redis.xrange(keys.work_stream("slow")), timeout=5)
    job = json.loads(entries[0][1][keys.WORK_FIELD.encode()])
    for ok in (False, True):
        reply = {"job": job["id"], "result": {"monitor_id": 1, "time": at.isoformat(), "ok": ok}}
        await redis.xadd(job["reply"], {keys.WORK_REPLY_FIELD: json.dumps(reply)})
    result = await asyncio.wait_for(waiting, 5)
    assert result.ok is False and result.failure is None
    assert dispatcher.waiting == 0


async def test_a_job_read_after_its_deadline_is_answered_not_run_and_acknowledged(
    workers: Start, redis: aioredis.Redis
) -> None:
    _spec, row = monitor(1, "home", 5.0)
    reply = keys.work_reply("test")
    job = {"id": "j1", "reply": reply, "kind": "slow", "time": datetime.now(UTC).isoformat(),
           "deadline": time.time() - 1, "row": row}  # fmt: skip
    await redis.xadd(keys.work_stream("slow"), {keys.WORK_FIELD: json.dumps(job)})
    await workers()
    answers = await wait_for(lambda: redis.xrange(reply), timeout=5)
    answer = json.loads(answers[0][1][keys.WORK_REPLY_FIELD.encode()])
    assert answer["job"] == "j1" and answer["result"]["failure"] == "not run"
    assert answer["result"]["error"].startswith("not run: no worker was free before its deadline")
    await wait_for(lambda: _depth_is(redis, (0, 0)), timeout=2)
    assert Slow.started == []


async def test_a_worker_registers_itself_and_leaves(
    settings: config.Settings, redis: aioredis.Redis, workers: Start
) -> None:
    from monitor.worker.presence import workers as listed

    worker = await workers()
    found = await wait_for(lambda: listed(redis), timeout=5)
    assert [(w["id"], w["kinds"], w["concurrency"]) for w in found] == [(worker.id, ["slow"], 2)]
    await worker.close()
    assert await listed(redis) == []


async def test_a_worker_whose_job_was_taken_stops_its_run_and_does_not_answer(
    dispatcher: Dispatcher, workers: Start, redis: aioredis.Redis
) -> None:
    worker = await workers()
    spec, row = monitor(1, "home", 20.0)
    dispatcher.rows[spec.id] = row
    waiting = asyncio.create_task(dispatcher(spec, datetime.now(UTC)))
    await wait_for(lambda: worker.running == 1 and len(Slow.started) == 1, timeout=5)
    ((kind, entry_id),) = list(worker._in_hand)
    # Another consumer holds it now (a worker that took it over while this one was frozen).
    await redis.xclaim(
        keys.work_stream(kind), keys.WORK_GROUP, "thief", min_idle_time=0, message_ids=[entry_id]
    )
    await wait_for(lambda: worker.running == 0, timeout=5, message="the run stopped")
    assert worker.metrics.claims_lost._value.get() == 1 and worker.answered == 0
    assert not waiting.done()
    waiting.cancel()


async def test_a_worker_stopping_hands_its_running_job_to_the_next_at_once(
    settings: config.Settings, dispatcher: Dispatcher, redis: aioredis.Redis
) -> None:
    patient = settings.model_copy(update={"worker_claim_idle_seconds": 60.0})  # no idle take-over
    first = Worker(patient, redis, registry(), browser=None, screenshots=None, block_ms=200)
    second = Worker(patient, redis, registry(), browser=None, screenshots=None, block_ms=200)
    await first.start()
    try:
        spec, row = monitor(1, "home", 20.0)
        dispatcher.rows[spec.id] = row
        waiting = asyncio.create_task(dispatcher(spec, datetime.now(UTC)))
        await wait_for(lambda: first.running == 1, timeout=5)
        await first.close()  # the shutdown timeout passed with the job running: handed back
        await second.start()
        await wait_for(lambda: second.running == 1, timeout=5, message="handed back and taken at once")
        Slow.gates["home"].set()
        result = await asyncio.wait_for(waiting, 10)
        assert result.ok and first.answered == 0
        await wait_for(lambda: second.answered == 1, timeout=5)
    finally:
        Slow.gates.setdefault("home", asyncio.Event()).set()
        await second.close()


async def test_a_trial_of_a_heavy_monitor_goes_to_a_worker(
    dispatcher: Dispatcher, workers: Start, redis: aioredis.Redis
) -> None:
    from monitor.checks import REGISTRY
    from monitor.scheduler.trials import Trials
    from monitor.secrets import SecretBox

    REGISTRY.register(Slow)  # the scheduler's registry knows the type too, as the worker's does
    try:
        await workers()
        Slow.gates["trial"] = asyncio.Event()
        Slow.gates["trial"].set()
        trials = Trials(redis, SecretBox.from_setting(TEST_SECRET_KEY), None, "me", dispatcher=dispatcher)  # type: ignore[arg-type]
        _spec, row = monitor(0, "trial", 5.0)
        answer = await trials.check(
            {k: v for k, v in row.items() if k not in ("id", "confirm_after", "paused")}
        )
        assert (answer["status"], answer["degraded"], answer["failure"]) == ("degraded", "lcp 3 s", None), (
            answer
        )
        assert Slow.started == [("trial", 5.0)]
    finally:
        del REGISTRY._checks[Slow.kind]


async def test_the_cluster_status_shows_the_queue_and_the_workers(
    dispatcher: Dispatcher, workers: Start, redis: aioredis.Redis
) -> None:
    from monitor.worker.status import QueueStatus, heavy_status

    spec, row = monitor(1, "home", 20.0)
    dispatcher.rows[spec.id] = row
    waiting = asyncio.create_task(dispatcher(spec, datetime.now(UTC)))
    await wait_for(lambda: _depth_is(redis, (1, 0)), timeout=5, message="one job waiting, none running")
    found, queues = await heavy_status(redis, ["slow"])
    assert found == [] and queues == [QueueStatus("slow", 1, 0)]
    worker = await workers()
    await wait_for(lambda: _depth_is(redis, (0, 1)), timeout=5, message="the job running")

    async def listed() -> bool:
        found, _ = await heavy_status(redis, ["slow"])
        return [(w.id, w.kinds, w.running) for w in found] == [(worker.id, "slow", "1/2")]

    await wait_for(listed, timeout=10, message="the worker listed with its job")
    Slow.gates["home"].set()
    assert (await asyncio.wait_for(waiting, 10)).ok
