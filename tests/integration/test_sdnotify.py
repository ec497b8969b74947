"""systemd's notify protocol, as each process speaks it to a socket of the test's own.

A ``Type=notify`` unit learns that a process serves from ``READY=1``, restarts it when the
``WATCHDOG=1`` pings stop, and sees ``STOPPING=1`` when it begins to stop. The test plays
systemd's part: a datagram socket in NOTIFY_SOCKET, a 0.4 s watchdog, then SIGTERM.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import FakeTelegram, ProcessFactory, wait_for

from monitor.sdnotify import Notifier


class Systemd:
    """The receiving end of NOTIFY_SOCKET: every message, split into its lines."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.setblocking(False)
        self.messages: list[list[str]] = []

    def read(self) -> list[list[str]]:
        while True:
            try:
                data = self.sock.recv(4096)
            except BlockingIOError:
                return self.messages
            self.messages.append(data.decode().split("\n"))

    def states(self) -> list[str]:
        return [line for message in self.read() for line in message if not line.startswith("STATUS=")]


@pytest.fixture
def systemd(tmp_path: Path) -> Iterator[Systemd]:
    listener = Systemd(tmp_path / "notify")
    try:
        yield listener
    finally:
        listener.sock.close()


@pytest.mark.parametrize("name", ["api", "scheduler", "alerter"])
async def test_ready_watchdog_and_stopping(
    name: str, systemd: Systemd, procs: ProcessFactory, fake_telegram: FakeTelegram
) -> None:
    env = {"NOTIFY_SOCKET": str(systemd.path), "WATCHDOG_USEC": "400000"}
    if name == "alerter":
        env.update(fake_telegram.env())
    proc = await procs.start(name, env=env)
    await wait_for(lambda: systemd.states().count("WATCHDOG=1") >= 3, timeout=10, message="three pings")
    states = systemd.states()
    assert states[0] == "READY=1", states
    assert await proc.terminate() == 0, proc.tail()
    states = systemd.states()
    assert "STOPPING=1" in states, states
    assert states.index("STOPPING=1") > states.index("READY=1")


def test_without_systemd_nothing_is_sent() -> None:
    notifier = Notifier({})
    assert notifier.address is None and notifier.watchdog_seconds is None
    assert notifier.send("READY=1") is False


async def test_abstract_socket_and_watchdog_meant_for_another_process() -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(f"\0monitor-test-notify-{os.getpid()}")
        sock.settimeout(5)
        notifier = Notifier(
            {
                "NOTIFY_SOCKET": f"@monitor-test-notify-{os.getpid()}",
                "WATCHDOG_USEC": "1000000",
                "WATCHDOG_PID": "1",  # not us: the watchdog is another process's
            }
        )
        assert notifier.watchdog_seconds is None
        assert notifier.send("READY=1", "STATUS=x")
        assert sock.recv(100) == b"READY=1\nSTATUS=x"
    notifier.start_watchdog(asyncio.get_running_loop())  # no watchdog asked for: nothing to do
    notifier.stop_watchdog()
