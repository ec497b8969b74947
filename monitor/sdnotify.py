"""systemd's notify protocol (sd_notify(3)) in the few lines it takes: no dependency.

Under a ``Type=notify`` unit, systemd passes ``NOTIFY_SOCKET`` (a datagram socket; a leading
``@`` names an abstract one) and, with ``WatchdogSec=``, ``WATCHDOG_USEC`` (and
``WATCHDOG_PID``, the process meant). A process then says ``READY=1`` once it serves,
``WATCHDOG=1`` at least every ``WATCHDOG_USEC`` (we ping every half of it, from the event
loop, so a blocked loop misses pings and systemd restarts the process), and ``STOPPING=1``
when it begins to stop. Without ``NOTIFY_SOCKET`` (a terminal, honcho, ``Type=exec``)
every call does nothing.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Mapping

from monitor import logging as mlog

log = mlog.get(__name__)


class Notifier:
    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        address = env.get("NOTIFY_SOCKET", "")
        self.address: str | None = ("\0" + address[1:] if address.startswith("@") else address) or None
        self.watchdog_seconds: float | None = None
        usec, pid = env.get("WATCHDOG_USEC", ""), env.get("WATCHDOG_PID", "")
        if usec.isdigit() and int(usec) > 0 and (not pid or pid == str(os.getpid())):
            self.watchdog_seconds = int(usec) / 1_000_000
        self._timer: asyncio.TimerHandle | None = None

    def send(self, *states: str) -> bool:
        """Send ``states`` ("READY=1", ...) as one message; False when not under systemd or
        the socket is gone (systemd stopping): a notification is never worth a crash."""
        if self.address is None:
            return False
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.sendto("\n".join(states).encode(), self.address)
            return True
        except OSError as exc:
            log.warning("sdnotify.failed", error=str(exc))
            return False

    def start_watchdog(self, loop: asyncio.AbstractEventLoop) -> None:
        """Ping every half of the watchdog period from ``loop``'s own timers: when the loop is
        blocked the pings stop, which is the point."""
        if self.watchdog_seconds is None or self.address is None:
            return
        period = self.watchdog_seconds / 2

        def ping() -> None:
            self.send("WATCHDOG=1")
            self._timer = loop.call_later(period, ping)

        ping()

    def stop_watchdog(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
