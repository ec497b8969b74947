"""Signals during a stop: each process exits 0 however many SIGINTs and SIGTERMs it gets.

honcho passes a terminal's Ctrl-C on to its children and then sends them SIGTERM, so a
process sees two signals at once, and a supervisor may send more while it stops. Before,
one that arrived as the event loop closed found the default action back in place and
killed the process (honcho: ``rc=-15``). Here each process gets a SIGINT and then SIGTERMs
every millisecond or so until it exits.
"""

from __future__ import annotations

import asyncio
import os
import signal

import pytest
from support import FakeTelegram, ProcessFactory

NAMES = ("api", "scheduler", "alerter")


@pytest.mark.parametrize("name", NAMES)
async def test_a_burst_of_signals_stops_the_process_cleanly(
    name: str, procs: ProcessFactory, fake_telegram: FakeTelegram
) -> None:
    proc = await procs.start(name, env=fake_telegram.env() if name == "alerter" else None)
    os.kill(proc.pid, signal.SIGINT)
    sent = 1
    while proc.returncode is None and sent < 20_000:
        try:
            os.kill(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            break
        sent += 1
        await asyncio.sleep(0.001)  # a burst, not a flood that leaves the process no time to stop
    assert await proc.wait() == 0, proc.tail()
    assert proc.events(f"{name}.stopped", clean=True), proc.tail()
