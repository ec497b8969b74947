"""A raw TCP server on loopback that plays a line-based service, over TLS if asked.

``BannerServer`` sends ``banner`` when a client connects (an SMTP ``220 ...``, an SSH
identification string), answers each line it reads found in ``replies`` (``PING`` ->
``+PONG\\r\\n``, as Redis does), and otherwise keeps the connection open and says nothing until
the client hangs up, as those services do. ``hang_up`` closes right after the banner; with
neither a banner nor replies it is a silent server (a check that expects an answer times out).
With ``ssl`` it speaks TLS from the first byte (SMTPS, IMAPS); ``sni`` records the names clients
asked for. The test may change any of these between checks.

``stop()`` closes the listener and every connection (the port then refuses), ``start()`` again
listens on the same port. The ``banner_server`` fixture (import ``banner_server_fixture``) makes
them and stops them after the test::

    from support.banner import BannerServer, banner_server_fixture  # noqa: F401

    async def test_x(banner_server):
        smtp = await banner_server(banner=b"220 mail.test ESMTP\\r\\n")
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest


class BannerServer:
    def __init__(
        self,
        *,
        banner: bytes = b"",
        replies: dict[bytes, bytes] | None = None,
        hang_up: bool = False,
        ssl_context: ssl.SSLContext | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        self.banner = banner
        self.replies = dict(replies or {})
        self.hang_up = hang_up
        self.host = host
        self.port = 0
        self.connections = 0  # accepted (after the TLS handshake, with ssl)
        self.lines: list[bytes] = []  # every line clients sent
        self.sni: list[str | None] = []
        self._ssl = ssl_context
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        if ssl_context is not None:
            ssl_context.sni_callback = self._on_sni

    async def start(self) -> BannerServer:
        """Listen (on the same port as before, after a ``stop``)."""
        self._server = await asyncio.start_server(self._handle, self.host, self.port, ssl=self._ssl)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for writer in list(self._writers):
            writer.close()
        for writer in list(self._writers):
            with contextlib.suppress(Exception):
                await writer.wait_closed()
        if server is not None:
            await server.wait_closed()

    @property
    def listening(self) -> bool:
        return self._server is not None

    def _on_sni(self, _obj: ssl.SSLObject | ssl.SSLSocket, name: str | None, _ctx: ssl.SSLContext) -> None:
        self.sni.append(name)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.add(writer)
        try:
            if self.banner:
                writer.write(self.banner)
                await writer.drain()
            if self.hang_up:
                return
            while line := await reader.readline():
                self.lines.append(line)
                reply = self.replies.get(line.strip())
                if reply is not None:
                    writer.write(reply)
                    await writer.drain()
        except (OSError, ssl.SSLError):
            pass  # the client hung up (a check leaves once it has what it came for)
        finally:
            self._writers.discard(writer)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


BannerServerFactory = Callable[..., Awaitable[BannerServer]]


# Registered as ``banner_server`` where imported (as in support.dns).
@pytest.fixture(name="banner_server")
async def banner_server_fixture() -> AsyncIterator[BannerServerFactory]:
    """``await banner_server(banner=b"220 ...\\r\\n", replies={b"PING": b"+PONG\\r\\n"},
    hang_up=False, ssl_context=None)``: a started ``BannerServer`` on 127.0.0.1, stopped after
    the test."""
    made: list[BannerServer] = []

    async def make(**kwargs: object) -> BannerServer:
        server = BannerServer(**kwargs)  # type: ignore[arg-type]
        made.append(server)
        return await server.start()

    yield make
    for server in made:
        await server.stop()
