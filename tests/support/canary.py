"""Local servers and a tripwire for the SSRF tests: what must never be reached, and what may.

- :class:`Canary` listens on 127.0.0.1 and ::1 (one port) and records every accepted TCP
  connection before reading a byte, so a TLS handshake or garbage counts as much as an HTTP
  request. Neither address is ever in a test's allow-list: a guarded process must never reach it.
- :class:`Origin` is the allowed test server on 127.0.0.2 (the address a test allows with
  ``MONITOR_ALLOW_CIDRS=127.0.0.2/32``), on the canary's port, so a URL that a broken guard
  dials at the wrong loopback address still lands on a recorder. Paths can answer redirects;
  with an ``ssl.SSLContext`` it serves HTTPS and records the SNI names it was asked for.
- :class:`Tripwire` watches one process's TCP and UDP sockets (``/proc``) in a thread and
  records any whose peer is not a loopback address: proof that nothing was dialled outside,
  for targets (10.0.0.5, 169.254.169.254) where a broken guard could not be caught on loopback.

The ``stage`` fixture (import ``stage_fixture``) starts a canary and an origin on one port for
one test; :func:`guarded_scheduler` starts a real scheduler process pointed at a fake DNS
server, with the origin allowed and a tripwire on its sockets.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import ssl
import threading
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv6Address, ip_address

import asyncpg
import pytest
from aiohttp import web

from .procs import MonitorProcess, ProcessFactory

ORIGIN_HOST = "127.0.0.2"
ORIGIN_ALLOW = "127.0.0.2/32"
CANARY_HOSTS = ("127.0.0.1", "::1")
_CANARY_REPLY = b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\ncanary"


def _url(scheme: str, host: str, port: int, path: str) -> str:
    netloc = f"[{host}]" if ":" in host else host
    return f"{scheme}://{netloc}:{port}/{path.lstrip('/')}"


# -- the canary -----------------------------------------------------------------------------


@dataclass
class CanaryHit:
    local: str  # the canary address that was reached (127.0.0.1 or ::1)
    peer: str
    at: float  # time.time()
    data: bytes = b""  # the first bytes the client sent, if any


class Canary:
    """A raw TCP listener on 127.0.0.1 and ::1 that records every connection."""

    def __init__(self) -> None:
        self.hits: list[CanaryHit] = []
        self.port: int | None = None
        self._servers: list[asyncio.base_events.Server] = []

    async def start(self, port: int = 0) -> Canary:
        """Listen on ``port`` (or a free one) on both addresses; OSError if one is taken."""
        try:
            for host in CANARY_HOSTS:
                server = await asyncio.start_server(self._accept, host, port)
                self._servers.append(server)
                port = server.sockets[0].getsockname()[1]
        except OSError:
            await self.close()
            raise
        self.port = port
        return self

    async def close(self) -> None:
        servers, self._servers = self._servers, []
        for server in servers:
            server.close()
            with contextlib.suppress(Exception):
                await server.wait_closed()

    def url(self, host: str = "127.0.0.1", path: str = "/", scheme: str = "http") -> str:
        assert self.port is not None, "Canary not started"
        return _url(scheme, host, self.port, path)

    @property
    def count(self) -> int:
        return len(self.hits)

    def describe(self) -> str:
        return "; ".join(f"{h.peer} -> {h.local}: {h.data[:120]!r}" for h in self.hits) or "none"

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        local = writer.get_extra_info("sockname")[0]
        peer = writer.get_extra_info("peername")[0]
        hit = CanaryHit(str(local), str(peer), time.time())
        self.hits.append(hit)  # counted on accept: whatever the client does next
        try:
            with contextlib.suppress(TimeoutError, OSError):
                async with asyncio.timeout(2.0):
                    hit.data = await reader.read(4096)
            # Answer like a healthy target, so a check that got here looks like a success.
            writer.write(_CANARY_REPLY)
            with contextlib.suppress(OSError):
                await writer.drain()
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()


# -- the allowed origin -------------------------------------------------------------------


@dataclass
class OriginRequest:
    method: str
    path: str
    host: str | None  # the Host header
    local: str  # the address the client dialled
    at: float


@dataclass(frozen=True)
class _Answer:
    status: int = 200
    location: str | None = None
    body: str = "origin"


class Origin:
    """The allowed target: an aiohttp server on 127.0.0.2 whose paths the test scripts."""

    def __init__(self, *, host: str = ORIGIN_HOST, ssl_context: ssl.SSLContext | None = None) -> None:
        self.host = host
        self.requests: list[OriginRequest] = []
        self.sni: list[str | None] = []  # the server name of every TLS handshake
        self.port: int | None = None
        self._answers: dict[str, _Answer] = {}
        self._ssl = ssl_context
        self._runner: web.AppRunner | None = None
        if ssl_context is not None:
            ssl_context.sni_callback = self._on_sni

    async def start(self, port: int = 0) -> Origin:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5, handler_cancellation=True)
        await self._runner.setup()
        try:
            site = web.TCPSite(self._runner, self.host, port, ssl_context=self._ssl)
            await site.start()
        except OSError:
            await self.close()
            raise
        self.port = self._runner.addresses[0][1]
        return self

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def url(self, path: str = "/", host: str | None = None) -> str:
        """A URL of this server; ``host`` replaces the address (a name the fake DNS answers)."""
        assert self.port is not None, "Origin not started"
        return _url("https" if self._ssl else "http", host or self.host, self.port, path)

    def redirect(self, path: str, location: str, status: int = 302) -> None:
        self._answers[_norm(path)] = _Answer(status, location, "")

    def answer(self, path: str, status: int = 200, body: str = "origin") -> None:
        self._answers[_norm(path)] = _Answer(status, None, body)

    def for_path(self, path: str) -> list[OriginRequest]:
        return [r for r in self.requests if r.path == _norm(path)]

    def _on_sni(self, sslobj: ssl.SSLObject | ssl.SSLSocket, name: str | None, _ctx: ssl.SSLContext) -> None:
        self.sni.append(name)

    async def _handle(self, request: web.Request) -> web.Response:
        path = _norm(request.path)
        sockname = request.transport.get_extra_info("sockname") if request.transport else None
        local = str(sockname[0]) if sockname else "?"
        host = request.headers.get("Host")
        self.requests.append(OriginRequest(request.method, path, host, local, time.time()))
        answer = self._answers.get(path, _Answer())
        headers = {"Location": answer.location} if answer.location else None
        return web.Response(status=answer.status, text=answer.body, headers=headers)


def _norm(path: str) -> str:
    return "/" + path.lstrip("/")


async def start_canary_and_origin(attempts: int = 20) -> tuple[Canary, Origin]:
    """A canary and an origin on one port number (127.0.0.1, ::1 and 127.0.0.2)."""
    for _ in range(attempts):
        canary = await Canary().start()
        assert canary.port is not None
        try:
            origin = await Origin().start(canary.port)
        except OSError:  # that port is taken on 127.0.0.2: try another
            await canary.close()
            continue
        return canary, origin
    raise RuntimeError(f"no port free on 127.0.0.1, ::1 and {ORIGIN_HOST} after {attempts} attempts")


@dataclass
class Stage:
    """The canary and the allowed origin, sharing a port."""

    canary: Canary
    origin: Origin

    @property
    def port(self) -> int:
        assert self.canary.port is not None
        return self.canary.port


@pytest.fixture(name="stage")
async def stage_fixture() -> AsyncIterator[Stage]:
    """The canary on 127.0.0.1/::1 and the allowed origin on 127.0.0.2, on one port."""
    canary, origin = await start_canary_and_origin()
    try:
        yield Stage(canary, origin)
    finally:
        await origin.close()
        await canary.close()


# -- the tripwire -------------------------------------------------------------------------

_TCP_STATES = {
    "01": "ESTABLISHED",
    "02": "SYN_SENT",
    "03": "SYN_RECV",
    "04": "FIN_WAIT1",
    "05": "FIN_WAIT2",
    "06": "TIME_WAIT",
    "07": "CLOSE",
    "08": "CLOSE_WAIT",
    "09": "LAST_ACK",
    "0A": "LISTEN",
    "0B": "CLOSING",
}


@dataclass(frozen=True)
class TripwireHit:
    proto: str  # tcp, tcp6, udp, udp6
    remote: str
    port: int
    state: str

    def __str__(self) -> str:
        return f"{self.proto} to {self.remote} port {self.port} ({self.state})"


def _decode_address(hex_addr: str) -> IPv4Address | IPv6Address:
    # /proc/net/{tcp,udp}[6] print each 32-bit word in host (little-endian) byte order.
    raw = bytes.fromhex(hex_addr)
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return ip_address(words)


def _is_loopback_or_unset(addr: IPv4Address | IPv6Address) -> bool:
    if isinstance(addr, IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return addr.is_loopback or addr.is_unspecified


@dataclass
class Tripwire:
    """Records every socket of process ``pid`` whose peer is outside loopback.

    Polls ``/proc/PID/fd`` and ``/proc/PID/net/{tcp,udp}[6]`` every ``interval`` seconds in a
    thread (so a busy event loop cannot make it miss a connection attempt). A connect that
    the kernel refuses at once (no route) never shows up, but then nothing left the host
    either. A SYN towards a routed address stays visible for the connect timeout.
    """

    pid: int
    interval: float = 0.002
    hits: list[TripwireHit] = field(default_factory=list)
    scans: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> Tripwire:
        self._thread = threading.Thread(target=self._run, name=f"tripwire-{self.pid}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> Tripwire:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def describe(self) -> str:
        return "; ".join(str(h) for h in self.hits) or "none"

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.scan()
            except (FileNotFoundError, ProcessLookupError):
                return  # the process is gone
            self._stop.wait(self.interval)

    def scan(self) -> None:
        inodes = set(self._socket_inodes())
        for proto in ("tcp", "tcp6", "udp", "udp6"):
            for hit in self._table(proto, inodes):
                if hit not in self.hits:
                    self.hits.append(hit)
        self.scans += 1

    def _socket_inodes(self) -> Iterator[str]:
        fd_dir = f"/proc/{self.pid}/fd"
        for fd in os.listdir(fd_dir):
            try:
                link = os.readlink(f"{fd_dir}/{fd}")
            except OSError:
                continue  # closed meanwhile
            if link.startswith("socket:["):
                yield link[8:-1]

    def _table(self, proto: str, inodes: set[str]) -> Iterator[TripwireHit]:
        try:
            with open(f"/proc/{self.pid}/net/{proto}") as table:
                lines = table.read().splitlines()[1:]
        except FileNotFoundError:
            if proto.endswith("6"):
                return  # no IPv6 in this kernel
            raise
        for line in lines:
            parts = line.split()
            if len(parts) < 10 or parts[9] not in inodes:
                continue
            hex_addr, hex_port = parts[2].split(":")
            remote = _decode_address(hex_addr)
            if _is_loopback_or_unset(remote):
                continue
            state = _TCP_STATES.get(parts[3], parts[3]) if proto.startswith("tcp") else "udp"
            yield TripwireHit(proto, str(remote), int(hex_port, 16), state)


def tripwire_self_test() -> bool:
    """True if this kernel lets the tripwire see a socket's peer (sanity check for tests)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.connect(("192.0.2.1", 9))  # UDP connect sends nothing; it only sets the peer
        wire = Tripwire(os.getpid())
        wire.scan()
        return any(h.remote == "192.0.2.1" and h.port == 9 for h in wire.hits)


# -- a guarded scheduler ------------------------------------------------------------------


@contextlib.asynccontextmanager
async def guarded_scheduler(
    procs: ProcessFactory,
    nameserver: str,
    *,
    allow: str = ORIGIN_ALLOW,
    env: Mapping[str, str] | None = None,
) -> AsyncIterator[tuple[MonitorProcess, Tripwire]]:
    """A real ``monitor scheduler`` resolving through ``nameserver`` (``127.0.0.1:PORT``) with
    only ``allow`` excepted from the deny list, and a :class:`Tripwire` on its sockets from
    before its first check to its exit. The probe listener is off (it would take port 8081).

    Leaving the block stops the scheduler gracefully (its finished checks are written), so
    what the servers saw and the stored checks can be compared exactly afterwards."""
    full = {
        "MONITOR_DNS_SERVERS": nameserver,
        "MONITOR_ALLOW_CIDRS": allow,
        "MONITOR_SCHEDULER_HTTP_PORT": "0",
    }
    full.update(env or {})
    assert tripwire_self_test(), "the tripwire cannot read socket peers from /proc on this machine"
    proc = procs.spawn("scheduler", env=full)
    wire = Tripwire(proc.pid).start()
    try:
        await proc.wait_log("scheduler.started", timeout=30)
        yield proc, wire
        code = await proc.terminate()
        assert code == 0, f"the scheduler exited with {code}: {proc.tail()}"
    finally:
        wire.stop()


async def checks_of(db: asyncpg.Connection, monitor_id: int) -> list[asyncpg.Record]:
    """The stored checks of one monitor, oldest first."""
    return await db.fetch(
        "SELECT time, ok, status_code, error, location FROM checks WHERE monitor_id = $1 ORDER BY time",
        monitor_id,
    )


async def check_counts(db: asyncpg.Connection, monitor_ids: list[int]) -> dict[int, int]:
    rows = await db.fetch(
        "SELECT monitor_id, count(*) AS n FROM checks"
        " WHERE monitor_id = ANY($1::bigint[]) GROUP BY monitor_id",
        monitor_ids,
    )
    counts = dict.fromkeys(monitor_ids, 0)
    counts.update({r["monitor_id"]: r["n"] for r in rows})
    return counts
