"""Micro-benchmark of the connectivity guard's per-check cost: ``Guard.record``.

The scheduler calls ``record`` once for every check, so it must stay small next to a check's
own CPU (0.2-0.3 ms, bench/README.md). This replays a steady stream of check results: N
monitors checked round robin at ``--rate`` checks per second of simulated time, ``--failing``
of them failing, through a guard with a ``--window`` of seconds, so its deque holds
``rate x window`` entries and every call expires about one. The stream is built beforehand;
the timing covers the calls alone (the loop and the call included, as the scheduler pays
them). No services are needed.

    python -m bench.connectivity [--monitors 10000] [--rate 333] [--window 60] [--calls 1000000]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from monitor.scheduler.connectivity import Guard, share_verdict


def stream(args: argparse.Namespace) -> list[tuple[int, bool, float]]:
    rng = random.Random(13)
    step = 1.0 / args.rate
    return [
        (i % args.monitors, rng.random() >= args.failing, 1_000_000.0 + i * step) for i in range(args.calls)
    ]


def measure(args: argparse.Namespace) -> dict[str, Any]:
    checks = stream(args)
    per_call: list[float] = []
    sizes: list[int] = []
    for _ in range(args.repeat):
        guard = Guard(window=args.window)
        # Fill the window first, so the timed calls expire as many entries as they add.
        warm = int(args.rate * args.window)
        for monitor_id, ok, at in checks[:warm]:
            guard.record(monitor_id, ok, at)
        record = guard.record
        timed = checks[warm:]
        started = time.perf_counter_ns()
        for monitor_id, ok, at in timed:
            record(monitor_id, ok, at)
        per_call.append((time.perf_counter_ns() - started) / len(timed))
        sizes.append(len(guard._entries))
    # The share test itself, as cut_off runs it (expiry included).
    now = checks[-1][2]
    started = time.perf_counter_ns()
    for _ in range(10_000):
        failing, seen = guard.counts(now)
        share_verdict(failing, seen, min_monitors=5, failing_share=0.8)
    verdict_ns = (time.perf_counter_ns() - started) / 10_000
    return {
        "monitors": args.monitors,
        "rate": args.rate,
        "window_s": args.window,
        "calls": len(checks) - int(args.rate * args.window),
        "record_ns_min": round(min(per_call), 1),
        "record_ns_median": round(statistics.median(per_call), 1),
        "window_entries": max(sizes),
        "monitors_in_window": guard.counts(now)[1],
        "share_test_ns": round(verdict_ns, 1),
        "python": sys.version.split()[0],
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.connectivity", description=__doc__.split("\n\n")[0])
    add = p.add_argument
    add("--monitors", type=int, default=10_000, help="monitors the checks are spread over")
    add("--rate", type=float, default=333.0, help="checks per second (simulated time)")
    add("--window", type=float, default=60.0, help="the guard's window, s")
    add("--failing", type=float, default=0.1, help="share of checks that fail")
    add("--calls", type=int, default=1_000_000, help="record calls per repeat (the window's fill included)")
    add("--repeat", type=int, default=5)
    add("--json", type=Path, default=None, help="write the result here too")
    args = p.parse_args(argv)
    if args.monitors < 1 or args.rate <= 0 or args.window <= 0 or args.calls <= args.rate * args.window:
        p.error("--monitors, --rate and --window must be positive, --calls more than rate x window")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    result = measure(args)
    print(
        f"record: {result['record_ns_min']} ns a call (median of {args.repeat}: "
        f"{result['record_ns_median']} ns), {result['window_entries']} entries and "
        f"{result['monitors_in_window']} monitors in the window; share test {result['share_test_ns']} ns"
    )
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
