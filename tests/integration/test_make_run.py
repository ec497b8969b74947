"""``make run`` in a terminal of its own: a Ctrl-C stops it cleanly with status 0 and no error
line; a process that cannot start still fails it.

The terminal is a pseudo-terminal made here, ``make`` its session's leader (``setsid --ctty``),
so typing Ctrl-C (the byte 0x03 written to the terminal) sends SIGINT to the terminal's
foreground process group, as a real one does. The services are the tests' own (both URLs set:
``make services`` provisions nothing), the ports free ones; only loopback is used.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import asyncpg
import pytest
from support import clean_environ, free_port, wait_for
from support.procs import TEST_SECRET_KEY, kill_process

REPO = Path(__file__).resolve().parents[2]
CTRL_C = b"\x03"


class Terminal:
    """``make run`` on a pseudo-terminal: what it printed, and typing into it."""

    def __init__(self, env: dict[str, str]) -> None:
        self.master, slave = os.openpty()
        self.proc = subprocess.Popen(
            ["setsid", "--ctty", "make", "--no-print-directory", "run"],
            cwd=REPO, env=env, stdin=slave, stdout=slave, stderr=slave, close_fds=True,
        )  # fmt: skip
        os.close(slave)
        self._out = bytearray()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: every process holding the terminal has exited
                return
            if not chunk:
                return
            self._out.extend(chunk)

    @property
    def output(self) -> str:
        return self._out.decode(errors="replace")

    def type(self, data: bytes) -> None:
        os.write(self.master, data)

    async def wait(self, timeout: float) -> int:  # noqa: ASYNC109
        deadline = time.monotonic() + timeout
        while (code := self.proc.poll()) is None:
            if time.monotonic() >= deadline:
                raise AssertionError(f"make run still running {timeout:g}s later:\n{self.output}")
            await asyncio.sleep(0.1)
        self._reader.join(5)
        return code

    def close(self) -> None:
        kill_process(self.proc)  # by its PID, if the test left it running
        self._reader.join(5)
        os.close(self.master)


@pytest.fixture
def make_env(migrated: str, redis_url: str) -> dict[str, str]:
    if shutil.which("setsid") is None or shutil.which("make") is None:
        pytest.skip("needs util-linux's setsid and make")
    # Not the make that runs the tests (make test): its level and jobserver are not this one's.
    outer = ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES")
    return {k: v for k, v in clean_environ().items() if k not in outer} | {
        "MONITOR_DATABASE_URL": migrated,
        "MONITOR_REDIS_URL": redis_url,
        "MONITOR_SECRET_KEY": TEST_SECRET_KEY,
        "MONITOR_API_PORT": str(free_port()),
        "MONITOR_SCHEDULER_HTTP_PORT": str(free_port()),
        "MONITOR_ALERTER_HTTP_PORT": str(free_port()),
        "MONITOR_WORKER_HTTP_PORT": str(free_port()),
        "TERM": "dumb",
    }


@pytest.fixture
def terminal(make_env: dict[str, str]) -> Iterator[list[Terminal]]:
    made: list[Terminal] = []
    try:
        yield made
    finally:
        for term in made:
            term.close()


async def _healthy(ports: list[str]) -> bool:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session:
        for port in ports:
            try:
                async with session.get(f"http://127.0.0.1:{port}/healthz") as answer:
                    if answer.status != 200:
                        return False
            except (aiohttp.ClientError, TimeoutError):
                return False
    return True


async def test_a_ctrl_c_stops_make_run_cleanly_with_status_0(
    db: asyncpg.Connection, make_env: dict[str, str], terminal: list[Terminal]
) -> None:
    term = Terminal(make_env)
    terminal.append(term)
    ports = [make_env[f"MONITOR_{p}_PORT"] for p in ("API", "SCHEDULER_HTTP", "ALERTER_HTTP", "WORKER_HTTP")]

    async def up() -> bool:
        assert term.proc.poll() is None, f"make run exited ({term.proc.returncode}):\n{term.output}"
        return await _healthy(ports)

    await wait_for(up, timeout=90, message=lambda: f"the four processes up:\n{term.output}")
    # Before the processes: the dashboard's address and, with no user yet, the setup link.
    printed = term.output
    assert f"dashboard: http://127.0.0.1:{make_env['MONITOR_API_PORT']}/" in printed, printed
    assert f"open http://127.0.0.1:{make_env['MONITOR_API_PORT']}/setup?token=" in printed, printed
    term.type(CTRL_C)
    code = await term.wait(30)
    out = term.output
    assert code == 0, out
    assert "SIGINT received" in out, out
    for name in ("api", "scheduler", "alerter", "worker"):
        assert f"{name} stopped (rc=0)" in out, out
    assert "make: ***" not in out and "Error" not in out, out
    assert "did not stop cleanly" not in out and "SIGKILL" not in out, out


async def test_a_process_that_cannot_start_still_fails_make_run(
    db: asyncpg.Connection, make_env: dict[str, str], terminal: list[Terminal]
) -> None:
    with socket.socket() as taken:  # the api's port, already in use
        taken.bind(("127.0.0.1", int(make_env["MONITOR_API_PORT"])))
        taken.listen()
        term = Terminal(make_env)
        terminal.append(term)
        code = await term.wait(90)
    out = term.output
    assert code != 0, out
    assert "make: *** [Makefile:" in out and "run] Error" in out, out
