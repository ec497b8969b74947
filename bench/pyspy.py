"""Where the scheduler spends CPU: py-spy samples over the measured window, summarised.

py-spy samples the running process from outside (``--nonblocking``: it never stops it)
and drops idle samples, so shares are of the CPU the scheduler actually used. A frame's
time includes the C functions it calls (socket calls, the C parts of asyncpg or uvloop).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bench import process


def py_spy() -> str | None:
    here = Path(sys.executable).parent / "py-spy"
    return str(here) if here.exists() else shutil.which("py-spy")


def record(
    pid: int, seconds: float, out: Path, *, core: int | None, rate: int = 100, native: bool = False
) -> subprocess.Popen[bytes]:
    """Start sampling ``pid`` for ``seconds`` into ``out`` (collapsed stacks); returns the sampler."""
    binary = py_spy()
    if binary is None:
        raise RuntimeError("py-spy not found: .venv/bin/pip install py-spy")
    # --native needs py-spy to pause the process for each sample (a few µs at 100 Hz).
    argv = [binary, "record", *([] if native else ["--nonblocking"]), "--format", "raw", "--nolineno"]
    argv += ["--rate", str(rate), "--duration", str(max(1, round(seconds))), "--output", str(out)]
    argv += ["--pid", str(pid), *(["--native"] if native else [])]
    return process.spawn(argv, log=out.with_suffix(".log"), core=core)


@dataclass
class Summary:
    samples: int = 0
    self_by_function: Counter[str] = field(default_factory=Counter)
    self_by_package: Counter[str] = field(default_factory=Counter)
    # Each sample counted once per monitor/ function on its stack (inclusive time).
    inclusive_ours: Counter[str] = field(default_factory=Counter)

    def share(self, n: int) -> float:
        return round(100 * n / self.samples, 1) if self.samples else 0.0

    def as_dict(self, top: int = 15) -> dict[str, object]:
        def table(counter: Counter[str]) -> list[list[object]]:
            return [[name, self.share(n)] for name, n in counter.most_common(top)]

        return {
            "samples": self.samples,
            "self_pct_by_function": table(self.self_by_function),
            "self_pct_by_package": table(self.self_by_package),
            "inclusive_pct_monitor": table(self.inclusive_ours),
        }


def _package(path: str) -> str:
    # py-spy shortens paths to their import root: "aiohttp/client.py", "asyncio/events.py".
    parts = path.split("/")
    if parts[0] == "monitor" and len(parts) > 2:
        return "/".join(parts[:2])  # monitor/scheduler, monitor/net, ...
    if len(parts) == 1:
        return parts[0].removesuffix(".py")
    return parts[0]


def _frame(text: str) -> tuple[str, str]:
    name, _, rest = text.rpartition(" (")
    return name, rest.rstrip(")")


def summarise(raw: Path) -> Summary:
    if not raw.exists():
        log = raw.with_suffix(".log")
        said = log.read_text(errors="replace")[-500:] if log.exists() else "no output"
        raise RuntimeError(f"py-spy wrote no samples: {said.strip()}")
    summary = Summary()
    for line in raw.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_frame(f) for f in stack.split(";")]
        summary.samples += count
        name, path = frames[-1]
        summary.self_by_function[f"{name} ({path})"] += count
        summary.self_by_package[_package(path)] += count
        for ours in {f"{n} ({p})" for n, p in frames if p.startswith("monitor/")}:
            summary.inclusive_ours[ours] += count
    return summary


def render(summary: Summary, top: int = 12) -> str:
    lines = [f"profile: {summary.samples} samples of CPU use"]
    for title, counter in (
        ("self time by package", summary.self_by_package),
        ("self time by function", summary.self_by_function),
        ("inclusive time, monitor/ functions", summary.inclusive_ours),
    ):
        lines.append(f"  {title}:")
        lines += [f"    {summary.share(n):5.1f}%  {name}" for name, n in counter.most_common(top)]
    return "\n".join(lines)
