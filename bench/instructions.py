"""Instructions per check: the cost of one quiet HTTP check, counted by valgrind, not timed.

CPU seconds per 1,000 checks (``bench.scheduler``) move by 10-30 % from run to run on a shared
machine: other sessions' work lands on the scheduler's core, evicts its caches and slows its
clock. Instructions do not: ``valgrind --tool=callgrind`` counts every instruction the process
executes, whatever else runs, so two codes can be compared on a loaded machine to a fraction of a
per cent. What it does not see: time in the kernel (the socket calls are counted up to the
syscall instruction only), cache misses and the scheduler's fixed per-second work (cluster
rounds, timers); ``bench.scheduler`` measures those.

Each measurement runs a child process under callgrind that performs checks in-process through
the real path of a tick, ``ticker.check`` (slot, check type, judging, metrics, the writer's
``add`` with its row and state encoding; no database write): a GET of an nginx (or, with
``--target aiohttp``, an aiohttp server in a process of its own) on loopback answering ``200
ok``, judged by its status, every check succeeding (the quiet path). Checks go in batches of
``--batch`` at once, as a tick slot's do (``asyncio.gather``). The child runs twice, with
``--warm`` checks and with ``--warm + --checks``: the difference over ``--checks`` is the cost
of one check, with the start-up, imports and first checks (TLS and resolver caches, the
first target's) left out.

    python -m bench.instructions [--checks 2000] [--warm 300] [--batch 10] [--rev COMMIT]
        [--target nginx|aiohttp] [--json PATH] [--keep]

``--rev`` measures a commit's ``monitor/`` as ``bench.scheduler`` does (``git archive`` into a
temporary directory); the child adapts to the ticker of older commits (``MonitorTicker._check``,
before ``ticker.check`` became a function). ``PYTHONHASHSEED=0`` so that dict and set layouts
repeat.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CHILD = r"""
import asyncio, dataclasses, sys, time
from datetime import UTC, datetime

url, count, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

from monitor.aio import Slots
from monitor.checks import CheckContext
from monitor.models import MonitorSpec
from monitor.net.client import make_session
from monitor.net.policy import AddressPolicy
from monitor.net.resolver import VettedResolver
from monitor.scheduler import ticker
from monitor.scheduler.metrics import SchedulerMetrics
from monitor.scheduler.writer import Writer

KNOWN = {
    "name": "bench", "type": "http", "url": url, "interval_seconds": 10.0, "timeout_seconds": 5.0,
    "confirm_after": 1, "paused": False, "expected_status": ((200, 299),), "follow_redirects": True,
}


def spec(monitor_id):
    given = {"id": monitor_id}
    for f in dataclasses.fields(MonitorSpec):
        no_default = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if f.name in KNOWN and (no_default or f.name == "type"):
            given[f.name] = KNOWN[f.name]
    made = MonitorSpec(**given)
    from monitor.checks import REGISTRY
    kind = REGISTRY.get("http")
    options = getattr(kind, "options", None)
    if callable(options) and hasattr(made, "options"):
        # the type's runtime options from its stored (default) settings, as a load makes them
        made = dataclasses.replace(made, options=options({}, {}))
    return made


async def main():
    allow = ("127.0.0.1/32",)
    policy = AddressPolicy(allow)
    session = make_session(VettedResolver(policy, ()))
    metrics = SchedulerMetrics()
    writer = Writer(None, batch_rows=10**9, max_buffered=10**9, metrics=metrics)
    fields = {f.name for f in dataclasses.fields(ticker.TickerShared)}
    kwargs = dict(ctx=CheckContext(session=session, policy=policy), sink=writer.add,
                  metrics=metrics, limit=Slots(100))
    if "judging" in fields:  # since issue 27: what judging needs travels apart from the ticker's
        from monitor.scheduler.judging import Judging
        kwargs["judging"] = Judging(writer.add, metrics)
    shared = ticker.TickerShared(**{k: v for k, v in kwargs.items() if k in fields})
    specs = [spec(i + 1) for i in range(batch)]
    if hasattr(ticker, "check"):
        def one(s, due):
            return ticker.check(s, shared, due)
    else:  # before ticker.check: the ticker's own method
        made = {s.id: ticker.MonitorTicker(s, shared) for s in specs}
        def one(s, due):
            return made[s.id]._check(due)
    done = 0
    while done < count:
        due = time.time()
        await asyncio.gather(*(one(s, due) for s in specs[: count - done]))
        done += min(batch, count - done)
        writer._rows.clear()
        transitions = getattr(writer, "_transitions", None)
        if transitions is not None:
            transitions.clear()
    up = metrics.registry.get_sample_value("monitor_checks_total", {"result": "up"})
    print("checks_up", up, flush=True)
    await session.close()


try:
    import uvloop
    uvloop.run(main())
except ImportError:
    asyncio.run(main())
"""

AIOHTTP_TARGET = r"""
import sys
from aiohttp import web
app = web.Application()
app.router.add_get("/", lambda request: web.Response(text="ok"))
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
"""


def _instructions(out: Path) -> int:
    """The ``summary:`` (or ``totals:``) Ir of a callgrind output file."""
    text = out.read_text()
    match = re.search(r"^(?:summary|totals):\s+(\d+)", text, re.M)
    if match is None:
        raise RuntimeError(f"no totals in {out}")
    return int(match.group(1))


def _run_child(src: Path, url: str, count: int, batch: int, tmp: Path, tag: str) -> int:
    out = tmp / f"callgrind.{tag}.out"
    script = tmp / "child.py"
    script.write_text(CHILD)
    env = {**os.environ, "PYTHONPATH": str(src), "PYTHONHASHSEED": "0", "MONITOR_LOG_LEVEL": "warning"}
    argv = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out}",
        "--dump-instr=no",
        sys.executable,
        str(script),
        url,
        str(count),
        str(batch),
    ]
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    if done.returncode != 0 or "checks_up" not in done.stdout:
        raise RuntimeError(f"child failed ({done.returncode}):\n{done.stdout}\n{done.stderr[-3000:]}")
    said = float(done.stdout.split("checks_up")[1].split()[0])
    if said != count:
        raise RuntimeError(f"only {said:g} of {count} checks were up:\n{done.stderr[-3000:]}")
    return _instructions(out)


def _measure(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    from bench.nginx import Nginx, free_port
    from bench.scheduler import source_tree

    src, code = source_tree(args.rev, tmp)
    target: Any = None
    server: subprocess.Popen[bytes] | None = None
    try:
        if args.target == "nginx":
            target = Nginx(tmp / "nginx", core=None)
            asyncio.run(target.start())
            url = target.url
        else:
            port = free_port()
            server = subprocess.Popen([sys.executable, "-c", AIOHTTP_TARGET, str(port)])
            url = f"http://127.0.0.1:{port}/"
            _wait_listening(port)
        started = time.monotonic()
        low = _run_child(src, url, args.warm, args.batch, tmp, "warm")
        high = _run_child(src, url, args.warm + args.checks, args.batch, tmp, "measured")
        took = time.monotonic() - started
    finally:
        if target is not None:
            target.stop()
        if server is not None:
            server.terminate()
            server.wait(10)
    per_check = (high - low) / args.checks
    return {
        "code": code,
        "target": args.target,
        "checks": args.checks,
        "warm": args.warm,
        "batch": args.batch,
        "instructions_warm": low,
        "instructions_measured": high,
        "instructions_per_check": round(per_check),
        "took_s": round(took, 1),
    }


def _wait_listening(port: int, within: float = 10.0) -> None:
    import socket

    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"the aiohttp target did not listen on {port}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.instructions", description=__doc__.split("\n")[0])
    parser.add_argument("--checks", type=int, default=2000, help="checks measured (beyond --warm)")
    parser.add_argument("--warm", type=int, default=300, help="checks of the baseline run (left out)")
    parser.add_argument("--batch", type=int, default=10, help="checks started together, as in one tick slot")
    parser.add_argument("--rev", default=None, help="measure this commit's monitor/ (default: the work tree)")
    parser.add_argument("--target", choices=("nginx", "aiohttp"), default="nginx")
    parser.add_argument("--json", type=Path, default=None, help="also write the result here")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="bench-instructions-"))
    try:
        result = _measure(args, tmp)
    finally:
        if not args.keep:
            subprocess.run(["rm", "-rf", str(tmp)], check=False)
        else:
            print(f"kept {tmp}", file=sys.stderr)
    print(
        f"{result['code']}: {result['instructions_per_check']:,} instructions per quiet check "
        f"({result['checks']} checks in batches of {result['batch']}, target {result['target']}, "
        f"{result['took_s']} s)"
    )
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
