"""fetch() against local servers only: 127.0.0.2 plays the allowed target, 127.0.0.1 the canary.

The canary is a server on a loopback address that is never in the allow-list; every test that
should be blocked asserts it saw zero connections. No socket leaves loopback.
The fake DNS server comes from tests/support/dns.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import socket
import ssl
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import trustme
from aiohttp import web
from support.dns import DNSServer, dns_fixture  # noqa: F401  (the dns fixture)
from yarl import URL

from monitor.net.client import FetchResult, HttpSession, fetch, make_session
from monitor.net.policy import AddressPolicy
from monitor.net.resolver import VettedResolver
from monitor.net.session import tls_context

ALLOWED = "127.0.0.2"
CANARY = "127.0.0.1"
MiB = 1024 * 1024

StreamHandler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@dataclass
class RawServer:
    """A TCP server that records every connection; ``sent`` counts bytes a handler wrote."""

    host: str
    port: int = 0
    connections: int = 0
    sent: int = 0

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


@pytest.fixture
async def raw_server() -> AsyncIterator[Callable[..., Awaitable[RawServer]]]:
    servers: list[asyncio.Server] = []

    async def start(handler: StreamHandler | None = None, host: str = ALLOWED, port: int = 0) -> RawServer:
        record = RawServer(host)

        async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            record.connections += 1
            try:
                if handler is None:
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\ncanary")
                    await writer.drain()
                else:
                    await handler(reader, writer)
            except (ConnectionError, asyncio.CancelledError):
                pass
            finally:
                writer.close()

        server = await asyncio.start_server(on_connect, host, port)
        servers.append(server)
        record.port = server.sockets[0].getsockname()[1]
        return record

    yield start
    for server in servers:
        server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 5)


@pytest.fixture
async def canary(raw_server: Callable[..., Awaitable[RawServer]]) -> RawServer:
    return await raw_server(host=CANARY)


async def _echo(request: web.Request) -> web.Response:
    names = ("Authorization", "Cookie", "X-Keep", "Host", "X-Api-Key", "Content-Type")
    seen = {k: request.headers.get(k) for k in names}
    return web.json_response({"method": request.method, "headers": seen})


def _app() -> web.Application:
    app = web.Application()

    async def ok(_: web.Request) -> web.Response:
        return web.Response(text="hello")

    async def redirect(request: web.Request) -> web.Response:
        raise web.HTTPFound(request.query["to"])

    async def see_other(_: web.Request) -> web.Response:
        raise web.HTTPSeeOther("/echo")

    async def loop(_: web.Request) -> web.Response:
        raise web.HTTPFound("/loop")

    async def big(_: web.Request) -> web.Response:
        return web.Response(body=b"x" * 2000)

    app.router.add_get("/ok", ok)
    app.router.add_get("/redirect", redirect)
    app.router.add_route("*", "/see-other", see_other)
    app.router.add_get("/loop", loop)
    app.router.add_get("/big", big)
    app.router.add_route("*", "/echo", _echo)
    return app


@pytest.fixture
async def web_server() -> AsyncIterator[Callable[..., Awaitable[str]]]:
    runners: list[web.AppRunner] = []

    async def start(host: str = ALLOWED, ssl_context: ssl.SSLContext | None = None) -> str:
        runner = web.AppRunner(_app())
        await runner.setup()
        runners.append(runner)
        site = web.TCPSite(runner, host, 0, ssl_context=ssl_context)
        await site.start()
        port = runner.addresses[0][1]
        return f"{'https' if ssl_context else 'http'}://{host}:{port}"

    yield start
    for runner in runners:
        await runner.cleanup()


@dataclass
class Client:
    session: HttpSession
    policy: AddressPolicy
    dns: DNSServer
    resolver: VettedResolver

    async def get(self, url: str, **kwargs: object) -> FetchResult:
        kwargs.setdefault("timeout", 5.0)
        return await fetch(self.session, self.policy, url, **kwargs)  # type: ignore[arg-type]


@dataclass
class ClientFactory:
    dns: DNSServer
    made: list[Client] = field(default_factory=list)

    def __call__(self, allow: list[str] | None = None, **session_kwargs: object) -> Client:
        policy = AddressPolicy([ALLOWED + "/32"] if allow is None else allow)
        resolver = VettedResolver(policy, [self.dns.nameserver], timeout=2.0)
        session = make_session(resolver, **session_kwargs)  # type: ignore[arg-type]
        client = Client(session, policy, self.dns, resolver)
        self.made.append(client)
        return client


@pytest.fixture
async def make_client(dns: DNSServer) -> AsyncIterator[ClientFactory]:
    factory = ClientFactory(dns)
    yield factory
    for client in factory.made:
        await client.session.close()
        await client.resolver.close()


async def test_200_by_literal(make_client: ClientFactory, web_server: Callable[..., Awaitable[str]]) -> None:
    base = await web_server()
    got = await make_client().get(f"{base}/ok")
    assert (got.status, got.ok_transport, got.error, got.blocked) == (200, True, None, False)
    assert got.body == b"hello"
    assert got.peer == ALLOWED
    assert got.final_url == f"{base}/ok"
    assert set(got.timings) == {"dns_ms", "connect_ms", "tls_ms", "ttfb_ms", "total_ms"}
    assert got.timings["dns_ms"] is None  # literals skip resolution
    assert got.timings["ttfb_ms"] is not None and got.timings["total_ms"] is not None
    assert got.elapsed_ms > 0


async def test_200_by_name_dials_the_vetted_address(
    make_client: ClientFactory, web_server: Callable[..., Awaitable[str]]
) -> None:
    base = await web_server()
    port = base.rsplit(":", 1)[1]
    client = make_client()
    client.dns.protocol.zone["app.test"] = [("A", ALLOWED)]
    got = await client.get(f"http://app.test:{port}/echo")
    assert got.status == 200 and got.error is None
    assert got.peer == ALLOWED
    assert b'"Host": "app.test:' in got.body  # the name travels in Host, the socket goes to the IP
    assert got.timings["dns_ms"] is not None and got.timings["connect_ms"] is not None
    assert got.timings["tls_ms"] is None


async def test_literal_blocked_before_connecting(make_client: ClientFactory, canary: RawServer) -> None:
    got = await make_client().get(f"{canary.url}/")
    assert got.blocked and not got.ok_transport
    assert got.error == "blocked: 127.0.0.1 (loopback 127.0.0.0/8)"
    assert got.status is None
    assert canary.connections == 0


@pytest.mark.parametrize(
    ("records", "error"),
    [
        ([("A", CANARY)], "blocked: evil.test resolves to 127.0.0.1 (loopback 127.0.0.0/8)"),
        (
            [("A", ALLOWED), ("A", "10.0.0.5")],
            "blocked: evil.test resolves to 10.0.0.5 (private-use 10.0.0.0/8)",
        ),
        (
            [("A", CANARY), ("AAAA", "fd00::1")],
            "blocked: evil.test resolves to 127.0.0.1 (loopback 127.0.0.0/8)",
        ),
        ([("CNAME", "inner.test")], "blocked: evil.test resolves to 127.0.0.1 (loopback 127.0.0.0/8)"),
    ],
)
async def test_name_blocked_at_connect(
    make_client: ClientFactory, canary: RawServer, records: list[tuple[str, str]], error: str
) -> None:
    client = make_client()
    client.dns.protocol.zone.update({"evil.test": records, "inner.test": [("A", CANARY)]})
    got = await client.get(f"http://evil.test:{canary.port}/")
    assert (got.blocked, got.error) == (True, error)
    assert canary.connections == 0


@pytest.mark.parametrize(
    "records",
    [[("A", CANARY), ("A", ALLOWED)], [("AAAA", "::1"), ("A", ALLOWED)], [("A", ALLOWED), ("A", CANARY)]],
)
async def test_a_name_all_on_loopback_is_dialled_on_its_allowed_answers_only(
    make_client: ClientFactory, canary: RawServer, records: list[tuple[str, str]]
) -> None:
    client = make_client()
    client.dns.protocol.zone["dev.test"] = records
    got = await client.get(f"http://dev.test:{canary.port}/")
    # Nothing listens on the allowed address at the canary's port: the one dial there is refused.
    assert not got.blocked and got.error == f"connection failed: refused by {ALLOWED} port {canary.port}"
    assert canary.connections == 0


async def test_rebinding_across_many_checks(
    make_client: ClientFactory, raw_server: Callable[..., Awaitable[RawServer]], canary: RawServer
) -> None:
    # Same port on both addresses, so only the answer decides which server a connection reaches.
    target = await raw_server(host=ALLOWED, port=canary.port)
    client = make_client()
    client.dns.protocol.zone["rebind.test"] = lambda n: [("A", ALLOWED if n == 1 else CANARY)]
    results = [await client.get(f"http://rebind.test:{target.port}/") for _ in range(6)]
    assert results[0].status == 200 and results[0].peer == ALLOWED
    assert all(r.blocked for r in results[1:])
    assert target.connections == 1 and canary.connections == 0


async def test_3xx_not_followed_by_default(
    make_client: ClientFactory, web_server: Callable[..., Awaitable[str]], canary: RawServer
) -> None:
    base = await web_server()
    got = await make_client().get(f"{base}/redirect?to={canary.url}/")
    assert (got.status, got.error, got.ok_transport) == (302, None, True)
    assert got.location == f"{canary.url}/"
    assert canary.connections == 0


async def test_redirect_followed(
    make_client: ClientFactory, web_server: Callable[..., Awaitable[str]]
) -> None:
    base = await web_server()
    got = await make_client().get(f"{base}/redirect?to=/ok", follow_redirects=True)
    assert (got.status, got.body, got.location) == (200, b"hello", None)
    assert got.final_url == f"{base}/ok"


@pytest.mark.parametrize(
    ("location", "error"),
    [
        ("http://127.0.0.1:{port}/", "blocked: 127.0.0.1 (loopback 127.0.0.0/8)"),
        ("http://[::ffff:127.0.0.1]:{port}/", "blocked: ::ffff:127.0.0.1 (IPv4-mapped 127.0.0.1, loopback"),
        ("http://evil.test:{port}/", "blocked: evil.test resolves to 127.0.0.1 (loopback 127.0.0.0/8)"),
        ("http://localhost:{port}/", "blocked: localhost resolves to 127.0.0.1 (loopback 127.0.0.0/8)"),
        (
            "http://2130706433:{port}/",
            "redirect to invalid target 'http://2130706433:{port}/': non-canonical",
        ),
        ("http://0x7f.1:{port}/", "redirect to invalid target 'http://0x7f.1:{port}/': non-canonical"),
        (
            "http://0177.0.0.1:{port}/",
            "redirect to invalid target 'http://0177.0.0.1:{port}/': non-canonical",
        ),
        ("gopher://127.0.0.1:{port}/_x", "redirect to invalid target 'gopher://127.0.0.1:{port}/_x': scheme"),
        (
            "http://u:p@127.0.0.1:{port}/",
            "redirect to invalid target 'http://u:p@127.0.0.1:{port}/': credentials",
        ),
    ],
)
async def test_redirect_hops_are_judged(
    make_client: ClientFactory,
    web_server: Callable[..., Awaitable[str]],
    canary: RawServer,
    location: str,
    error: str,
) -> None:
    base = await web_server()
    client = make_client()
    client.dns.protocol.zone["evil.test"] = [("A", CANARY)]
    to = location.format(port=canary.port)
    got = await client.get(str(URL(f"{base}/redirect").with_query(to=to)), follow_redirects=True)
    assert got.error is not None and got.error.startswith(error.format(port=canary.port)), got.error
    assert not got.ok_transport
    assert got.blocked is error.startswith("blocked")
    assert canary.connections == 0


async def test_too_many_redirects(
    make_client: ClientFactory, web_server: Callable[..., Awaitable[str]]
) -> None:
    base = await web_server()
    got = await make_client().get(f"{base}/loop", follow_redirects=True, max_redirects=3)
    assert got.error == "too many redirects (more than 3)"
    assert got.status == 302


@pytest.mark.parametrize("cross_origin", [True, False])
async def test_credentials_dropped_on_cross_origin_hop(
    make_client: ClientFactory, web_server: Callable[..., Awaitable[str]], cross_origin: bool
) -> None:
    first = await web_server()
    second = await web_server() if cross_origin else first  # another port: another origin
    url = URL(f"{first}/redirect").with_query(to=f"{second}/echo")
    headers = {"Authorization": "Bearer s3cret", "Cookie": "session=1", "X-Keep": "yes"}
    got = await make_client().get(str(url), follow_redirects=True, headers=headers)
    assert got.status == 200
    seen = json.loads(got.body)["headers"]
    assert seen["X-Keep"] == "yes"
    if cross_origin:
        assert seen["Authorization"] is None and seen["Cookie"] is None
    else:
        assert seen["Authorization"] == "Bearer s3cret" and seen["Cookie"] == "session=1"
    # A monitor's credentials (its auth and sensitive headers, whatever their names) likewise.
    got = await make_client().get(
        str(url), follow_redirects=True, credentials={"X-Api-Key": "k3y", "Authorization": "Basic eDp5"}
    )
    seen = json.loads(got.body)["headers"]
    if cross_origin:
        assert seen["X-Api-Key"] is None and seen["Authorization"] is None
    else:
        assert seen["X-Api-Key"] == "k3y" and seen["Authorization"] == "Basic eDp5"


async def test_303_turns_post_into_get(
    make_client: ClientFactory, web_server: Callable[..., Awaitable[str]]
) -> None:
    base = await web_server()
    got = await make_client().get(f"{base}/see-other", method="POST", follow_redirects=True)
    assert got.status == 200 and b'"method": "GET"' in got.body


async def test_body_over_cap_by_content_length(
    make_client: ClientFactory, web_server: Callable[..., Awaitable[str]]
) -> None:
    base = await web_server()
    got = await make_client().get(f"{base}/big", max_body_bytes=1000)
    # Reaching the cap is no failure: the body is judged on what was read.
    assert (got.status, got.ok_transport, got.error, got.truncated) == (200, True, None, True)
    assert len(got.body) == 1000


async def _stream_forever(writer: asyncio.StreamWriter, record: RawServer, head: bytes, chunk: bytes) -> None:
    # Bounded: stops after 64 MiB even if the client kept reading, so the test always ends.
    writer.write(head)
    while record.sent < 64 * MiB:
        writer.write(chunk)
        await writer.drain()
        record.sent += len(chunk)


@pytest.mark.parametrize("framing", ["content-length-1GB", "chunked-endless", "gzip-bomb"])
async def test_huge_body_stops_at_cap(
    make_client: ClientFactory, raw_server: Callable[..., Awaitable[RawServer]], framing: str
) -> None:
    record: RawServer
    # 64 MiB of zeros in about 64 KiB on the wire: the cap counts decompressed bytes. Built
    # before tracemalloc starts, so the peak measures the client only.
    bomb = gzip.compress(bytes(64 * MiB), compresslevel=9) if framing == "gzip-bomb" else b""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        if framing == "gzip-bomb":
            head = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(bomb)
            writer.write(head + bomb)
            await writer.drain()
            record.sent = len(bomb)
            await reader.read()
            return
        if framing == "chunked-endless":
            head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            data = b"x" * 65536
            chunk = b"%x\r\n" % len(data) + data + b"\r\n"
        else:
            head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (1024 * MiB)
            chunk = b"x" * 65536
        await _stream_forever(writer, record, head, chunk)

    record = await raw_server(handler)
    tracemalloc.start()
    try:
        got = await make_client().get(f"{record.url}/", max_body_bytes=MiB)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (got.status, got.error, got.truncated, len(got.body)) == (200, None, True, MiB)
    assert peak < 8 * MiB, peak
    assert record.sent < 32 * MiB  # the client hung up long before the server's own bound


@pytest.mark.parametrize("shape", ["head-over-256KiB", "endless-line", "too-many-headers"])
async def test_oversized_headers_fail(
    make_client: ClientFactory, raw_server: Callable[..., Awaitable[RawServer]], shape: str
) -> None:
    record: RawServer

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        if shape == "head-over-256KiB":
            writer.write(b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 300_000 + b"\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()
            await reader.read()
        elif shape == "endless-line":
            await _stream_forever(writer, record, b"HTTP/1.1 200 OK\r\nX-Endless: ", b"a" * 4096)
        else:
            lines = b"".join(b"X-H%d: v\r\n" % i for i in range(1001))
            writer.write(b"HTTP/1.1 200 OK\r\n" + lines + b"Content-Length: 0\r\n\r\n")
            await writer.drain()
            await reader.read()

    record = await raw_server(handler)
    got = await make_client().get(f"{record.url}/", timeout=10.0)
    assert not got.ok_transport and got.status is None
    assert got.error is not None and got.error.startswith("invalid response:"), got.error
    assert record.sent < 32 * MiB


async def test_header_cap_is_configurable(
    make_client: ClientFactory, raw_server: Callable[..., Awaitable[RawServer]]
) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nX-Mid: " + b"a" * 3000 + b"\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()

    record = await raw_server(handler)
    assert (await make_client().get(f"{record.url}/")).status == 200
    small = make_client(max_head_bytes=2048)
    assert (await small.get(f"{record.url}/")).error is not None


async def test_timeout(make_client: ClientFactory, raw_server: Callable[..., Awaitable[RawServer]]) -> None:
    async def silent(reader: asyncio.StreamReader, _writer: asyncio.StreamWriter) -> None:
        await reader.read()  # never answers; returns when the client hangs up

    record = await raw_server(silent)
    got = await make_client().get(f"{record.url}/", timeout=0.3)
    assert (got.error, got.status, got.ok_transport, got.blocked) == (
        "timed out after 0.3s waiting for the response head (nothing received)",
        None,
        False,
        False,
    )
    assert 250 < got.elapsed_ms < 3000


async def test_timeout_hangs_up(
    make_client: ClientFactory, raw_server: Callable[..., Awaitable[RawServer]]
) -> None:
    hung_up = asyncio.Event()

    async def silent(reader: asyncio.StreamReader, _writer: asyncio.StreamWriter) -> None:
        await reader.read()
        hung_up.set()

    record = await raw_server(silent)
    got = await make_client().get(f"{record.url}/", timeout=0.2)
    assert got.error == "timed out after 0.2s waiting for the response head (nothing received)"
    await asyncio.wait_for(hung_up.wait(), 2)  # the socket went with the fetch


async def test_connection_refused(make_client: ClientFactory) -> None:
    with socket.socket() as sock:
        sock.bind((ALLOWED, 0))
        port = sock.getsockname()[1]  # bound, not listening: connections are refused
        got = await make_client().get(f"http://{ALLOWED}:{port}/")
    assert got.error is not None and got.error.startswith("connection failed:")
    assert not got.blocked


async def test_unresolvable_name(make_client: ClientFactory) -> None:
    got = await make_client().get("http://nowhere.test/")
    assert got.error == "cannot resolve nowhere.test: no such domain"
    assert not got.blocked


@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("http://u:p@127.0.0.2/", "invalid target: credentials in the URL"),
        ("http://2130706433/", "invalid target: non-canonical numeric host"),
        ("file:///etc/passwd", "invalid target: scheme 'file' not allowed"),
        ("http://[fe80::1%25lo]/", "blocked: fe80::1%lo (zone id %lo)"),
    ],
)
async def test_invalid_targets_never_connect(make_client: ClientFactory, url: str, error: str) -> None:
    got = await make_client().get(url)
    assert got.error is not None and got.error.startswith(error), got.error
    assert got.final_url == url or got.blocked


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


async def test_https_verifies_name_and_dials_vetted_ip(
    make_client: ClientFactory, web_server: Callable[..., Awaitable[str]], ca: trustme.CA
) -> None:
    sni: list[str | None] = []
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("secure.test").configure_cert(server_ctx)
    server_ctx.sni_callback = lambda _sock, name, _ctx: sni.append(name)
    base = await web_server(ssl_context=server_ctx)
    port = base.rsplit(":", 1)[1]
    client_ctx = ssl.create_default_context()
    ca.configure_trust(client_ctx)
    client = make_client(ssl_context=client_ctx)
    client.dns.protocol.zone.update({"secure.test": [("A", ALLOWED)], "other.test": [("A", ALLOWED)]})

    got = await client.get(f"https://secure.test:{port}/echo")
    assert got.status == 200 and got.error is None, got.error
    assert got.peer == ALLOWED and sni == ["secure.test"]
    assert b'"Host": "secure.test:' in got.body
    # TLS runs on the connected socket, so the handshake is timed on its own.
    assert all(got.timings[k] is not None for k in ("dns_ms", "connect_ms", "tls_ms", "ttfb_ms", "total_ms"))

    wrong = await client.get(f"https://other.test:{port}/echo")
    assert wrong.error is not None and wrong.error.startswith("TLS certificate error"), wrong.error
    assert wrong.tls_verified

    # tls_verify off (where the operator allows it): the answer is read, and the result says
    # the certificate was not checked.
    unchecked = await client.get(f"https://other.test:{port}/echo", tls_verify=False)
    assert (unchecked.status, unchecked.error, unchecked.tls_verified) == (200, None, False)


def test_ca_file_adds_to_the_system_trust_store(ca: trustme.CA, tmp_path: Path) -> None:
    pem = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(pem))
    system = tls_context().cert_store_stats()["x509_ca"]
    with_file = tls_context(str(pem)).cert_store_stats()["x509_ca"]
    assert with_file == system + 1


async def test_request_head(
    make_client: ClientFactory, raw_server: Callable[..., Awaitable[RawServer]]
) -> None:
    heads: list[bytes] = []

    async def record(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        heads.append(await reader.readuntil(b"\r\n\r\n"))
        writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
        await writer.drain()

    record_server = await raw_server(record)
    got = await make_client().get(f"{record_server.url}/p/a%20th?q=1#frag", headers={"X-Keep": "yes"})
    assert (got.status, got.error) == (204, None)
    lines = heads[0].decode().split("\r\n")
    assert lines[:2] == ["GET /p/a%20th?q=1 HTTP/1.1", f"Host: {ALLOWED}:{record_server.port}"]
    assert {"X-Keep: yes", "Accept: */*", "Connection: close"} <= set(lines)
    # Never advertised: a check reads at most the cap, so the body is wanted as sent.
    assert not any(line.lower().startswith("accept-encoding") for line in lines)


async def test_header_injection_is_refused(make_client: ClientFactory, canary: RawServer) -> None:
    client = make_client(allow=[CANARY + "/32"])
    got = await client.get(f"{canary.url}/", headers={"X-Bad": "a\r\nInjected: 1"})
    assert got.error == f"invalid request to {canary.url}/: invalid header 'X-Bad'"
    assert canary.connections == 0


async def test_limit_bounds_fetches_in_flight(
    make_client: ClientFactory, raw_server: Callable[..., Awaitable[RawServer]]
) -> None:
    active = peak = 0

    async def slow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await reader.readuntil(b"\r\n\r\n")
        await asyncio.sleep(0.1)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        active -= 1

    record = await raw_server(slow)
    client = make_client(limit=2)
    results = await asyncio.gather(*(client.get(f"{record.url}/") for _ in range(5)))
    assert [r.status for r in results] == [200] * 5
    assert peak == 2


async def test_cancellation_is_not_a_timeout(
    make_client: ClientFactory, raw_server: Callable[..., Awaitable[RawServer]]
) -> None:
    async def silent(reader: asyncio.StreamReader, _writer: asyncio.StreamWriter) -> None:
        await reader.read()

    record = await raw_server(silent)
    client = make_client()
    task = asyncio.create_task(client.get(f"{record.url}/", timeout=5.0))
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # The session is still usable, and an inner timeout still reads as one.
    outer = asyncio.create_task(client.get(f"{record.url}/", timeout=0.1))
    assert (await outer).error == "timed out after 0.1s waiting for the response head (nothing received)"


def test_targets_are_parsed_once_and_bounded(dns: DNSServer) -> None:
    session = make_session(VettedResolver(AddressPolicy()), max_targets=2)
    first, second = session.target("http://a.test/"), session.target("http://b.test/")
    assert session.target("http://a.test/") is first
    third = session.target("http://c.test/")  # full: the newest makes room, the older stay
    assert session.target("http://a.test/") is first and session.target("http://b.test/") is not second
    assert third.host == "c.test"


def test_fetch_on_uvloop(ca: trustme.CA) -> None:
    """The scheduler runs on uvloop: plain, TLS (start_tls on the dialled socket) and timeout."""
    uvloop = pytest.importorskip("uvloop")

    async def main() -> None:
        server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert(ALLOWED).configure_cert(server_ctx)

        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            head = await reader.readuntil(b"\r\n\r\n")
            if b"/silent" not in head:
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                await writer.drain()
            await reader.read()
            writer.close()

        plain = await asyncio.start_server(answer, ALLOWED, 0)
        secure = await asyncio.start_server(answer, ALLOWED, 0, ssl=server_ctx)
        client_ctx = ssl.create_default_context()
        ca.configure_trust(client_ctx)
        policy = AddressPolicy([ALLOWED + "/32"])
        resolver = VettedResolver(policy)
        session = make_session(resolver, ssl_context=client_ctx)
        try:
            plain_port = plain.sockets[0].getsockname()[1]
            secure_port = secure.sockets[0].getsockname()[1]
            got = await fetch(session, policy, f"http://{ALLOWED}:{plain_port}/", timeout=5)
            assert (got.status, got.body, got.error) == (200, b"ok", None)
            got = await fetch(session, policy, f"https://{ALLOWED}:{secure_port}/", timeout=5)
            assert (got.status, got.body, got.error) == (200, b"ok", None)
            assert got.timings["tls_ms"] is not None
            got = await fetch(session, policy, f"http://{ALLOWED}:{plain_port}/silent", timeout=0.2)
            assert got.error == "timed out after 0.2s waiting for the response head (nothing received)"
        finally:
            await session.close()
            await resolver.close()
            for server in (plain, secure):
                server.close()
                await server.wait_closed()

    uvloop.run(main())


async def test_headers_asked_for_are_the_final_responses(
    make_client: ClientFactory, raw_server: Callable[..., Awaitable[RawServer]]
) -> None:
    """A header the redirect carried and the final answer does not is not reported: a header
    assertion judges the response the check ends on."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        if head.startswith(b"GET /final"):
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        else:
            writer.write(
                b"HTTP/1.1 302 Found\r\nLocation: /final\r\nX-Frame-Options: DENY\r\n"
                b"Content-Length: 0\r\n\r\n"
            )
        await writer.drain()

    record = await raw_server(handler)
    got = await make_client().get(
        f"{record.url}/", follow_redirects=True, header_names=frozenset({"x-frame-options"})
    )
    assert (got.status, got.error, got.headers) == (200, None, None)
