"""A vetting HTTP proxy on loopback: the only way a browser run's Chromium reaches the network.

One proxy per browser run, on 127.0.0.1 and an ephemeral port, so its refusals belong to that
run (``refusals``: what ``BrowserRun.refusals`` shows). Chromium is started with every
connection sent here, loopback included, and with no resolver of its own
(``monitor/browser/chromium.py``), so everything a page makes it fetch (the document, its
subresources, fetch and XHR, WebSockets, redirects, preconnects) arrives as ``CONNECT
host:port`` or as an absolute ``http://`` request (``proxy_wire``).

Each target is judged as a check's is: ``vetting.vet_host`` resolves it once with our
``VettedResolver`` and judges every answer with the ``AddressPolicy`` (fail closed), and the
proxy dials only an address it returned, never the name, so a name that rebinds between the
judging and the dialling cannot slip through. A refused target gets a 403 with the reason and
a line in ``refusals`` (``blocked: 169.254.169.254 (link-local 169.254.0.0/16) for
http://169.254.169.254/latest/meta-data``). The run's own DevTools port and the proxy itself
are refused on loopback whatever the allow list says: a page must never drive its browser.

Bounded: connections open at once (``max_open``) and in all (``max_connections``) per run, a
request head (``MAX_HEAD``) and a response head (``MAX_RESPONSE_HEAD``), an idle connection
(``idle_timeout``: no byte either way), and a connect (``connect_timeout``). Nothing here
logs: a refusal names a host and a URL without its query, never a header.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from .dial import connect_error
from .policy import is_loopback, literal_address
from .proxy_wire import MAX_HEAD, BadRequest, ProxyRequest, answer, close_response, forward_head, parse_head
from .proxy_wire import refusal as refusal_text
from .resolver import VettedResolver
from .vetting import Refused, vet_host

__all__ = ["VettingProxy"]

# Chromium's own bound on a response head; sites send large ones (a CSP, many cookies).
MAX_RESPONSE_HEAD = 256 * 1024
MAX_REFUSALS = 100  # a page that retries one URL a thousand times makes one line, not a thousand
_CHUNK = 64 * 1024
_ESTABLISHED = b"HTTP/1.1 200 Connection established\r\n\r\n"


class VettingProxy:
    """Start with ``start()`` (or ``async with``), point Chromium at ``port``, ``close()`` after."""

    def __init__(
        self,
        resolver: VettedResolver,
        *,
        max_open: int = 64,
        max_connections: int = 2000,
        idle_timeout: float = 60.0,
        connect_timeout: float = 10.0,
    ) -> None:
        self.resolver = resolver
        self.refusals: list[str] = []
        self.connections = 0  # accepted in all
        self._max_open = max_open
        self._max_connections = max_connections
        self._idle = idle_timeout
        self._connect_timeout = connect_timeout
        self._reserved: set[int] = set()  # loopback ports no page may reach (DevTools, this proxy)
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._port: int | None = None

    @property
    def port(self) -> int:
        assert self._port is not None, "VettingProxy not started"
        return self._port

    @property
    def open_connections(self) -> int:
        return len(self._tasks)

    def reserve(self, port: int) -> None:
        """Refuse ``port`` on every loopback address (the run's DevTools port)."""
        self._reserved.add(port)

    async def start(self) -> VettingProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0, limit=MAX_HEAD)
        self._port = self._server.sockets[0].getsockname()[1]
        self._reserved.add(self._port)
        return self

    async def close(self) -> None:
        """Stop listening and cut every connection still open."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if server is not None:
            with contextlib.suppress(Exception):
                await server.wait_closed()

    def abort(self) -> None:
        """``close()`` without waiting: for a run whose cleanup is itself cancelled."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for task in list(self._tasks):
            task.cancel()

    async def __aenter__(self) -> VettingProxy:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _refuse(self, line: str) -> None:
        if line not in self.refusals and len(self.refusals) < MAX_REFUSALS:
            self.refusals.append(line)

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.get_running_loop().create_task(self._serve(reader, writer))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        upstream: asyncio.StreamWriter | None = None
        polite = True
        try:
            limit = self._over_limit()
            if limit:
                self._refuse(f"limit: {limit} in this browser run")
                await _say(writer, answer(503, f"{limit} in this browser run"), reader)
                return
            request = await self._read_request(reader, writer)
            if request is None:
                return
            dialled = await self._open(request, reader, writer)
            if dialled is None:
                return
            up_reader, upstream = dialled
            await self._carry(request, reader, writer, up_reader, upstream)
        except (OSError, asyncio.IncompleteReadError):
            pass  # either side went away: nothing to answer
        except asyncio.CancelledError:
            polite = False  # the run is over: no flushing to a peer that may never read
            raise
        finally:
            for side in (upstream, writer):
                if side is None:
                    continue
                if polite:
                    side.close()
                else:
                    side.transport.abort()

    def _over_limit(self) -> str:
        if len(self._tasks) > self._max_open:
            return f"more than {self._max_open} connections open at once"
        if self.connections > self._max_connections:
            return f"more than {self._max_connections} connections"
        return ""

    async def _read_request(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> ProxyRequest | None:
        try:
            async with asyncio.timeout(self._idle):
                head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.LimitOverrunError:
            await _say(writer, answer(431, "request head too large"), reader)
            return None
        except (TimeoutError, asyncio.IncompleteReadError):
            return None
        try:
            return parse_head(head)
        except BadRequest as exc:
            await _say(writer, answer(exc.status, exc.reason), reader)
            return None

    async def _open(
        self, request: ProxyRequest, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        """The vetted upstream connection, or None once the client has its refusal."""
        try:
            addresses = await vet_host(self.resolver, request.host)
        except Refused as exc:
            if exc.blocked:
                self._refuse(refusal_text(exc.message, request))
                await _say(writer, answer(403, exc.message), reader)
            else:
                await _say(writer, answer(502, exc.message), reader)
            return None
        if request.port in self._reserved:
            for address in addresses:
                literal = literal_address(address)
                if literal is not None and is_loopback(literal):
                    message = f"blocked: {request.host} port {request.port} (this browser run's own)"
                    self._refuse(refusal_text(message, request))
                    await _say(writer, answer(403, message), reader)
                    return None
        error = "no address"
        for address in addresses:
            try:
                async with asyncio.timeout(self._connect_timeout):
                    return await asyncio.open_connection(address, request.port, limit=MAX_RESPONSE_HEAD)
            except TimeoutError:
                error = f"{address} port {request.port}: timed out after {self._connect_timeout:g}s"
            except OSError as exc:
                error = connect_error(exc, address, request.port)
        await _say(writer, answer(502, f"connection failed: {error}"), reader)
        return None

    async def _carry(
        self,
        request: ProxyRequest,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        up_reader: asyncio.StreamReader,
        upstream: asyncio.StreamWriter,
    ) -> None:
        activity = _Activity()
        if request.tunnel:
            writer.write(_ESTABLISHED)
        else:
            upstream.write(forward_head(request))
        # The request's body (or the tunnel's bytes) flows while the origin's answer is awaited.
        outgoing = asyncio.ensure_future(_pump(reader, upstream, activity))
        pumps = [outgoing, asyncio.ensure_future(activity.idle(self._idle))]
        try:
            if not request.tunnel:
                problem = await self._answer_head(up_reader, writer)
                if problem:
                    outgoing.cancel()
                    await asyncio.gather(outgoing, return_exceptions=True)
                    await _say(writer, answer(502, problem), reader)
                    return
            incoming = asyncio.ensure_future(_pump(up_reader, writer, activity))
            pumps.append(incoming)
            while True:
                done, _ = await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
                # A tunnel's client may be done sending before the answer is (a half-close,
                # passed on); Chromium closing a plain http connection means it has read enough,
                # whatever an origin that ignored our Connection: close still holds open.
                half_closed = done == {outgoing} and outgoing.exception() is None
                if request.tunnel and half_closed and upstream.can_write_eof():
                    upstream.write_eof()
                    pumps.remove(outgoing)
                    continue
                break
            # The origin's side ending first is the normal end: send what is queued.
            if incoming.done() and not incoming.cancelled() and incoming.exception() is None:
                with contextlib.suppress(OSError, TimeoutError):
                    async with asyncio.timeout(self._idle):
                        await writer.drain()
        finally:
            for pump in (*pumps, outgoing):
                pump.cancel()
            await asyncio.gather(*pumps, outgoing, return_exceptions=True)

    async def _answer_head(self, up_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> str:
        """Pass on the origin's response head, rewritten to close; or say what went wrong."""
        try:
            async with asyncio.timeout(self._idle):
                head = await up_reader.readuntil(b"\r\n\r\n")
        except (asyncio.LimitOverrunError, TimeoutError):
            return "the origin's response head is too large or too slow"
        except asyncio.IncompleteReadError:
            return "the origin closed without answering"
        writer.write(close_response(head))
        return ""


class _Activity:
    """When a byte last went either way: a connection is idle only when both sides are."""

    def __init__(self) -> None:
        self.last = time.monotonic()

    def touch(self) -> None:
        self.last = time.monotonic()

    async def idle(self, seconds: float) -> None:
        # A timer re-armed by the last byte would cost a handle per chunk; this sleeps once
        # per idle period and returns when a whole one passed without a byte.
        while (left := self.last + seconds - time.monotonic()) > 0:  # noqa: ASYNC110
            await asyncio.sleep(left)


async def _pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter, activity: _Activity) -> None:
    while data := await source.read(_CHUNK):
        activity.touch()
        sink.write(data)
        await sink.drain()


async def _say(writer: asyncio.StreamWriter, data: bytes, reader: asyncio.StreamReader) -> None:
    """Answer and hang up, reading what the client still sends for a moment first (a lingering
    close): closing with unread bytes would make the kernel reset the connection, and the
    client might never read the answer."""
    writer.write(data)
    with contextlib.suppress(OSError, TimeoutError):
        async with asyncio.timeout(2):
            await writer.drain()
            if writer.can_write_eof():
                writer.write_eof()
            while await reader.read(_CHUNK):
                pass
