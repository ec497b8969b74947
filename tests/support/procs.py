"""Real ``python -m monitor <name>`` subprocesses, their JSON logs, and stopping them by PID.

Each process writes stdout and stderr to its own log file. :meth:`MonitorProcess.wait_log`
polls that file for a JSON line with a given ``event`` (and field values) without blocking
the event loop, so servers the test runs in the same loop (the target, the fake Telegram)
keep answering while a test waits, and while a process shuts down.

**What a process must do, checked at teardown** (the ``procs`` and ``api_server`` fixtures of
tests/conftest.py call :meth:`ProcessFactory.check`): every process a test started has, by the
end of the test, exited 0, stopped within ``STOP_TIMEOUT`` of its SIGTERM, and logged no
traceback (a Python traceback on stderr, or an ``exception`` field in a JSON line). A test
that breaks a process on purpose says so, per process, where it starts it or once it decides::

    procs.spawn("api", env={"MONITOR_SECRET_KEY": None}, expect_exit=1)   # a bad config
    proc = await procs.start("alerter", allow_traceback="ConnectionError")  # fault injection
    proc.expect(exit=(0, 1), traceback=True)                              # decided later

``expect_exit`` is the exit code (or codes) that count; ``allow_traceback`` is True for any
traceback or a text each one must contain. A SIGKILL the test itself sends
(``proc.send_signal(signal.SIGKILL)`` or ``proc.kill()``) is its own act: the exit by that
signal counts without saying more (its tracebacks are still checked). A process frozen with
SIGSTOP is sent SIGCONT after the SIGTERM that stops it. Use these only where a test means to
kill or break a process, each with a comment saying why; never to quiet a failure.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from . import leaks
from .waiting import DEFAULT_TIMEOUT

TRACEBACK = "Traceback (most recent call last)"
STOP_TIMEOUT = 20.0
# The listening port of each process (the API; the health/metrics probe of the others), given a
# free one unless the test sets it. Only settings this version of monitor has are passed, since
# the processes reject unknown MONITOR_* variables.
PORT_SETTINGS = {
    "api": "api_port",
    "scheduler": "scheduler_http_port",
    "alerter": "alerter_http_port",
    "worker": "worker_http_port",
}
# An exit code, or the codes, a process may end with (``expect_exit``); 0 unless a test says.
ExitCodes = int | Collection[int]
# ``allow_traceback``: False (none may be logged), True (any), or a text each one must contain.
AllowTraceback = bool | str


def _codes(codes: ExitCodes) -> frozenset[int]:
    return frozenset((codes,) if isinstance(codes, int) else codes)


def _env_name(setting: str) -> str:
    return "MONITOR_" + setting.upper()


def _known_setting(setting: str) -> bool:
    from monitor.config import Settings

    return setting in Settings.model_fields


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on right now (bind port 0, read it, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def clean_environ() -> dict[str, str]:
    """The test runner's environment without any MONITOR_* variable (the processes reject
    unknown ones, and a test must say every setting it relies on)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MONITOR_")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


# The discard port: nothing listens on it here, so a DNS query to it gets no answer.
CLOSED_DNS_PORT = 9
# MONITOR_SECRET_KEY of every test process: fixed, so a test can open what they sealed
# (``SecretBox.from_setting(TEST_SECRET_KEY)``). A test key only; never one to use elsewhere.
TEST_SECRET_KEY = "dGVzdC1rZXktb2YtdGhlLW1vbml0b3ItdGVzdHMtMDE="


def process_env(database_url: str, redis_url: str) -> dict[str, str]:
    """The settings every test process gets: the services, the test secret key, loopback
    allowed, fast intervals, names that never resolve beyond loopback, JSON logs."""
    return {
        "MONITOR_DATABASE_URL": database_url,
        "MONITOR_REDIS_URL": redis_url,
        "MONITOR_SECRET_KEY": TEST_SECRET_KEY,
        # The target and the fake Telegram are on loopback, which the SSRF policy denies otherwise.
        "MONITOR_ALLOW_CIDRS": "127.0.0.0/8",
        "MONITOR_MIN_INTERVAL_SECONDS": "1",
        "MONITOR_LOG_FORMAT": "json",
        "MONITOR_SHUTDOWN_TIMEOUT_SECONDS": "10",
        # No name a test uses may be looked up beyond loopback: a closed local port answers
        # nothing, so names fail to resolve unless a test runs its own fake DNS server.
        "MONITOR_DNS_SERVERS": f"127.0.0.1:{CLOSED_DNS_PORT}",
        # Tests reuse key ids after each reset; the per-key rate limit is tested on its own.
        "MONITOR_API_RATE_PER_SECOND": "10000",
        "MONITOR_API_RATE_BURST": "10000",
        # One test loads 10,000 monitors into the test account and then adds more.
        "MONITOR_ACCOUNT_MONITOR_QUOTA": "100000",
    }


class MonitorProcess:
    def __init__(
        self,
        name: str,
        argv: list[str],
        env: dict[str, str],
        log_path: Path,
        *,
        expect_exit: ExitCodes = 0,
        allow_traceback: AllowTraceback = False,
    ) -> None:
        self.name = name
        self.argv = argv
        self.env = env
        self.log_path = log_path
        leaks.log_file(log_path)  # scanned for secrets at the run's end
        # What the teardown check accepts (see the module docstring, and :meth:`expect`).
        self.expect_exit = _codes(expect_exit)
        self.allow_traceback: AllowTraceback = allow_traceback
        self.killed_by_test = False  # the test sent SIGKILL itself: that exit counts
        self.hung_at_stop: float | None = None  # the timeout a SIGTERM was not obeyed within
        self._frozen = False  # SIGSTOPped and not continued since
        port_variable = _env_name(PORT_SETTINGS[name]) if name in PORT_SETTINGS else None
        # The API's port, or the probe port (/healthz, /readyz, /metrics) of the other processes.
        self.port: int | None = int(env[port_variable]) if port_variable and env.get(port_variable) else None
        with open(log_path, "ab") as log:
            self.popen = subprocess.Popen(
                argv, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=os.getcwd()
            )
        self.started_at = time.time()

    def __repr__(self) -> str:
        return f"<MonitorProcess {self.name} pid={self.pid} returncode={self.returncode}>"

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    @property
    def running(self) -> bool:
        return self.popen.poll() is None

    @property
    def base_url(self) -> str:
        assert self.port, f"{self.name} has no listening port"
        return f"http://127.0.0.1:{self.port}"

    # -- the log -----------------------------------------------------------------------

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log_lines(self) -> list[dict[str, Any]]:
        """Every JSON object line of the log, in order (other lines, e.g. stderr, are skipped)."""
        lines = []
        for raw in self.log_text().splitlines():
            raw = raw.strip()
            if not raw.startswith("{"):
                continue
            try:
                item = json.loads(raw)
            except ValueError:
                continue
            if isinstance(item, dict):
                lines.append(item)
        return lines

    def events(self, event: str | None = None, **fields: Any) -> list[dict[str, Any]]:
        """JSON lines whose ``event`` is ``event`` (any, if None) and whose fields have these values."""
        return [
            line
            for line in self.log_lines()
            if (event is None or line.get("event") == event)
            and all(line.get(k) == v for k, v in fields.items())
        ]

    def tracebacks(self) -> list[str]:
        """Tracebacks anywhere in the log: a Python traceback on stderr, or an ``exception`` field."""
        found = []
        text = self.log_text()
        start = text.find(TRACEBACK)
        while start != -1:
            found.append(text[start : start + 2000])
            start = text.find(TRACEBACK, start + 1)
        found.extend(str(line["exception"]) for line in self.log_lines() if line.get("exception"))
        return found

    def expect(
        self, *, exit: ExitCodes | None = None, traceback: AllowTraceback | None = None
    ) -> MonitorProcess:
        """Say, once a test has decided to break this process, how it may end: ``exit`` the
        code(s) that count, ``traceback`` True or a text each logged traceback contains."""
        if exit is not None:
            self.expect_exit = _codes(exit)
        if traceback is not None:
            self.allow_traceback = traceback
        return self

    def unexpected_tracebacks(self) -> list[str]:
        """The tracebacks of the log that ``allow_traceback`` does not allow."""
        if self.allow_traceback is True:
            return []
        allowed = self.allow_traceback or None
        return [tb for tb in self.tracebacks() if allowed is None or allowed not in tb]

    def problems(self) -> list[str]:
        """What is wrong with how this process ended (empty when nothing is): still running,
        a hang at stop, an exit code it was not meant to have, a traceback it was not."""
        found = []
        if self.hung_at_stop is not None:
            found.append(f"did not stop within {self.hung_at_stop:g}s of SIGTERM (then killed)")
        code = self.returncode
        accepted = self.expect_exit | ({-signal.SIGKILL} if self.killed_by_test else set())
        if code is None:
            found.append("still running")
        elif code not in accepted and self.hung_at_stop is None:
            found.append(f"exited {code}, expected {' or '.join(map(str, sorted(accepted)))}")
        tracebacks = self.unexpected_tracebacks()
        if tracebacks:
            found.append(f"logged {len(tracebacks)} traceback(s); the first:\n{tracebacks[0]}")
        return found

    def tail(self, lines: int = 60) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def _describe(self) -> str:
        return f"{self!r}, log {self.log_path}:\n{self.tail()}"

    async def wait_log(
        self,
        event: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,  # noqa: ASYNC109
        **fields: Any,
    ) -> dict[str, Any]:
        """The first log line with this event (and field values), once it is there.

        Fails at once if the process exits without having logged it.
        """
        deadline = time.monotonic() + timeout
        while True:
            found = self._look_for(event, fields, deadline, timeout)
            if found is not None:
                return found
            await asyncio.sleep(0.05)

    def wait_log_sync(self, event: str, *, timeout: float = DEFAULT_TIMEOUT, **fields: Any) -> dict[str, Any]:
        """:meth:`wait_log` for code outside an event loop (e.g. a module-scoped fixture)."""
        deadline = time.monotonic() + timeout
        while True:
            found = self._look_for(event, fields, deadline, timeout)
            if found is not None:
                return found
            time.sleep(0.05)

    def _look_for(
        self, event: str, fields: dict[str, Any], deadline: float, timeout: float
    ) -> dict[str, Any] | None:
        """One look at the log for ``wait_log``: the line, None for "not yet", or a failure."""
        exited = not self.running  # read before the log, so a last line is not missed
        found = self.events(event, **fields)
        if found:
            return found[0]
        if exited:
            raise AssertionError(f"{self.name} exited before logging {event!r} {fields}: {self._describe()}")
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"{self.name} did not log {event!r} {fields} in {timeout:g}s: {self._describe()}"
            )
        return None

    # -- stopping ----------------------------------------------------------------------

    def send_signal(self, sig: int) -> None:
        """Signal the process if it still runs; a SIGKILL or SIGSTOP is remembered (above)."""
        if self.running:
            if sig == signal.SIGKILL:
                self.killed_by_test = True
            elif sig in (signal.SIGSTOP, signal.SIGCONT):
                self._frozen = sig == signal.SIGSTOP
            self.popen.send_signal(sig)

    def _sigterm(self) -> None:
        self.send_signal(signal.SIGTERM)
        if self._frozen:  # a stopped process handles its SIGTERM once it runs again
            self.send_signal(signal.SIGCONT)

    async def wait(self, timeout: float = STOP_TIMEOUT) -> int:  # noqa: ASYNC109
        """Wait (without blocking the loop) for the process to exit; its exit code."""
        deadline = time.monotonic() + timeout
        while (code := self.popen.poll()) is None:
            if time.monotonic() >= deadline:
                raise AssertionError(f"{self.name} still running {timeout:g}s later: {self._describe()}")
            await asyncio.sleep(0.05)
        return code

    async def terminate(self, timeout: float = STOP_TIMEOUT) -> int:  # noqa: ASYNC109
        """SIGTERM, then wait for the exit; its exit code. Fails (after a SIGKILL) on a hang."""
        self._sigterm()
        try:
            return await self.wait(timeout)
        except AssertionError:
            self._hung(timeout)
            raise

    def terminate_sync(self, timeout: float = STOP_TIMEOUT) -> int | None:
        """SIGTERM and wait, blocking; SIGKILL after ``timeout`` (None then: a hang, which
        :meth:`problems` reports). For teardown outside a loop."""
        self._sigterm()
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self._hung(timeout)
            return None

    def _hung(self, timeout: float) -> None:
        self.hung_at_stop = timeout
        kill_process(self.popen)

    def kill(self) -> None:
        """SIGKILL, by the test's own hand: the exit by it counts (see the module docstring)."""
        if self.running:
            self.killed_by_test = True
        kill_process(self.popen)


async def stop_process(
    proc: subprocess.Popen[bytes],
    sig: int,
    timeout: float,  # noqa: ASYNC109
    name: str,
    tail: Callable[[], str] | None = None,
) -> int:
    """Send ``sig`` to ``proc`` if it still runs and wait, without blocking the loop, for its exit
    code; after ``timeout`` (s) it is killed and the wait fails, naming ``name`` (and its log's
    ``tail()``). The services the tests start themselves (PostgreSQL, Redis, Sentinel) stop so."""
    if proc.poll() is None:
        proc.send_signal(sig)
    deadline = time.monotonic() + timeout
    while (code := proc.poll()) is None:
        if time.monotonic() >= deadline:
            kill_process(proc)
            raise AssertionError(f"{name} did not stop in {timeout:g}s" + (f":\n{tail()}" if tail else ""))
        await asyncio.sleep(0.05)
    return code


def kill_process(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL ``proc`` if it still runs, and reap it."""
    if proc.poll() is None:
        proc.kill()
        proc.wait(10)


class ProcessFactory:
    """Starts monitor processes with a shared base environment; stops them all at the end,
    and :meth:`check` fails on any that ended in a way it was not meant to (module docstring)."""

    def __init__(self, log_dir: Path, base_env: Mapping[str, str]) -> None:
        self.log_dir = log_dir
        self.base_env = dict(base_env)
        self.processes: list[MonitorProcess] = []

    def spawn(
        self,
        name: str,
        *,
        env: Mapping[str, str | None] | None = None,
        prefix: Sequence[str] = (),
        expect_exit: ExitCodes = 0,
        allow_traceback: AllowTraceback = False,
    ) -> MonitorProcess:
        """Start ``python -m monitor <name>`` without waiting for it.

        ``env`` adds to (or, with a None value, removes from) the base environment. The process
        listens on a free port (``proc.port``) unless its port variable is given. ``prefix`` runs
        it through a command that execs it in the same process, e.g. ``ip netns exec NS``
        (tests/support/locations.py), so its PID is still the one to signal. ``expect_exit`` and
        ``allow_traceback`` are for a test that breaks the process on purpose (module docstring).
        """
        full = clean_environ()
        full.update(self.base_env)
        for key, value in (env or {}).items():
            if value is None:
                full.pop(key, None)
            else:
                full[key] = value
        setting = PORT_SETTINGS.get(name)
        if setting and _known_setting(setting) and _env_name(setting) not in full:
            full[_env_name(setting)] = str(free_port())
        if name == "api":
            full.setdefault("MONITOR_API_HOST", "127.0.0.1")
        # Each test's schedulers spool in the test's own directory (a killed one's spool is
        # replayed by the next scheduler started there, as on a machine).
        if _known_setting("spool_dir"):
            full.setdefault("MONITOR_SPOOL_DIR", str(self.log_dir.parent / "spool"))
        index = sum(1 for p in self.processes if p.name == name) + 1
        log_path = self.log_dir / f"{name}-{index}.log"
        argv = [*prefix, sys.executable, "-m", "monitor", name]
        proc = MonitorProcess(
            name, argv, full, log_path, expect_exit=expect_exit, allow_traceback=allow_traceback
        )
        self.processes.append(proc)
        return proc

    async def start(
        self,
        name: str,
        *,
        env: Mapping[str, str | None] | None = None,
        timeout: float = 30.0,  # noqa: ASYNC109
        prefix: Sequence[str] = (),
        expect_exit: ExitCodes = 0,
        allow_traceback: AllowTraceback = False,
    ) -> MonitorProcess:
        """Start a service process and wait for its ``<name>.started`` line."""
        proc = self.spawn(
            name, env=env, prefix=prefix, expect_exit=expect_exit, allow_traceback=allow_traceback
        )
        await proc.wait_log(f"{name}.started", timeout=timeout)
        return proc

    def start_sync(
        self, name: str, *, env: Mapping[str, str | None] | None = None, timeout: float = 30.0
    ) -> MonitorProcess:
        proc = self.spawn(name, env=env)
        proc.wait_log_sync(f"{name}.started", timeout=timeout)
        return proc

    def tracebacks(self) -> dict[str, list[str]]:
        """Tracebacks logged by any process, by log file name (empty if none)."""
        found = {p.log_path.name: p.tracebacks() for p in self.processes}
        return {name: tbs for name, tbs in found.items() if tbs}

    async def stop_all(self, timeout: float = STOP_TIMEOUT) -> None:  # noqa: ASYNC109
        """SIGTERM every process still running, in reverse start order, each by its PID. One
        that does not stop in ``timeout`` is killed and the next is stopped; :meth:`check`
        reports the hang."""
        for proc in reversed(self.processes):
            if proc.running:
                try:
                    await proc.terminate(timeout)
                except AssertionError:
                    assert proc.hung_at_stop is not None  # killed: the check reports it

    def stop_all_sync(self, timeout: float = STOP_TIMEOUT) -> None:
        for proc in reversed(self.processes):
            if proc.running:
                proc.terminate_sync(timeout)

    def problems(self) -> dict[str, list[str]]:
        """What is wrong with how each process ended, by log file name (empty if nothing)."""
        found = {p.log_path.name: p.problems() for p in self.processes}
        return {name: each for name, each in found.items() if each}

    def check(self) -> None:
        """Fail, naming each process and what is wrong, unless every process ended as it was
        meant to (after :meth:`stop_all`; see the module docstring for the opt-outs)."""
        found = self.problems()
        if found:
            lines = [f"{name}: {problem}" for name, problems in found.items() for problem in problems]
            raise AssertionError(
                "processes the test started did not end cleanly (a test that breaks one on purpose "
                "says so with expect_exit= / allow_traceback=, see tests/support/procs.py):\n"
                + "\n".join(lines)
            )

    def report(self) -> str:
        parts = []
        for proc in self.processes:
            parts.append(f"===== {proc.log_path.name} (pid {proc.pid}, exit {proc.returncode}) =====")
            parts.append(proc.log_text().rstrip() or "(empty)")
        return "\n".join(parts)
