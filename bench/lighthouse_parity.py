"""Our Lighthouse figures against hand runs of the same CLI, and what a page-speed run costs.

``python -m bench.lighthouse_parity [--runs 5] [--pages /,/slow] [--json PATH]`` serves the local
site of tests/support/lighthouse_pages.py on 127.0.0.1 and, for each page, makes ``--runs`` runs
each way, alternating so that the machine's load falls on both alike:

- **hand**: the pinned CLI as a person runs it, launching its own Chromium
  (``CHROME_PATH=/usr/bin/chromium node cli/index.js URL --output=json --chrome-flags=
  "--headless=new"``, plus the same ``--only-categories``, ``--skip-audits``,
  ``--disable-full-page-screenshot`` and ``--max-wait-for-load`` as ours);
- **ours**: ``monitor.browser.lighthouse.run_lighthouse`` on a ``Chromium.run`` (the worker's
  launcher: vetting proxy in front, niced, throwaway profile), as ``PageSpeedCheck.execute`` does.

For each metric and score it prints the hand runs' spread (min..max) and ours, and whether our
median falls within the hand runs' spread; per run of ours its wall time, its CPU (Chromium and
node, reaped children: ``RUSAGE_CHILDREN``), Chromium's peak Pss (the watchdog's reading) and
node's peak RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from monitor.browser.chromium import DEFAULT_EXECUTABLE, Chromium
from monitor.browser.lighthouse import LighthouseRun, command, find_cli, lighthouse_args, run_lighthouse
from monitor.checks import lighthouse_report as lr
from monitor.net.policy import AddressPolicy
from monitor.net.resolver import VettedResolver

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.lighthouse_pages import serve

FIGURES = lr.FIGURES


def figures(report: dict[str, Any]) -> dict[str, float | None]:
    read = lr.read(report)
    return {name: read.figure(name) for name in FIGURES}


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def hand_run(cli: str, asked: LighthouseRun) -> dict[str, Any]:
    """The CLI as a person runs it: its own Chromium (chrome-launcher), same audits as ours."""
    with tempfile.TemporaryDirectory(prefix="lh-hand-") as home:
        output = Path(home) / "report.json"
        args = [a for a in lighthouse_args(asked, 0, output) if not a.startswith(("--hostname", "--port"))]
        flags = "--headless=new" + (" --no-sandbox" if os.geteuid() == 0 else "")
        env = {**os.environ, "CHROME_PATH": DEFAULT_EXECUTABLE, "HOME": home}
        proc = await asyncio.create_subprocess_exec(
            *command(cli), *args, f"--chrome-flags={flags}", env=env,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        await proc.wait()
        report: dict[str, Any] = json.loads(output.read_text())
        return report


async def our_run(
    cli: str, chromium: Chromium, asked: LighthouseRun
) -> tuple[dict[str, Any], dict[str, float]]:
    cpu, began = children_cpu(), time.monotonic()
    async with chromium.run(120) as run:
        report = await run_lighthouse(cli, asked, run.devtools_port)
        peak = run.peak_memory_mb
    cost = {"wall_s": time.monotonic() - began, "cpu_s": children_cpu() - cpu, "chromium_pss_mib": peak,
            "children_maxrss_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}  # fmt: skip
    return report, cost


def spread(values: list[float | None]) -> tuple[float, float, float] | None:
    got = [v for v in values if v is not None]
    return (min(got), statistics.median(got), max(got)) if got else None


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pages", default="/,/slow")
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    cli = find_cli(os.environ.get("MONITOR_LIGHTHOUSE_PATH"))
    if cli is None:
        sys.exit("no Lighthouse CLI: make browser-tools")
    resolver = VettedResolver(AddressPolicy(["127.0.0.1/32"]))
    chromium = Chromium(resolver, memory_mb=1536)
    out: dict[str, Any] = {}
    try:
        async with serve() as base:
            for page in options.pages.split(","):
                asked = LighthouseRun(base + page.lstrip("/"))
                hand: list[dict[str, float | None]] = []
                ours: list[dict[str, float | None]] = []
                costs: list[dict[str, float]] = []
                for _ in range(options.runs):
                    hand.append(figures(await hand_run(cli, asked)))
                    report, cost = await our_run(cli, chromium, asked)
                    ours.append(figures(report))
                    costs.append(cost)
                out[page] = table(page, hand, ours, costs)
    finally:
        await chromium.close()
        await resolver.close()
    if options.json:
        options.json.write_text(json.dumps(out, indent=1))


def table(
    page: str,
    hand: list[dict[str, float | None]],
    ours: list[dict[str, float | None]],
    costs: list[dict[str, float]],
) -> dict[str, Any]:
    print(f"\n{page}: {len(hand)} hand runs, {len(ours)} of ours")
    print(f"{'figure':<16}{'hand min..max (median)':>34}{'ours min..max (median)':>34}  ours' median within")
    rows: dict[str, Any] = {}
    for name in FIGURES:
        h, o = spread([r[name] for r in hand]), spread([r[name] for r in ours])
        inside = h is not None and o is not None and h[0] <= o[1] <= h[2]
        fmt = (lambda t: f"{t[0]:.3g}..{t[2]:.3g} ({t[1]:.3g})") if name in lr.SCORES or name == "cls" else (
            lambda t: f"{t[0]:.0f}..{t[2]:.0f} ({t[1]:.0f})")  # fmt: skip
        print(f"{name:<16}{fmt(h) if h else '-':>34}{fmt(o) if o else '-':>34}  {'yes' if inside else 'NO'}")
        rows[name] = {"hand": h, "ours": o, "within": inside}
    for key in ("wall_s", "cpu_s", "chromium_pss_mib", "children_maxrss_mib"):
        values = [c[key] for c in costs]
        print(f"ours {key}: {min(values):.1f}..{max(values):.1f} (median {statistics.median(values):.1f})")
    rows["cost"] = costs
    return rows


if __name__ == "__main__":
    asyncio.run(main())
