"""Starting and stopping the processes a benchmark owns, always by their own PID.

Every child runs in its own session (a Ctrl-C in the terminal reaches only the benchmark,
which then stops its children in order) and gets SIGTERM from the kernel should the
benchmark die without cleaning up (``PR_SET_PDEATHSIG``, kept across ``taskset``'s exec).
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def spawn(
    argv: Sequence[str],
    *,
    log: Path,
    env: Mapping[str, str] | None = None,
    core: int | None = None,
    cwd: Path | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` (pinned to ``core`` with taskset, which execs: the PID is the program's),
    stdout and stderr appended to ``log``."""
    command = [*(["taskset", "-c", str(core)] if core is not None else []), *argv]
    with log.open("ab") as out:
        return subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )


def stop(proc: subprocess.Popen[bytes], sig: signal.Signals = signal.SIGTERM, timeout: float = 30.0) -> bool:
    """Send ``sig`` to the process (by PID), wait up to ``timeout``, then SIGKILL it.

    Returns True if it exited on ``sig`` alone.
    """
    if proc.poll() is not None:
        return True
    proc.send_signal(sig)
    try:
        proc.wait(timeout)
        return True
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
        return False


async def wait_for(
    predicate: Callable[[], bool], *, within: float, what: str, proc: subprocess.Popen[bytes]
) -> None:
    """Poll ``predicate()`` every 50 ms; fail if ``proc`` exits first or at the deadline."""
    deadline = time.monotonic() + within
    while not predicate():
        if proc.poll() is not None:
            raise RuntimeError(f"{what}: exited with status {proc.returncode} during start-up")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not ready after {within:g} s")
        await asyncio.sleep(0.05)


def run_and_report(
    run: Callable[[], Awaitable[dict[str, Any]]], render: Callable[[dict[str, Any]], str], out: Path
) -> dict[str, Any] | None:
    """Run one benchmark, print its report and write its JSON to ``out``; None if interrupted.

    SIGTERM ends the run like Ctrl-C does: through the finally blocks that stop what it started.
    """

    async def guarded() -> dict[str, Any]:
        task = asyncio.current_task()
        assert task is not None
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        return await run()

    try:
        result = asyncio.run(guarded())
    except (KeyboardInterrupt, asyncio.CancelledError):
        print("interrupted; everything the benchmark started was stopped", file=sys.stderr)
        return None
    print(render(result))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
    return result


def add_api_run_args(add: Callable[..., Any], db_name: str) -> None:
    """The options of a benchmark that runs an api against a database of its own: where the
    api and the harness run, the wait for idle cores, the database, where the result goes."""
    add("--api-core", type=int, default=0, help="pin the api process to this core (-1: no pinning)")
    add("--harness-core", type=int, default=1, help="pin this harness to this core (-1: no pinning)")
    add("--wait-quiet", type=float, default=0, help="first wait up to this long for idle cores, s")
    add("--db-name", default=db_name)
    add("--json", type=Path, default=None, help="write the result here (default bench/results/)")
