"""Places to check from: network namespaces that each see the same target URL their own way.

Issue 16's quorum test needs one URL to answer differently depending on where it is checked
from. A :class:`Location` is a network namespace (``netns.py``'s ``NetnsHost``: a veth pair to
this host, ``lo`` up) with:

- a target on the namespace's own loopback (``status_target.py``), at the same
  ``http://127.0.0.1:PORT/`` in every location, answering the status the test gives it with
  :meth:`Location.answer` (a file it reads on each request);
- two :class:`~support.tcpproxy.TcpProxy` listeners on this host's end of the veth pair,
  forwarding to PostgreSQL and Redis, which listen on this host's 127.0.0.1 only. The
  location's ``database_url`` and ``redis_url`` name the same database and Redis index as the
  test's, through them.

Processes run inside with ``procs.start("scheduler", prefix=location.prefix,
env=location.env())``: ``ip netns exec`` execs the command in place, so the PID the factory
holds is the scheduler's own. Traffic stays on loopback and on the veth pairs made here.

The ``locations`` fixture makes "eu" and "us" (skipping the test, saying why, where a namespace
cannot be made) and removes everything it made; its proxies run in the test's event loop, so
list it before ``procs`` in a test's arguments: processes using them are stopped first.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from .netns import NetnsHost
from .procs import free_port
from .tcpproxy import TcpProxy
from .waiting import wait_for

NAMES = ("eu", "us")
STATUS_TARGET = Path(__file__).with_name("status_target.py")


def via(url: str, host: str, port: int) -> str:
    """``url`` (a PostgreSQL or Redis URL) with its host and port replaced, user, password,
    database and options kept."""
    parts = urlsplit(url)
    userinfo = parts.netloc.rpartition("@")[0]
    netloc = f"{userinfo}@{host}:{port}" if userinfo else f"{host}:{port}"
    return urlunsplit(parts._replace(netloc=netloc))


@dataclass
class Location:
    name: str
    host: NetnsHost
    port: int  # the target's, on the namespace's loopback
    workdir: Path
    database_url: str = ""
    redis_url: str = ""
    proxies: list[TcpProxy] = field(default_factory=list)
    target: subprocess.Popen[bytes] | None = None

    @property
    def prefix(self) -> list[str]:
        """The command that runs the rest of an argument list inside the namespace."""
        return ["ip", "netns", "exec", self.host.namespace]

    @property
    def url(self) -> str:
        """The target's URL: the same in every location, a different server in each."""
        return f"http://127.0.0.1:{self.port}/"

    @property
    def status_file(self) -> Path:
        return self.workdir / "status"

    @property
    def target_log(self) -> Path:
        return self.workdir / "target.log"

    def env(self) -> dict[str, str]:
        """The settings of a process that runs here: the services through the proxies, and
        this location's label."""
        return {
            "MONITOR_DATABASE_URL": self.database_url,
            "MONITOR_REDIS_URL": self.redis_url,
            "MONITOR_LOCATION": self.name,
        }

    def answer(self, status: int) -> None:
        """From the next request on, the target here answers ``status``."""
        tmp = self.status_file.with_suffix(".tmp")
        tmp.write_text(f"{status}\n")
        os.replace(tmp, self.status_file)

    async def open(self, database_url: str, redis_url: str) -> Location:
        """Start the proxies and the target; returns once the target listens."""
        self.database_url = await self._proxy(database_url)
        self.redis_url = await self._proxy(redis_url)
        self.answer(200)
        self._start_target()
        await wait_for(self._listening, timeout=15, message=lambda: f"{self.name}'s target listening")
        return self

    async def _proxy(self, url: str) -> str:
        """A proxy on this host's end of the veth pair to the service of ``url``; the URL
        through it."""
        service = urlsplit(url)
        outside = self.host.outside_address
        proxy = await TcpProxy(service.hostname or "127.0.0.1", service.port or 0, host=outside).start()
        self.proxies.append(proxy)
        return via(url, outside, proxy.port)

    def _start_target(self) -> None:
        with open(self.target_log, "ab") as log:
            self.target = subprocess.Popen(
                [*self.prefix, sys.executable, str(STATUS_TARGET), str(self.port), str(self.status_file)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def _listening(self) -> bool:
        text = self.target_log.read_text(errors="replace") if self.target_log.exists() else ""
        assert self.target is not None and self.target.poll() is None, f"{self.name}'s target exited: {text}"
        return "listening" in text

    async def close(self) -> None:
        """Stop the target (by its PID) and the proxies, and delete the namespace."""
        if self.target is not None and self.target.poll() is None:
            self.target.terminate()
            try:
                await asyncio.to_thread(self.target.wait, 10)
            except subprocess.TimeoutExpired:
                self.target.kill()
                self.target.wait(5)
        for proxy in self.proxies:
            await proxy.close()
        self.host.remove()


@pytest.fixture(name="locations")
async def locations_fixture(
    migrated: str, redis_url: str, tmp_path: Path
) -> AsyncIterator[dict[str, Location]]:
    """Locations "eu" and "us", each with its target answering 200 at the same URL; removed
    after the test. Skips where a network namespace cannot be made."""
    made: dict[str, Location] = {}
    port = free_port()
    try:
        for name in NAMES:
            try:
                host = NetnsHost.create(prefix=f"monitor-{name}")
            except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
                pytest.skip(f"cannot create a network namespace for location {name!r}: {exc}")
            workdir = tmp_path / f"location-{name}"
            workdir.mkdir()
            made[name] = Location(name, host, port, workdir)
            await made[name].open(migrated, redis_url)
        yield made
    finally:
        for location in made.values():
            await location.close()
