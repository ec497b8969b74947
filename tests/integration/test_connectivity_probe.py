"""The connectivity guard's probe over real sockets on loopback: an HTTP reference answers with
any status, a TCP reference connects, a closed port and a silent server fail, and references go
through the SSRF guard (loopback only where the policy allows it, as MONITOR_ALLOW_CIDRS does)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest
from support import TargetServer

from monitor.net.policy import AddressPolicy
from monitor.net.resolver import VettedResolver
from monitor.scheduler.connectivity import Change, Guard, ReferenceProbe

pytestmark = pytest.mark.timeout(30)

LOOPBACK = ["127.0.0.1/32"]


@pytest.fixture
async def target() -> AsyncIterator[TargetServer]:
    async with TargetServer() as server:
        yield server


@pytest.fixture
async def silent_port() -> AsyncIterator[int]:
    """A server that takes connections and never says a word."""
    held: list[asyncio.StreamWriter] = []

    async def hold(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1]
    for writer in held:
        writer.close()
    server.close()
    await server.wait_closed()


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def _probe(allow: list[str], target: str, *, limit: float = 2.0) -> str | None:
    resolver = VettedResolver(AddressPolicy(allow))
    probe = ReferenceProbe(resolver, timeout=limit)
    try:
        return await probe(target)
    finally:
        await probe.close()
        await resolver.close()


@pytest.mark.parametrize("status", [200, 404, 503])
async def test_any_http_answer_is_reachable(target: TargetServer, status: int) -> None:
    target.set(status)
    assert await _probe(LOOPBACK, target.url("/ping")) is None
    assert target.received("/ping") == 1


async def test_tcp_connect_to_an_open_port(target: TargetServer) -> None:
    assert await _probe(LOOPBACK, f"127.0.0.1:{target.port}") is None


@pytest.mark.parametrize("form", ["http://127.0.0.1:{port}/", "127.0.0.1:{port}"])
async def test_a_closed_port_fails(form: str) -> None:
    port = closed_port()
    assert (
        await _probe(LOOPBACK, form.format(port=port))
        == f"connection failed: refused by 127.0.0.1 port {port}"
    )


async def test_a_silent_server_times_out(silent_port: int) -> None:
    error = await _probe(LOOPBACK, f"http://127.0.0.1:{silent_port}/", limit=0.3)
    assert error == "timed out after 0.3s waiting for the response head (nothing received)"


@pytest.mark.parametrize("form", ["http://127.0.0.1:{port}/", "127.0.0.1:{port}"])
async def test_loopback_is_blocked_unless_allowed(target: TargetServer, form: str) -> None:
    error = await _probe([], form.format(port=target.port))
    assert error == "blocked: 127.0.0.1 (loopback 127.0.0.0/8)"
    assert target.received() == 0


@pytest.mark.parametrize(
    ("allow", "error"),
    [
        # localhost is what /etc/hosts says (here 127.0.0.1, maybe ::1 too): every answer is
        # loopback, so allowing 127.0.0.1 is enough, and only what is allowed is dialled.
        (LOOPBACK, None),
        (["127.0.0.1/32"], None),
        (["127.0.0.1/32", "::1/128"], None),
        (["::1/128"], "blocked: localhost resolves to 127.0.0.1 (loopback 127.0.0.0/8)"),
    ],
)
async def test_a_name_is_judged_by_all_its_addresses(
    target: TargetServer, allow: list[str], error: str | None
) -> None:
    assert await _probe(allow, f"localhost:{target.port}") == error


async def test_guard_over_real_references(target: TargetServer) -> None:
    resolver = VettedResolver(AddressPolicy(LOOPBACK))
    probe = ReferenceProbe(resolver, timeout=1.0)
    changes: list[Change] = []
    port = closed_port()
    url = target.url("/")
    guard = Guard([url, f"127.0.0.1:{port}"], probe, cache_seconds=0, on_change=changes.append)
    try:
        assert await guard.cut_off(100) is None  # one of the two answers
        await target.close()
        assert await guard.cut_off(101) == (
            f"references failing: {url}: connection failed: refused by 127.0.0.1 port {target.port}; "
            f"127.0.0.1:{port}: connection failed: refused by 127.0.0.1 port {port}"
        )
        server = await asyncio.start_server(lambda _r, w: w.close(), "127.0.0.1", port)
        try:
            assert await guard.cut_off(130) is None  # the TCP reference takes connections again
        finally:
            server.close()
            await server.wait_closed()
    finally:
        await probe.close()
        await resolver.close()
    assert [(c.kind, c.since, c.at) for c in changes] == [("lost", 101, 101), ("restored", 101, 130)]
