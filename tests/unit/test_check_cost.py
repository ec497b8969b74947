"""What a quiet check costs, counted in Python function calls, so that a regression fails here
and not only in a benchmark on a quiet machine (issue 26).

A quiet check: an http monitor that is up, checked again and found up (a GET of a loopback
server answering ``200 ok``), through the real path of a tick (``ticker.check``: slot, check
type, fetch, judging, metrics, the writer's ``add``). The count is of calls of this project's
Python functions (``sys.setprofile``'s ``call`` events: functions, coroutine steps and generator
resumptions, in ``monitor/``) in the loop's thread while batches of checks run; the server
answers from a thread of its own, which the profile does not see. CPU time could not be bounded
on a shared machine; calls can, and they go with it (bench/README.md, "Issue 26: cost per
check", where ``bench.instructions`` counts the instructions).
"""

from __future__ import annotations

import asyncio
import collections
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import monitor
from monitor.aio import Slots
from monitor.checks import REGISTRY, CheckContext
from monitor.models import MonitorSpec
from monitor.net.client import make_session
from monitor.net.policy import AddressPolicy
from monitor.net.resolver import VettedResolver
from monitor.scheduler import ticker
from monitor.scheduler.judging import Judging
from monitor.scheduler.metrics import SchedulerMetrics
from monitor.scheduler.writer import Writer

# Python calls per quiet check, measured 2026-12-02: 72 (branch i26-perf2: the head scanned
# without _may_be_http, _head_end and _parse_head calls; 75 with the up-and-staying-up
# shortcut in state.step, no certificate look-up without details, the writer without
# Outcome.__bool__ and streak_record; before: 83 on i26-perf, 86 before the
# HTTP/1.1 hop dialled without a coroutine of its own). The bound leaves room for a few calls
# more; a change that adds more than that should say why here.
MOST_CALLS_PER_CHECK = 75
BATCH = 10
# Only this project's functions: the loop's own (asyncio's in tests, uvloop's C in the
# scheduler) and the standard library's differ with the loop and the Python version.
OURS = str(Path(monitor.__file__).parent)


class _Ok(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", "2")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _spec(monitor_id: int, url: str) -> MonitorSpec:
    return MonitorSpec(
        id=monitor_id,
        name=f"m{monitor_id}",
        type="http",
        url=url,
        interval_seconds=10.0,
        timeout_seconds=5.0,
        confirm_after=1,
        paused=False,
        options=REGISTRY.get("http").options({}, {}),
    )


async def test_a_quiet_check_makes_few_python_calls(server: str) -> None:
    policy = AddressPolicy(("127.0.0.1/32",))
    session = make_session(VettedResolver(policy, ()))
    metrics = SchedulerMetrics()
    writer = Writer(None, batch_rows=10**9, metrics=metrics)  # type: ignore[arg-type]  # never flushed
    shared = ticker.TickerShared(
        ctx=CheckContext(session=session, policy=policy),
        metrics=metrics,
        limit=Slots(100),
        judging=Judging(writer.add, metrics),
    )
    specs = [_spec(i + 1, server) for i in range(BATCH)]

    async def batch() -> None:
        due = time.time()
        await asyncio.gather(*(ticker.check(s, shared, due) for s in specs))

    try:
        for _ in range(3):  # warm: the target's memo, the first states (unknown -> up)
            await batch()
        calls: collections.Counter[str] = collections.Counter()

        def count(frame: FrameType, event: str, arg: object) -> None:
            if event == "call" and frame.f_code.co_filename.startswith(OURS):
                calls[f"{frame.f_code.co_filename}:{frame.f_code.co_name}"] += 1

        rounds = 5
        sys.setprofile(count)
        try:
            for _ in range(rounds):
                await batch()
        finally:
            sys.setprofile(None)
    finally:
        await session.close()
    up = metrics.registry.get_sample_value("monitor_checks_total", {"result": "up"})
    assert up == (3 + rounds) * BATCH
    assert all(shared.judging.states[s.id].status == "up" for s in specs)
    per_check = sum(calls.values()) / (rounds * BATCH)
    top = ", ".join(f"{k.rsplit('/', 1)[-1]} {v / (rounds * BATCH):g}" for k, v in calls.most_common(12))
    assert per_check <= MOST_CALLS_PER_CHECK, f"{per_check:g} Python calls per quiet check; most: {top}"
