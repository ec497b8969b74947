"""The mixed fleet of ``bench.scheduler --scenario mix``: monitors of every type, and what they reach.

Every type's target is on loopback, served by this harness (pinned beside nginx, off the
scheduler's core), so a run measures the scheduler and not the network:

* ``http``: nginx's ``200 ok`` (bench/nginx.py), judged by its status, as in the ``status``
  scenario.
* ``tcp``: :class:`Banner`, an SMTP-like listener that sends ``220 bench.test ESMTP`` on
  connect; the monitor expects ``220`` (a banner check: connect, read until found, hang up).
* ``dns``: :class:`DnsResponder`, a UDP server that answers every A question with
  ``127.0.0.1``; the monitor asks it (``nameservers``) for ``bench.test`` and expects an answer.
* ``tls``: :class:`TlsListener`, a TLS server whose certificate for ``bench.test`` comes from a
  trustme CA, which the scheduler trusts through ``MONITOR_CA_FILE``: a full handshake and
  chain verification per check.
* ``ping``: ICMP echo to ``127.0.0.1`` with the type's defaults (3 echoes, 200 ms apart).
  Loopback only: nothing leaves the machine.
* ``heartbeat``: no target; :class:`Pinger` writes one row per monitor per interval into
  ``pings`` (as the api does, in one INSERT per 100 ms), at offsets spread over the interval,
  each stamped with its due time, so every monitor has exactly window / interval results in
  a window of whole intervals. Their results carry no lateness (nothing was scheduled), so
  the lateness figures are those of the other types.

Settings are validated by each type's own model and stored as the api stores them
(``model_dump(mode="json")``, the target from ``target()``), so a run fails early when a
type's fields change. Types are interleaved by monitor id, so each type's monitors spread
over the interval like the others'.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import ssl
import struct
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import asyncpg

TYPES = ("http", "tcp", "dns", "tls", "ping", "heartbeat")
NAME = "bench.test"
BANNER = b"220 bench.test ESMTP ready\r\n"
PING_TICK_SECONDS = 0.1


def parse_mix(spec: str) -> dict[str, int]:
    """``"http,tcp"`` (equal shares) or ``"http=2,tcp=1"`` → {type: weight}; ``all``: every type."""
    if spec.strip() == "all":
        return dict.fromkeys(TYPES, 1)
    mix: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        kind, _, weight = part.partition("=")
        if kind not in TYPES:
            raise ValueError(f"unknown type {kind!r} in the mix (known: {', '.join(TYPES)})")
        if kind in mix:
            raise ValueError(f"type {kind!r} twice in the mix")
        mix[kind] = int(weight) if weight else 1
        if mix[kind] < 1:
            raise ValueError(f"weight of {kind!r} must be at least 1")
    if not mix:
        raise ValueError("an empty mix")
    return mix


def kinds(mix: dict[str, int], count: int) -> list[str]:
    """The type of monitors 1..count: the mix's pattern repeated (``http=2,tcp=1``: h, h, t, ...)."""
    pattern = [kind for kind, weight in mix.items() for _ in range(weight)]
    return list(itertools.islice(itertools.cycle(pattern), count))


class Banner(asyncio.Protocol):
    """Sends the banner on connect and closes when the client does."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.WriteTransport)
        transport.write(BANNER)


class Quiet(asyncio.Protocol):
    """Says nothing (the TLS check hangs up once it has the chain)."""


class DnsResponder(asyncio.DatagramProtocol):
    """Every A question answered ``127.0.0.1`` (TTL 60); any other type an empty NOERROR."""

    def __init__(self) -> None:
        self.transport: asyncio.DatagramTransport | None = None
        self.queries = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        answer = dns_answer(data)
        if answer is not None and self.transport is not None:
            self.queries += 1
            self.transport.sendto(answer, addr)


def dns_answer(query: bytes) -> bytes | None:
    """The response to ``query`` (None: not a query we can read)."""
    if len(query) < 12:
        return None
    ident, flags, qdcount = struct.unpack("!HHH", query[:6])
    if qdcount != 1 or flags & 0x8000:
        return None
    end = 12
    while end < len(query) and query[end] != 0:
        end += query[end] + 1
    end += 1
    if end + 4 > len(query):
        return None
    qtype = struct.unpack("!H", query[end : end + 2])[0]
    question = query[12 : end + 4]
    records = b""
    if qtype == 1:  # A: a pointer to the question's name, IN, TTL 60, 127.0.0.1
        records = struct.pack("!HHHIH", 0xC00C, 1, 1, 60, 4) + bytes([127, 0, 0, 1])
    header = struct.pack("!HHHHHH", ident, 0x8180 | (flags & 0x0100), 1, 1 if records else 0, 0, 0)
    return header + question + records


class LocalServers:
    """The tcp, dns and tls targets on 127.0.0.1, and the CA file the scheduler must trust."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.ca_file = root / "ca.pem"
        self.tcp_port = self.dns_port = self.tls_port = 0
        self.dns = DnsResponder()
        self._servers: list[asyncio.Server] = []
        self._udp: asyncio.DatagramTransport | None = None

    async def start(self) -> None:
        import trustme  # a test dependency: only this scenario needs it

        self.root.mkdir(parents=True, exist_ok=True)
        ca = trustme.CA()
        ca.cert_pem.write_to_path(str(self.ca_file))
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert(NAME).configure_cert(context)
        loop = asyncio.get_running_loop()
        tcp = await loop.create_server(Banner, "127.0.0.1", 0, backlog=4096)
        tls = await loop.create_server(Quiet, "127.0.0.1", 0, ssl=context, backlog=4096)
        self._servers = [tcp, tls]
        self.tcp_port = tcp.sockets[0].getsockname()[1]
        self.tls_port = tls.sockets[0].getsockname()[1]
        transport, _ = await loop.create_datagram_endpoint(lambda: self.dns, local_addr=("127.0.0.1", 0))
        self._udp = transport
        self.dns_port = transport.get_extra_info("sockname")[1]

    async def stop(self) -> None:
        for server in self._servers:
            server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 5)
        if self._udp is not None:
            self._udp.close()

    def settings(self, kind: str) -> dict[str, Any]:
        """What a monitor of ``kind`` is given (before its model's defaults are filled in)."""
        options: dict[str, dict[str, Any]] = {
            "tcp": {"host": "127.0.0.1", "port": self.tcp_port, "expect": "220"},
            "dns": {"domain": NAME, "record_type": "A", "nameservers": [f"127.0.0.1:{self.dns_port}"]},
            "tls": {"host": "127.0.0.1", "port": self.tls_port, "server_name": NAME},
            "ping": {"host": "127.0.0.1"},
            "heartbeat": {},
        }
        return options.get(kind, {})


def monitor_rows(
    kinds_: list[str], servers: LocalServers, *, http_url: str, interval: float, timeout: float, account: int
) -> Iterator[tuple[Any, ...]]:
    """COPY rows (see :data:`COLUMNS`) for monitors 1..N of the given types."""
    from monitor.checks import REGISTRY
    from monitor.checks.heartbeat import new_token

    stored: dict[str, tuple[str, str]] = {}
    for kind in set(kinds_) - {"http"}:
        check = REGISTRY.get(kind)
        assert check.Settings is not None
        settings = check.Settings.model_validate(servers.settings(kind))
        stored[kind] = (check.target(settings), json.dumps(settings.model_dump(mode="json")))
    stored["http"] = (http_url, "{}")
    for i, kind in enumerate(kinds_, 1):
        url, settings_json = stored[kind]
        token = new_token() if kind == "heartbeat" else None
        yield (f"bench-{kind}-{i}", kind, url, interval, timeout, settings_json, token, account)


COLUMNS = (
    "name",
    "type",
    "url",
    "interval_seconds",
    "timeout_seconds",
    "settings",
    "ping_token",
    "account_id",
)


async def insert(
    conn: asyncpg.Connection,
    mix: dict[str, int],
    count: int,
    servers: LocalServers,
    *,
    http_url: str,
    interval: float,
    check_timeout: float,
) -> dict[str, int]:
    """Insert the fleet by COPY; how many monitors of each type."""
    account = await conn.fetchval("INSERT INTO accounts (name) VALUES ('bench') RETURNING id")
    types = kinds(mix, count)
    rows = monitor_rows(
        types, servers, http_url=http_url, interval=interval, timeout=check_timeout, account=account
    )
    await conn.copy_records_to_table("monitors", records=rows, columns=COLUMNS)
    return {kind: types.count(kind) for kind in mix}


class Pinger:
    """Pings every heartbeat monitor once per ``interval``, at offsets spread over it, by
    INSERTs into ``pings`` (one per tick of :data:`PING_TICK_SECONDS`)."""

    def __init__(self, dsn: str, interval: float) -> None:
        self._dsn = dsn
        self._interval = interval
        self._task: asyncio.Task[None] | None = None
        self.sent = 0

    async def start(self) -> None:
        conn = await asyncpg.connect(self._dsn)
        ids = [
            r["id"] for r in await conn.fetch("SELECT id FROM monitors WHERE type = 'heartbeat' ORDER BY id")
        ]
        self._task = asyncio.create_task(self._run(conn, ids))

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self, conn: asyncpg.Connection, ids: list[int]) -> None:
        # Monitor k of n is due at epoch + k * interval / n + m * interval, for every m.
        n = len(ids)
        epoch = time.time()
        done = 0  # pings due so far (m * n + k), all sent
        try:
            while n:
                now = time.time()
                due_until = int((now - epoch) / self._interval * n) + 1
                batch = [(ids[j % n], epoch + j * self._interval / n) for j in range(done, due_until)]
                if batch:
                    await conn.execute(
                        """INSERT INTO pings (monitor_id, time, kind)
                           SELECT m, t, 'ok' FROM unnest($1::bigint[], $2::timestamptz[]) AS p(m, t)""",
                        [m for m, _ in batch],
                        [datetime.fromtimestamp(t, UTC) for _, t in batch],
                    )
                    self.sent += len(batch)
                    done = due_until
                await asyncio.sleep(PING_TICK_SECONDS)
        finally:
            await conn.close()
