"""The SSRF guard of browser checks, through Debian's chromium: pages served on 127.0.0.1 (the
one address the test's policy allows) that embed, fetch, open a WebSocket to, frame, and
redirect to (301, 302, 307, meta refresh, script) loopback, link-local, metadata and private addresses,
a name that rebinds, and a name Chromium would answer itself (``*.localhost``).

Canary listeners sit on 127.0.0.2 and 127.0.0.3 (TCP and UDP) on the page's own port, so a URL
that reached them by any path (Chromium dialling itself, the proxy dialling a name instead of
its vetted address) is recorded; none may ever be. Addresses off loopback (10.0.0.5,
169.254.x) cannot be listened on here: their refusal, named in ``BrowserRun.refusals``, is
what shows the proxy never dialled them, and a tripwire on each of Chromium's processes (their
sockets read from /proc) shows that none of them had a socket to anything off loopback.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from ipaddress import IPv4Address
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import WSMsgType, web
from support.browser_run import needs_chromium
from support.canary import Tripwire
from support.dns import DNSServer, start_dns
from support.waiting import wait_for

from monitor.browser import process
from monitor.browser.chromium import Chromium
from monitor.net import AddressPolicy, VettedResolver
from monitor.net.policy import IPAddress

pytestmark = [needs_chromium, pytest.mark.timeout(90), pytest.mark.asyncio(loop_scope="module")]

CANARY_HOSTS = ("127.0.0.2", "127.0.0.3")
ICON = "<link rel=icon href='data:,'>"
# A path of the page server, its status and where it sends the browser.
REDIRECTS = {
    "/redirect": (302, "http://127.0.0.3:{port}/after-302"),
    "/redirect-301": (301, "http://169.254.10.10/after-301"),
    "/redirect-307": (307, "http://169.254.169.254/after-307"),
}


@dataclass
class Canaries:
    """TCP and UDP listeners on 127.0.0.2 and 127.0.0.3, one port; every contact recorded."""

    port: int
    hits: list[str] = field(default_factory=list)
    servers: list[asyncio.Server] = field(default_factory=list)
    udp: list[asyncio.DatagramTransport] = field(default_factory=list)

    async def close(self) -> None:
        for server in self.servers:
            server.close()
        for transport in self.udp:
            transport.close()


class _UdpCanary(asyncio.DatagramProtocol):
    def __init__(self, hits: list[str], host: str) -> None:
        self.hits, self.host = hits, host

    def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
        self.hits.append(f"udp to {self.host} from {addr[0]}: {data[:40]!r}")


async def start_canaries(port: int) -> Canaries:
    canaries = Canaries(port)
    loop = asyncio.get_running_loop()

    def accepted(host: str) -> Any:
        async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            canaries.hits.append(f"tcp to {host}")
            with contextlib.suppress(TimeoutError, OSError):
                async with asyncio.timeout(2):
                    canaries.hits[-1] += f": {(await reader.read(200))!r}"
            writer.close()

        return accept

    try:
        for host in CANARY_HOSTS:
            canaries.servers.append(await asyncio.start_server(accepted(host), host, port))
            transport, _ = await loop.create_datagram_endpoint(
                lambda host=host: _UdpCanary(canaries.hits, host),  # type: ignore[misc]
                local_addr=(host, port),
            )
            canaries.udp.append(transport)
    except OSError:
        await canaries.close()
        raise
    return canaries


@dataclass
class Stage:
    port: int
    canaries: Canaries
    dns: DNSServer
    paths: list[str]  # what the page server on 127.0.0.1 was asked for

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"


def pages(port: int) -> dict[str, str]:
    c2, c3 = f"127.0.0.2:{port}", f"127.0.0.3:{port}"
    return {
        "/embeds": f"""<!doctype html><title>embeds</title>{ICON}
<link rel=preconnect href="http://preconnect.test:{port}"><link rel=dns-prefetch href="//prefetch.test">
<img src="http://{c2}/img">
<img src="https://{c3}/img-tls">
<img src="http://169.254.1.1/link-local">
<img src="http://[::1]:{port}/v6">
<img src="http://canary.localhost:{port}/via-localhost">
<script src="http://{c3}/script"></script>
<iframe src="http://10.0.0.5/iframe"></iframe>
<script>
fetch("http://169.254.169.254/latest/meta-data").catch(() => {{}});
fetch("http://metadata.test/computeMetadata/v1/").catch(() => {{}});
new WebSocket("ws://{c2}/ws");
const pc = new RTCPeerConnection({{iceServers: [{{urls: "stun:{c2}"}}, {{urls: "stun:stun.test:{port}"}}]}});
pc.createDataChannel("d");
pc.createOffer().then(offer => pc.setLocalDescription(offer));
</script>""",
        "/meta": f"<!doctype html>{ICON}<meta http-equiv=refresh content='0; url=http://169.254.169.254/meta-refresh'>",
        "/js": f"<!doctype html>{ICON}<script>location.href = 'http://10.0.0.5/js-redirect';</script>",
        "/rebind": f"<!doctype html>{ICON}<script>fetch('/rebind-fetch').catch(() => {{}});</script>",
        "/socket": f"""<!doctype html>{ICON}<script>
const ws = new WebSocket("ws://127.0.0.1:{port}/echo");
ws.onopen = () => ws.send("ping");
ws.onmessage = event => {{ document.title = event.data; }};
</script>""",
    }


async def start_page_server(paths: list[str]) -> tuple[web.AppRunner, int]:
    bodies: dict[str, str] = {}

    async def handle(request: web.Request) -> web.StreamResponse:
        paths.append(request.path)
        if request.path == "/echo":
            ws = web.WebSocketResponse()
            await ws.prepare(request)
            async for message in ws:
                if message.type == WSMsgType.TEXT:
                    await ws.send_str("echo " + message.data)
            return ws
        if request.path in REDIRECTS:
            status, location = REDIRECTS[request.path]
            return web.Response(status=status, headers={"Location": location.format(port=port)})
        if request.path in bodies:
            return web.Response(text=bodies[request.path], content_type="text/html")
        return web.Response(status=404)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5, handler_cancellation=True)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port: int = runner.addresses[0][1]
    bodies.update(pages(port))
    return runner, port


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def stage() -> AsyncIterator[Stage]:
    paths: list[str] = []
    for _ in range(20):
        runner, port = await start_page_server(paths)
        try:
            canaries = await start_canaries(port)
        except OSError:  # the port is taken on 127.0.0.2 or .3: another one
            await runner.cleanup()
            continue
        break
    else:
        raise RuntimeError("no port free on 127.0.0.1, 127.0.0.2 and 127.0.0.3")
    dns = await start_dns(
        {
            # The first answer is the page's own address, every later one a canary's.
            "rebind.test": lambda n: [("A", "127.0.0.1" if n == 1 else "127.0.0.2")],
            "metadata.test": [("A", "169.254.169.254")],
            "preconnect.test": [("A", "127.0.0.2")],
            "prefetch.test": [("A", "127.0.0.3")],
            "stun.test": [("A", "127.0.0.3")],
        }
    )
    try:
        yield Stage(port, canaries, dns, paths)
    finally:
        dns.close()
        await canaries.close()
        await runner.cleanup()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def chromium(stage: Stage) -> AsyncIterator[Chromium]:
    async def localhost() -> list[IPAddress]:
        # What our resolver says *.localhost is; Chromium's own answer would be 127.0.0.1,
        # the page server, which must then never see the request.
        return [IPv4Address("127.0.0.3")]

    resolver = VettedResolver(AddressPolicy(["127.0.0.1/32"]), [stage.dns.nameserver], localhost=localhost)
    browser = Chromium(resolver)
    try:
        yield browser
    finally:
        await browser.close()
        await resolver.close()


def expected_refusals(port: int) -> list[str]:
    loopback, link_local = "(loopback 127.0.0.0/8)", "(link-local 169.254.0.0/16)"
    return [
        f"blocked: 127.0.0.2 {loopback} for http://127.0.0.2:{port}/img",
        f"blocked: 127.0.0.3 {loopback} for 127.0.0.3:{port} (tunnel)",
        f"blocked: 169.254.1.1 {link_local} for http://169.254.1.1/link-local",
        f"blocked: ::1 (loopback ::1/128) for http://[::1]:{port}/v6",
        f"blocked: canary.localhost resolves to 127.0.0.3 {loopback} for http://canary.localhost:{port}/via-localhost",
        f"blocked: 127.0.0.3 {loopback} for http://127.0.0.3:{port}/script",
        "blocked: 10.0.0.5 (private-use 10.0.0.0/8) for http://10.0.0.5/iframe",
        f"blocked: 169.254.169.254 {link_local} for http://169.254.169.254/latest/meta-data",
        f"blocked: metadata.test resolves to 169.254.169.254 {link_local} for http://metadata.test/computeMetadata/v1/",
        f"blocked: 127.0.0.2 {loopback} for 127.0.0.2:{port} (tunnel)",  # the WebSocket
        f"blocked: 127.0.0.3 {loopback} for http://127.0.0.3:{port}/after-302",
        f"blocked: 169.254.10.10 {link_local} for http://169.254.10.10/after-301",
        f"blocked: 169.254.169.254 {link_local} for http://169.254.169.254/after-307",
        f"blocked: 169.254.169.254 {link_local} for http://169.254.169.254/meta-refresh",
        "blocked: 10.0.0.5 (private-use 10.0.0.0/8) for http://10.0.0.5/js-redirect",
        f"blocked: rebind.test resolves to 127.0.0.2 {loopback} for http://rebind.test:{port}/rebind-fetch",
    ]


async def test_no_page_reaches_a_denied_address(chromium: Chromium, stage: Stage) -> None:
    expected = expected_refusals(stage.port)
    async with chromium.run(60) as run:
        # The browser, its network service and the other utilities are up by now; renderers
        # come later, and have no network of their own.
        wires = [Tripwire(pid, interval=0.01).start() for pid in process.members(run.pid)]

        async def visit(path: str, host: str = "127.0.0.1") -> None:
            page = await run.page()
            with contextlib.suppress(Exception):  # a redirect to a refused address fails the navigation
                await page.goto(stage.url(path, host), wait_until="load", timeout=20_000)

        visits = [visit(path) for path in ("/embeds", *REDIRECTS, "/meta", "/js")]
        await asyncio.gather(*visits, visit("/rebind", "rebind.test"))
        await wait_for(
            lambda: all(line in run.refusals for line in expected),
            timeout=30,
            message=lambda: (
                f"missing refusals: {[e for e in expected if e not in run.refusals]}; got {run.refusals}"
            ),
        )
        refusals = list(run.refusals)
        for wire in wires:
            wire.stop()
    assert stage.canaries.hits == []
    assert [str(hit) for wire in wires for hit in wire.hits] == []
    assert all(wire.scans for wire in wires)
    assert "/via-localhost" not in stage.paths  # Chromium did not answer *.localhost itself
    assert stage.dns.protocol.lookups("rebind.test") >= 2  # judged afresh: the second answer refused
    unexpected = [line for line in refusals if line not in expected]
    # Besides those: the favicons of the refused navigations, and the preconnect if Chromium asked.
    assert all(line.endswith("/favicon.ico") or "preconnect.test" in line for line in unexpected), unexpected


async def test_an_allowed_websocket_goes_through_the_tunnel(chromium: Chromium, stage: Stage) -> None:
    async with chromium.run(60) as run:
        page = await run.page()
        await page.goto(stage.url("/socket"))
        await page.wait_for_function("document.title === 'echo ping'", timeout=20_000)
        assert run.refusals == []
    assert "/echo" in stage.paths
