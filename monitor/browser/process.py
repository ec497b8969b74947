"""A browser's processes as the kernel sees them: started in a group of their own, measured and
killed through ``/proc``, none left behind.

Chromium is a tree of processes (the browser, a zygote, renderers, the GPU and network
utilities); every one of them stays in the process group of the browser (``setsid`` at start),
so the group is what is measured and killed. A process that left it (a crash handler that
detaches) still carries the run's marker in its environment, and is found by that
(``members``). The memory a run uses is the sum of its processes' proportional set size
(``Pss`` in ``/proc/PID/smaps_rollup``: shared pages counted once over the processes that
share them, what the run costs the machine); RSS, which counts each shared page once per
process, would read about twice as much for the same run. A kernel without smaps_rollup
(before 4.14) is measured by RSS, which errs on the safe side.

The browser gets ``PR_SET_PDEATHSIG``: when the worker that started it dies, even SIGKILLed,
the kernel kills the browser, and its children end with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

__all__ = ["MARKER", "kill", "launch", "members", "memory_bytes", "read_devtools_port"]

MARKER = "MONITOR_BROWSER_RUN"  # environment variable naming one run's processes
_PR_SET_PDEATHSIG = 1
_PAGE = os.sysconf("SC_PAGE_SIZE")
_PROC = Path("/proc")


def _child_setup(nice: int) -> Callable[[], None]:
    """What runs in the child between fork and exec: the nice level and the death signal
    (prepared here: nothing may be loaded after the fork)."""
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl

    def setup() -> None:
        if nice:
            os.nice(nice)
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)

    return setup


async def launch(
    argv: Sequence[str], *, marker: str, nice: int, stderr: int, env: dict[str, str] | None = None
) -> asyncio.subprocess.Process:
    """Start ``argv`` in a session (and process group) of its own, niced, marked with
    ``MARKER=marker`` in its environment, its output to ``stderr`` (a file descriptor)."""
    environment = dict(os.environ if env is None else env)
    environment[MARKER] = marker
    return await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=stderr,
        stderr=stderr,
        env=environment,
        start_new_session=True,
        preexec_fn=_child_setup(nice),  # nice and prctl only: nothing that takes a lock
    )


def _pids() -> Iterable[int]:
    for entry in os.scandir(_PROC):
        if entry.name.isdigit():
            yield int(entry.name)


def _group_of(pid: int) -> int | None:
    """The process group of a live process; None for a zombie (dead, only its exit status
    left for a parent to collect: it holds no memory and runs nothing) or one gone."""
    try:
        stat = (_PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses, so cut at the last ")".
    fields = stat[stat.rfind(b")") + 2 :].split()
    if len(fields) < 3 or fields[0] in (b"Z", b"X"):
        return None
    return int(fields[2])


def _marked(pid: int, needle: bytes) -> bool:
    try:
        # A zombie's environ reads empty: only live processes match.
        return needle in (_PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return False


def members(pgid: int, marker: str | None = None) -> list[int]:
    """The live processes of group ``pgid``, and (with ``marker``) every process carrying the
    marker in its environment, wherever it went."""
    needle = f"{MARKER}={marker}\0".encode() if marker else None
    found = []
    for pid in _pids():
        if _group_of(pid) == pgid or (needle is not None and _marked(pid, needle)):
            found.append(pid)
    return found


def _pss(pid: int) -> int | None:
    try:
        text = (_PROC / str(pid) / "smaps_rollup").read_text()
    except FileNotFoundError:
        return None  # no such process, or a kernel without smaps_rollup: the caller falls back
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) * 1024
    return 0


def _rss(pid: int) -> int:
    try:
        return int((_PROC / str(pid) / "statm").read_text().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


def memory_bytes(pids: Iterable[int]) -> int:
    """The memory ``pids`` use together: the sum of their Pss (RSS where there is none)."""
    total = 0
    for pid in pids:
        pss = _pss(pid)
        total += _rss(pid) if pss is None else pss
    return total


def kill(pgid: int, marker: str | None = None) -> list[int]:
    """SIGKILL the group and every marked process; the pids signalled."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    pids = members(pgid, marker)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    return pids


def read_devtools_port(profile: Path) -> tuple[int, str] | None:
    """The DevTools port and browser endpoint path Chromium wrote (``DevToolsActivePort`` in
    its profile: the port, then ``/devtools/browser/<id>``), or None until it has."""
    try:
        lines = (profile / "DevToolsActivePort").read_text().split("\n")
    except OSError:
        return None
    if len(lines) < 2 or not lines[0].strip().isdigit() or not lines[1].startswith("/devtools/"):
        return None  # written but not yet complete
    return int(lines[0]), lines[1].strip()
