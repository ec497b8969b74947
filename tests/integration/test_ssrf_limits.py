"""A hostile allowed target cannot exhaust the scheduler's memory: huge bodies are read only up
to the cap (and only by a monitor whose assertion needs the body), endless headers fail the
check, and the scheduler's resident memory stays within a cap.

The hostile server runs on the allowed address 127.0.0.2 and speaks raw HTTP, so it can
declare 1 GiB, stream without end, send 128 MiB gzipped into 128 KiB, or never finish its
headers. Each behaviour is one monitor checked every second; the scheduler's VmRSS is sampled
(``/proc/PID/status``) from before the hostile monitors exist until each has failed several
times.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import asyncpg
import pytest
from support import ProcessFactory, wait_for
from support.canary import ORIGIN_HOST, check_counts, checks_of, guarded_scheduler
from support.dns import DNSServer, dns_fixture  # noqa: F401  (the dns fixture)

pytestmark = pytest.mark.timeout(90)

MonitorFactory = Callable[..., Awaitable[asyncpg.Record]]  # the conftest fixture

MiB = 1024 * 1024
GiB = 1024 * MiB
RSS_CAP = 50 * MiB  # growth over the baseline the scheduler may show
BODY_CAP = MiB  # the client's default max_body_bytes
HEAD_CAP = 256 * 1024  # MONITOR_HTTP_MAX_HEAD_BYTES
MAX_HEADERS = 1000  # MONITOR_HTTP_MAX_HEADERS
# A body assertion makes the check read the body (up to the cap); a keyword that is never
# there makes every such check fail, on the assertion, after reading exactly the cap.
NEVER_THERE = {"assertions": [{"type": "keyword", "keyword": "never-there"}]}
HOSTILE_CHECKS = 3
_CHUNK = b"x" * 65536
_ZEROS = bytes(MiB)


# -- the hostile server ------------------------------------------------------------------


@dataclass
class Connection:
    path: str
    sent: int = 0


@dataclass
class HostileServer:
    """Raw HTTP on 127.0.0.2; the request path picks the behaviour. Never sends more than
    1 GiB on one connection, and stops as soon as the client goes away."""

    bomb: bytes = b""  # served gzipped at /gzip-bomb
    connections: list[Connection] = field(default_factory=list)
    port: int | None = None
    _server: asyncio.base_events.Server | None = None
    _handlers: set[asyncio.Task[None]] = field(default_factory=set)

    async def start(self) -> HostileServer:
        self._server = await asyncio.start_server(self._serve, ORIGIN_HOST, 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)

    def url(self, path: str) -> str:
        return f"http://{ORIGIN_HOST}:{self.port}{path}"

    def most_sent(self, path: str) -> int:
        return max((c.sent for c in self.connections if c.path == path), default=0)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        task.add_done_callback(self._handlers.discard)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            path = head.split(b" ", 2)[1].decode()
            conn = Connection(path)
            self.connections.append(conn)
            await self._behave(conn, writer)
        except (OSError, asyncio.IncompleteReadError):
            pass  # the client hung up: the point of most behaviours
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def _behave(self, conn: Connection, writer: asyncio.StreamWriter) -> None:
        if conn.path == "/ok":
            await self._send(conn, writer, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            return
        if conn.path == "/gzip-bomb":
            # Dense: each network read inflates to tens of MiB, as a real bomb would.
            head = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(self.bomb)
            await self._send(conn, writer, head + self.bomb)
            return
        heads = {
            "/content-length-1g": b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % GiB,
            "/chunked-endless": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            "/until-close": b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n",
            "/endless-header": b"HTTP/1.1 200 OK\r\nX-Endless: ",
            "/endless-headers": b"HTTP/1.1 200 OK\r\n",
            "/endless-status": b"HTTP/1.1 200 ",
        }
        chunks = {
            "/chunked-endless": b"%x\r\n" % len(_CHUNK) + _CHUNK + b"\r\n",
            "/endless-headers": b"X-Again: and again\r\n" * 3000,
        }
        await self._send(conn, writer, heads[conn.path])
        chunk = chunks.get(conn.path, _CHUNK)
        while conn.sent < GiB:
            await self._send(conn, writer, chunk)

    @staticmethod
    async def _send(conn: Connection, writer: asyncio.StreamWriter, data: bytes) -> None:
        writer.write(data)
        await writer.drain()  # raises once the client is gone
        conn.sent += len(data)


def gzip_bomb(size: int) -> bytes:
    """``size`` zero bytes, gzipped: about a thousandth of that on the wire."""
    gzip = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return b"".join(gzip.compress(_ZEROS) for _ in range(size // MiB)) + gzip.flush()


@pytest.fixture
async def hostile() -> AsyncIterator[HostileServer]:
    server = await HostileServer(bomb=await asyncio.to_thread(gzip_bomb, 128 * MiB)).start()
    try:
        yield server
    finally:
        await server.close()


# -- memory ------------------------------------------------------------------------------


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS in /proc/{pid}/status")


class RssSampler:
    """Samples a process's VmRSS in a thread (every 10 ms), so no peak is missed while the
    test's own event loop is busy serving the hostile target."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.samples: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"rss-{pid}", daemon=True)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.samples.append(rss_bytes(self.pid))
            except (FileNotFoundError, ProcessLookupError):
                return
            self._stop.wait(0.01)

    def peak_since(self, index: int) -> int:
        return max(self.samples[index:], default=0)


# -- the test ----------------------------------------------------------------------------

NOT_IN_CAP = 'keyword "never-there" not found in the first 1 MiB'
HEAD_OVER = f"invalid response: the response head exceeds {HEAD_CAP} bytes"
EXPECTED = {
    # path: (status code stored, error prefix)
    "/content-length-1g": (200, NOT_IN_CAP),
    "/chunked-endless": (200, NOT_IN_CAP),
    "/until-close": (200, NOT_IN_CAP),
    "/gzip-bomb": (200, NOT_IN_CAP),  # the cap counts decoded bytes
    "/endless-header": (None, HEAD_OVER),
    "/endless-headers": (None, f"invalid response: more than {MAX_HEADERS} header fields"),
    "/endless-status": (None, HEAD_OVER),
}


async def test_huge_and_endless_responses_fail_without_growing_memory(
    db: asyncpg.Connection,
    monitor_factory: MonitorFactory,
    procs: ProcessFactory,
    dns: DNSServer,
    hostile: HostileServer,
) -> None:
    async with guarded_scheduler(procs, dns.nameserver) as (proc, wire):
        with RssSampler(proc.pid) as rss:
            # Baseline: the scheduler after it has made real checks (session, TLS context,
            # parser all warmed up), before any hostile monitor exists.
            control = await monitor_factory(url=hostile.url("/ok"))

            async def control_checked() -> bool:
                return (await check_counts(db, [control["id"]]))[control["id"]] >= 2

            await wait_for(control_checked, timeout=20, message="2 checks of the control monitor")
            baseline_index = len(rss.samples)
            baseline = max(rss.samples[-10:])

            ids = {}
            for path in EXPECTED:
                row = await monitor_factory(url=hostile.url(path), timeout_seconds=5.0, settings=NEVER_THERE)
                ids[path] = row["id"]

            async def all_failed_enough() -> bool:
                counts = await check_counts(db, list(ids.values()))
                return min(counts.values()) >= HOSTILE_CHECKS

            await wait_for(
                all_failed_enough, timeout=40, message=f"{HOSTILE_CHECKS} checks of each hostile monitor"
            )
            peak = rss.peak_since(baseline_index)
    assert not wire.hits, f"the scheduler opened sockets outside loopback: {wire.describe()}"

    growth = peak - baseline
    print(f"scheduler VmRSS: baseline {baseline / MiB:.1f} MiB, peak {peak / MiB:.1f} MiB")
    assert growth < RSS_CAP, (
        f"scheduler VmRSS grew {growth / MiB:.1f} MiB (baseline {baseline / MiB:.1f} MiB)"
    )
    wrong = []
    for path, (status, prefix) in EXPECTED.items():
        for row in await checks_of(db, ids[path]):
            if row["ok"] or row["status_code"] != status or not (row["error"] or "").startswith(prefix):
                wrong.append(f"{path}: want status={status} error={prefix!r}..., got {dict(row)}")
                break
    assert not wrong, "hostile checks stored wrongly:\n" + "\n".join(wrong)
    control_rows = await checks_of(db, control["id"])
    assert all(r["ok"] for r in control_rows), control_rows

    # The client hung up long before the server's 1 GiB: it read about the cap, not the body.
    for path in EXPECTED:
        assert hostile.most_sent(path) < 64 * MiB, (path, hostile.most_sent(path))
