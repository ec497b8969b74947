"""The process fixtures hold what they stop to account.

A stand-in process (a few lines of Python, not ``monitor``) plays each way a process can end:
cleanly, with a non-zero exit, with a traceback, deaf to SIGTERM, killed, frozen.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from .inner_pytest import run_pytest
from .procs import AllowTraceback, ExitCodes, MonitorProcess, ProcessFactory, clean_environ
from .waiting import wait_for

# The stand-in: logs a JSON start line, then does what argv[1] says. SIGTERM ends it with 0
# (as the real processes end) unless it is deaf to it.
SCRIPT = r"""
import json, signal, sys, time
mode = sys.argv[1]
print(json.dumps({"event": "fake.started"}), flush=True)
if mode == "deaf":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
else:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
if mode == "exit1":
    sys.exit(1)
if mode == "traceback":
    try:
        raise ValueError("a bug")
    except ValueError:
        import traceback; traceback.print_exc()
while True:
    time.sleep(0.05)
"""


def stand_in(
    factory: ProcessFactory, mode: str, *, expect_exit: ExitCodes = 0, allow_traceback: AllowTraceback = False
) -> MonitorProcess:
    """A stand-in process of ``factory`` in ``mode``, started and counted as its own."""
    index = len(factory.processes) + 1
    proc = MonitorProcess(
        "fake",
        [sys.executable, "-c", SCRIPT, mode],
        clean_environ(),
        factory.log_dir / f"fake-{index}.log",
        expect_exit=expect_exit,
        allow_traceback=allow_traceback,
    )
    factory.processes.append(proc)
    return proc


@pytest.fixture
async def factory(tmp_path: Path) -> AsyncIterator[ProcessFactory]:
    made = ProcessFactory(tmp_path, {})
    yield made
    for proc in made.processes:
        proc.kill()


async def test_a_process_stopped_cleanly_passes(factory: ProcessFactory) -> None:
    proc = stand_in(factory, "clean")
    await proc.wait_log("fake.started")
    await factory.stop_all()
    assert proc.returncode == 0
    factory.check()


async def test_a_non_zero_exit_fails_unless_expected(factory: ProcessFactory) -> None:
    crashed = stand_in(factory, "exit1")
    assert await crashed.wait() == 1
    await factory.stop_all()
    with pytest.raises(AssertionError, match=r"fake-1.log: exited 1, expected 0"):
        factory.check()
    crashed.expect(exit=(0, 1))
    factory.check()
    assert stand_in(factory, "exit1", expect_exit=1).expect_exit == {1}


async def test_a_traceback_in_the_log_fails_unless_allowed(factory: ProcessFactory) -> None:
    proc = stand_in(factory, "traceback")
    await proc.wait_log("fake.started")
    await wait_for(lambda: "ValueError: a bug" in proc.log_text(), timeout=10)
    await factory.stop_all()
    assert proc.returncode == 0
    with pytest.raises(AssertionError, match=r"logged 1 traceback\(s\); the first:\nTraceback"):
        factory.check()
    proc.expect(traceback="KeyError")  # a text the traceback does not hold allows nothing
    with pytest.raises(AssertionError, match="ValueError: a bug"):
        factory.check()
    proc.expect(traceback="ValueError: a bug")
    factory.check()
    proc.expect(traceback=True)
    factory.check()


async def test_a_hang_at_stop_is_killed_and_fails(factory: ProcessFactory) -> None:
    deaf = stand_in(factory, "deaf")
    after = stand_in(factory, "clean")
    await deaf.wait_log("fake.started")
    await after.wait_log("fake.started")
    await factory.stop_all(timeout=1)  # does not raise: the next process is stopped too
    assert deaf.returncode == -signal.SIGKILL and after.returncode == 0
    with pytest.raises(AssertionError, match=r"fake-1.log: did not stop within 1s of SIGTERM") as caught:
        factory.check()
    assert "fake-2.log" not in str(caught.value)
    deaf.expect(exit=-signal.SIGKILL, traceback=True)  # no opt-out covers a hang
    with pytest.raises(AssertionError, match="did not stop"):
        factory.check()


async def test_a_sigkill_the_test_sends_counts_one_from_elsewhere_does_not(factory: ProcessFactory) -> None:
    killed = stand_in(factory, "clean")
    other = stand_in(factory, "clean")
    await killed.wait_log("fake.started")
    await other.wait_log("fake.started")
    killed.send_signal(signal.SIGKILL)
    other.popen.send_signal(signal.SIGKILL)  # not through the test's own hand: a crash
    assert await killed.wait() == await other.wait() == -signal.SIGKILL
    with pytest.raises(AssertionError, match=r"fake-2.log: exited -9, expected 0") as caught:
        factory.check()
    assert "fake-1.log" not in str(caught.value)


async def test_a_frozen_process_is_thawed_to_stop(factory: ProcessFactory) -> None:
    proc = stand_in(factory, "clean")
    await proc.wait_log("fake.started")
    proc.send_signal(signal.SIGSTOP)
    await factory.stop_all(timeout=5)
    assert proc.returncode == 0
    factory.check()


# -- the fixtures of tests/conftest.py, end to end ------------------------------------------

CONFTEST_TESTS = """
async def test_a_process_that_fails_to_start(procs):
    proc = procs.spawn("api", env={"MONITOR_SECRET_KEY": None})
    assert await proc.wait() == 1


async def test_a_process_meant_to_fail(procs):
    proc = procs.spawn("api", env={"MONITOR_SECRET_KEY": None}, expect_exit=1)
    assert await proc.wait() == 1
"""


def test_the_procs_fixture_fails_a_passing_test_whose_process_ended_badly(tmp_path: Path) -> None:
    """tests/conftest.py's ``procs`` in a pytest of its own: the test body passes, and its
    teardown fails on the exit nobody expected; the same exit, declared, passes."""
    code, out = run_pytest(tmp_path, CONFTEST_TESTS, {"TEST_STRICT_SKIPS": "0"})
    assert code == 1, out
    assert "2 passed, 1 error" in out, out
    assert "ERROR at teardown of test_a_process_that_fails_to_start" in out, out
    assert "api-1.log: exited 1, expected 0" in out, out
