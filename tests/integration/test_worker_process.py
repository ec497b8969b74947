"""``monitor worker`` as a process: it starts with Redis and the secret key alone, answers its
probes (/healthz, /readyz, /metrics), registers in Redis (``monitor cluster status`` lists it),
and stops cleanly on SIGTERM with one summary line, leaving the registry."""

from __future__ import annotations

import asyncio
import sys

import aiohttp
import pytest
import redis.asyncio as aioredis
from support import ProcessFactory, wait_for
from support.procs import clean_environ

from monitor.worker.presence import workers

pytestmark = pytest.mark.timeout(90)


async def _cluster_status(env: dict[str, str]) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "monitor", "cluster", "status",
        env=clean_environ() | env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()
    return out.decode()


async def test_a_worker_serves_its_probes_registers_and_stops_cleanly(
    procs: ProcessFactory, redis_client: aioredis.Redis, base_env: dict[str, str]
) -> None:
    await redis_client.flushdb()
    worker = await procs.start("worker", env={"MONITOR_DATABASE_URL": None})
    async with aiohttp.ClientSession() as session:
        for path in ("/healthz", "/readyz"):
            async with session.get(worker.base_url + path) as answer:
                assert answer.status == 200, (path, await answer.text())
        async with session.get(worker.base_url + "/metrics") as answer:
            text = await answer.text()
    for metric in (
        "monitor_worker_jobs_total",
        "monitor_worker_running",
        "monitor_worker_job_duration_seconds",
    ):
        assert metric in text, text
    (found,) = await wait_for(lambda: workers(redis_client), timeout=10)
    assert found["pid"] == worker.pid and found["concurrency"] == 2, found
    status = await _cluster_status({k: base_env[k] for k in ("MONITOR_DATABASE_URL", "MONITOR_REDIS_URL")})
    assert found["id"] in status and "0/2" in status, status
    assert await worker.terminate() == 0
    (stopped,) = worker.events("worker.stopped")
    assert stopped["clean"] is True and stopped["abandoned"] == [], stopped
    assert await workers(redis_client) == []
