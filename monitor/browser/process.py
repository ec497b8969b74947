"""A browser's processes as the kernel sees them: started in a group of their own, measured and
killed through ``/proc``, none left behind.

Chromium is a tree of processes (the browser, a zygote, renderers, the GPU and network
utilities) in the process group of the browser (``setsid`` at start), so the group is what is
measured and killed. Debian's build also starts ``chrome_crashpad_handler`` (even with
``--disable-breakpad``), which makes a session of its own; it still carries the run's marker
in its environment, and is found by that (``members``).

The memory a run uses is the sum of its processes' proportional set size (``Pss`` in
``/proc/PID/smaps_rollup``: a shared page counted once over the processes that share it, what
the run costs the machine); RSS, which counts a shared page once per process, reads 2.4 times
as much (a blank page here: 373 MiB Pss, 903 MiB RSS, 9 processes). A kernel without
smaps_rollup (before 4.14) is measured by RSS, which errs on the safe side. The watchdog
measures the group only (a scan of ``/proc/*/stat``: 1.3 ms for 117 processes; reading every
environment for the marker takes 3.5 ms): the crash handler's few MiB are left out of the
sum, never out of the kill.

The nice level holds for every thread: Chromium raises the priority of its UI and compositor
threads (nice -8) where it may, which as root it may through ``CAP_SYS_NICE``; the browser is
started without that capability, so each of its threads stays at the run's nice level or below.

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

__all__ = ["MARKER", "environment", "kill", "launch", "members", "memory_bytes", "read_devtools_port"]

MARKER = "MONITOR_BROWSER_RUN"  # environment variable naming one run's processes
# What a browser inherits of the worker's environment: nothing else, so no secret of the worker
# (MONITOR_SECRET_KEY, a database URL with its password) is in any of its processes'
# environment, where a page that broke out of its renderer could read it.
KEPT_ENVIRONMENT = ("PATH", "LANG", "LC_ALL", "LANGUAGE", "TZ")


def environment(home: Path, marker: str, source: dict[str, str] | None = None) -> dict[str, str]:
    """A browser's whole environment: ``KEPT_ENVIRONMENT`` from ``source`` (the worker's own),
    its home and XDG folders inside the run's throwaway folder, the marker."""
    given = os.environ if source is None else source
    env = {name: given[name] for name in KEPT_ENVIRONMENT if name in given}
    env.setdefault("PATH", "/usr/bin:/bin")
    env["HOME"] = str(home)
    env["XDG_CONFIG_HOME"] = str(home / ".config")
    env["XDG_CACHE_HOME"] = str(home / ".cache")
    env[MARKER] = marker
    return env


_PR_SET_PDEATHSIG = 1
_PR_CAPBSET_DROP = 24
_CAP_SYS_NICE = 23
_PAGE = os.sysconf("SC_PAGE_SIZE")
_PROC = Path("/proc")


def _child_setup(nice: int) -> Callable[[], None]:
    """What runs in the child between fork and exec: the nice level and the death signal
    (prepared here: nothing may be loaded after the fork)."""
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl
    root = os.geteuid() == 0

    def setup() -> None:
        if nice:
            os.nice(nice)
        if root:
            # Chromium raises the priority of its UI and compositor threads (nice -8) where it
            # may: as root, through CAP_SYS_NICE, which would undo the nice level. Without it in
            # the bounding set, the browser execs without it (a failure leaves it as it was).
            prctl(_PR_CAPBSET_DROP, _CAP_SYS_NICE)
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)

    return setup


async def launch(
    argv: Sequence[str], *, env: dict[str, str], nice: int, stderr: int
) -> asyncio.subprocess.Process:
    """Start ``argv`` in a session (and process group) of its own, niced, with ``env`` as its
    whole environment (``environment``), its output to ``stderr`` (a file descriptor)."""
    return await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=stderr,
        stderr=stderr,
        env=env,
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


def kill(pgid: int, marker: str, *, group: bool = True) -> list[int]:
    """SIGKILL the group (with ``group``) and every process carrying the marker; the pids
    signalled. Once the browser has been reaped its pid, the group's id, may be reused by a
    new group: then only ``group=False`` is safe, and the marker finds what is left."""
    if group:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    pids = members(pgid if group else -1, marker)
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
