"""What the kernel knows about a process and the cores: CPU time, resident memory, busy time.

Read from /proc, so the figures are the kernel's accounting and need no help from the
process being measured.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of ``pid`` and of its waited-for children, in seconds."""
    raw = Path(f"/proc/{pid}/stat").read_text()
    # The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    fields = raw[raw.rindex(")") + 2 :].split()
    # fields[0] is field 3 (state); utime, stime, cutime, cstime are fields 14..17.
    utime, stime, cutime, cstime = (int(f) for f in fields[11:15])
    return (utime + stime + cutime + cstime) / _TICK


def rss_kib(pid: int) -> int:
    """Resident set size (VmRSS) of ``pid`` in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid} (a zombie?)")


def maps_mention(pid: int, needle: str) -> bool:
    """Whether a file mapped into ``pid`` has ``needle`` in its path (e.g. a loaded extension)."""
    try:
        return needle in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


@dataclass(frozen=True)
class CoreTimes:
    """Busy and total jiffies of each core, from /proc/stat."""

    busy: tuple[int, ...]
    total: tuple[int, ...]

    @classmethod
    def read(cls) -> CoreTimes:
        busy: list[int] = []
        total: list[int] = []
        for line in Path("/proc/stat").read_text().splitlines():
            name, *values = line.split()
            if not (name.startswith("cpu") and name[3:].isdigit()):
                continue
            numbers = [int(v) for v in values[:8]]  # user nice system idle iowait irq softirq steal
            idle = numbers[3] + numbers[4]
            total.append(sum(numbers))
            busy.append(sum(numbers) - idle)
        return cls(tuple(busy), tuple(total))

    def busy_seconds_since(self, earlier: CoreTimes) -> list[float]:
        return [(now - before) / _TICK for now, before in zip(self.busy, earlier.busy, strict=True)]


def load_average() -> float:
    return os.getloadavg()[0]
