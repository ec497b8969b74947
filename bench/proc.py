"""What the kernel knows about a process and the cores: CPU time, resident memory, busy time.

Read from /proc, so the figures are the kernel's accounting and need no help from the
process being measured.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Cpu:
    """CPU seconds of a process and its waited-for children, in user and in kernel mode."""

    user: float
    system: float

    @property
    def total(self) -> float:
        return self.user + self.system

    def __sub__(self, other: Cpu) -> Cpu:
        return Cpu(self.user - other.user, self.system - other.system)


def cpu(pid: int) -> Cpu:
    raw = Path(f"/proc/{pid}/stat").read_text()
    # The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    fields = raw[raw.rindex(")") + 2 :].split()
    # fields[0] is field 3 (state); utime, stime, cutime, cstime are fields 14..17.
    utime, stime, cutime, cstime = (int(f) for f in fields[11:15])
    return Cpu((utime + cutime) / _TICK, (stime + cstime) / _TICK)


def thread_cpu(pid: int) -> dict[int, tuple[str, float]]:
    """CPU seconds (user + system) of each thread of ``pid``: {tid: (name, seconds)}."""
    out: dict[int, tuple[str, float]] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            raw = (task / "stat").read_text()
        except OSError:
            continue  # the thread ended meanwhile
        name = raw[raw.index("(") + 1 : raw.rindex(")")]
        fields = raw[raw.rindex(")") + 2 :].split()
        out[int(task.name)] = (name, (int(fields[11]) + int(fields[12])) / _TICK)
    return out


def thread_cpu_delta(
    before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]]
) -> dict[str, float]:
    """CPU seconds used between two :func:`thread_cpu` readings, summed by thread name
    (threads that ended in between are missing from both: their time is not counted)."""
    by_name: dict[str, float] = {}
    for tid, (name, seconds) in after.items():
        used = seconds - before.get(tid, (name, 0.0))[1]
        by_name[name] = round(by_name.get(name, 0.0) + used, 3)
    return by_name


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


@dataclass(frozen=True)
class Task:
    """One process as /proc shows it: its parent, name, command line and own CPU seconds so far
    (not its waited-for children's: a shell would count a whole test run when it ends)."""

    ppid: int
    comm: str
    cmdline: str  # empty for a kernel thread
    cpu_s: float


def processes() -> dict[int, Task]:
    """Every process on the machine (the ones that end meanwhile are skipped)."""
    out: dict[int, Task] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2 :].split()
        out[int(entry.name)] = Task(
            ppid=int(fields[1]),
            comm=raw[raw.index("(") + 1 : raw.rindex(")")],
            cmdline=cmdline.strip(),
            cpu_s=(int(fields[11]) + int(fields[12])) / _TICK,  # its own, not its children's
        )
    return out


def interrupt_seconds() -> float:
    """Time all cores spent serving interrupts (irq and softirq: loopback traffic is mostly
    softirq), which /proc/stat counts as busy but no process's CPU time includes."""
    for line in Path("/proc/stat").read_text().splitlines():
        name, *values = line.split()
        if name == "cpu":
            return (int(values[5]) + int(values[6])) / _TICK
    return 0.0
