"""The vetting proxy on its own (no browser), spoken to over raw sockets on loopback: what it
forwards, what it refuses, and its bounds (a head too large, too many connections, an idle
connection, the run's reserved ports)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from support.dns import DNSServer, dns_fixture  # noqa: F401
from support.waiting import wait_for

from monitor.net import AddressPolicy, VettedResolver
from monitor.net.proxy import VettingProxy

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
async def origin() -> AsyncIterator[tuple[int, list[tuple[str, str, bytes]]]]:
    """An aiohttp server on 127.0.0.1 recording (method, path, body) and echoing the body."""
    seen: list[tuple[str, str, bytes]] = []

    async def handle(request: web.Request) -> web.Response:
        body = await request.read()
        seen.append((request.method, request.path_qs, body))
        return web.Response(text=f"{request.method} {request.path_qs} {body.decode()}")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield runner.addresses[0][1], seen
    finally:
        await runner.cleanup()


@pytest.fixture
async def proxy(dns: DNSServer) -> AsyncIterator[VettingProxy]:
    resolver = VettedResolver(AddressPolicy(["127.0.0.1/32"]), [dns.nameserver])
    async with VettingProxy(resolver, max_open=3, idle_timeout=1.0) as running:
        yield running
    await resolver.close()


async def exchange(proxy: VettingProxy, data: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    try:
        writer.write(data)
        async with asyncio.timeout(10):
            return await reader.read()
    finally:
        writer.close()


async def test_a_plain_request_is_forwarded_in_origin_form_and_closed(
    proxy: VettingProxy, origin: tuple[int, list[tuple[str, str, bytes]]]
) -> None:
    port, seen = origin
    answer = await exchange(
        proxy,
        f"POST http://127.0.0.1:{port}/form?a=1 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        "Proxy-Connection: keep-alive\r\nContent-Length: 5\r\n\r\nhello".encode(),
    )
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and b"Connection: close" in head
    assert body == b"POST /form?a=1 hello"
    assert seen == [("POST", "/form?a=1", b"hello")]
    assert proxy.refusals == []


async def test_a_tunnel_is_opened_to_an_allowed_address(
    proxy: VettingProxy, origin: tuple[int, list[tuple[str, str, bytes]]]
) -> None:
    port, seen = origin
    request = (
        f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\nGET /in HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    answer = await exchange(proxy, request.encode())
    assert answer.startswith(b"HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.1 200 OK")
    assert seen == [("GET", "/in", b"")]


@pytest.mark.parametrize(
    ("request_line", "status", "refusal"),
    [
        ("GET http://10.0.0.5/x?key=s3cret HTTP/1.1", 403, "blocked: 10.0.0.5 (private-use 10.0.0.0/8) for http://10.0.0.5/x?…"),
        ("CONNECT 169.254.169.254:443 HTTP/1.1", 403,
         "blocked: 169.254.169.254 (link-local 169.254.0.0/16) for 169.254.169.254:443 (tunnel)"),
        ("CONNECT in.test:443 HTTP/1.1", 403,
         "blocked: in.test resolves to 192.168.1.10 (private-use 192.168.0.0/16) for in.test:443 (tunnel)"),
        ("CONNECT mixed.test:443 HTTP/1.1", 403,
         "blocked: mixed.test resolves to 10.0.0.5 (private-use 10.0.0.0/8) for mixed.test:443 (tunnel)"),
        ("GET http://nowhere.test/ HTTP/1.1", 502, None),
        ("GET /relative HTTP/1.1", 400, None),
    ],
)  # fmt: skip
async def test_refusals(
    proxy: VettingProxy, dns: DNSServer, request_line: str, status: int, refusal: str | None
) -> None:
    dns.zone["in.test"] = [("A", "192.168.1.10")]
    dns.zone["mixed.test"] = [("A", "127.0.0.1"), ("A", "10.0.0.5")]
    answer = await exchange(proxy, f"{request_line}\r\nHost: x\r\nCookie: secret-cookie\r\n\r\n".encode())
    assert answer.startswith(f"HTTP/1.1 {status} ".encode()), answer
    assert b"secret" not in answer
    assert proxy.refusals == ([refusal] if refusal else [])


async def test_the_runs_own_ports_are_refused_though_loopback_is_allowed(proxy: VettingProxy) -> None:
    proxy.reserve(9222)
    for target, port in (("127.0.0.1:9222", 9222), (f"localhost:{proxy.port}", proxy.port)):
        answer = await exchange(proxy, f"CONNECT {target} HTTP/1.1\r\n\r\n".encode())
        assert answer.startswith(b"HTTP/1.1 403 ")
        assert f"port {port} (this browser run's own)" in proxy.refusals[-1]


async def test_a_head_too_large_is_refused(proxy: VettingProxy) -> None:
    answer = await exchange(proxy, b"GET http://127.0.0.1/ HTTP/1.1\r\nX: " + b"a" * 40_000 + b"\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 431 ")


async def test_connections_past_the_bound_are_refused_and_idle_ones_closed(proxy: VettingProxy) -> None:
    idle = [await asyncio.open_connection("127.0.0.1", proxy.port) for _ in range(3)]
    answer = await exchange(proxy, b"CONNECT 127.0.0.1:1 HTTP/1.1\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 503 ")
    assert proxy.refusals == ["limit: more than 3 connections open at once in this browser run"]
    for reader, writer in idle:  # idle_timeout=1: each is closed without a word
        async with asyncio.timeout(5):
            assert await reader.read() == b""
        writer.close()


async def test_a_connection_ends_with_the_client_though_the_origin_keeps_it_open(proxy: VettingProxy) -> None:
    """An origin that ignores ``Connection: close`` holds nothing once Chromium has its answer."""

    async def keep_alive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok")
        await reader.read()  # never closes first
        writer.close()

    server = await asyncio.start_server(keep_alive, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        writer.write(f"GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        async with asyncio.timeout(5):
            head = await reader.readuntil(b"\r\n\r\n")
            assert await reader.readexactly(2) == b"ok"
        assert b"Connection: close" in head and b"keep-alive" not in head
        writer.close()
        await wait_for(
            lambda: proxy.open_connections == 0, timeout=5, message="the proxy still holds the connection"
        )
    finally:
        server.close()
