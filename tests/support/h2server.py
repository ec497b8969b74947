"""An HTTP/2 server on the h2 library: a real h2-only site, and its misbehaviours.

nginx cannot be h2-only over TLS (it always offers http/1.1 beside h2), and a server that
offers only ``h2`` in ALPN is what the check must learn to read (issue 26). This one answers
HTTP/2 properly (SETTINGS, HPACK, flow control: the h2 library's server side) and, by path,
misbehaves on purpose: a forbidden frame, a GOAWAY before or after the answer, a reset stream,
heads past the caps, a body that stalls. With ``http11`` it also offers ALPN http/1.1 and
answers that in HTTP/1.1 (``Served in HTTP/1.1``), as nginx does.

It runs on the loop that starts it (the conformance table's server thread; an end-to-end
test's own loop) and keeps count of the ALPN each connection chose (``alpn``), so a test can
see how the check asked.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import ssl
import struct
from collections import Counter
from collections.abc import Callable
from typing import Any

import h2.config
import h2.connection
import h2.events
import h2.exceptions
from h2.errors import ErrorCodes

PAGE = b"<!doctype html><title>Home</title><h1>Welcome home</h1>\n"
HTML = (b"content-type", b"text/html; charset=utf-8")
HTTP11_PAGE = b"<h1>Served in HTTP/1.1</h1>\n"
BIG_BODY = b"BEGIN\n" + b"." * (2 * 1024 * 1024) + b"\nEND-OF-BIG-BODY"


class H2Server:
    """One listener; ``start`` on the server thread's loop, then ``port``."""

    def __init__(self, context: ssl.SSLContext, *, http11: bool = False) -> None:
        self.context = context
        self.http11 = http11
        self.alpn: Counter[str | None] = Counter()
        self.port = 0
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.Transport] = set()

    async def start(self) -> int:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _Connection(self), "127.0.0.1", 0, ssl=self.context, ssl_handshake_timeout=5
        )
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for transport in list(self._open):
            transport.abort()


class _Connection(asyncio.Protocol):
    def __init__(self, server: H2Server) -> None:
        self.server = server
        self.transport: asyncio.Transport | None = None
        self.conn: h2.connection.H2Connection | None = None
        self.http11 = bytearray()
        self.bodies: dict[int, bytearray] = {}
        self.pending: dict[int, tuple[bytes, bool]] = {}
        self.heads: dict[int, dict[bytes, bytes]] = {}

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.server._open.add(self.transport)
        alpn = transport.get_extra_info("ssl_object").selected_alpn_protocol()
        self.server.alpn[alpn] += 1
        if alpn == "http/1.1" and self.server.http11:
            return
        self.conn = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=False, header_encoding=None)
        )
        self.conn.initiate_connection()
        self.flush()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.transport is not None:
            self.server._open.discard(self.transport)

    def data_received(self, data: bytes) -> None:
        if self.conn is None:  # HTTP/1.1: one answer, then close
            self.http11 += data
            if b"\r\n\r\n" in self.http11 and self.transport is not None:
                head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n"
                self.transport.write(head % len(HTTP11_PAGE) + HTTP11_PAGE)
                self.transport.close()
            return
        try:
            events = self.conn.receive_data(data)
        except h2.exceptions.ProtocolError:
            # What an h2-only server does with an HTTP/1.1 request: its preface is wrong.
            self.conn.close_connection(ErrorCodes.PROTOCOL_ERROR, b"invalid preface")
            self.flush()
            self.close()
            return
        for event in events:
            if isinstance(event, h2.events.RequestReceived):
                self.heads[event.stream_id] = dict(event.headers)
                self.bodies[event.stream_id] = bytearray()
            elif isinstance(event, h2.events.DataReceived):
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                self.bodies[event.stream_id] += event.data
            elif isinstance(event, h2.events.WindowUpdated):
                self.send_pending()
            elif isinstance(event, h2.events.StreamEnded):
                head = self.heads[event.stream_id]
                route = ROUTES.get(head.get(b":path", b"").decode(), _not_found)
                route(self, event.stream_id, head, bytes(self.bodies[event.stream_id]))
        self.flush()

    # -- what a route can do -------------------------------------------------------

    def flush(self) -> None:
        if self.conn is not None and self.transport is not None and not self.transport.is_closing():
            self.transport.write(self.conn.data_to_send())

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def respond(
        self, stream: int, status: int, body: bytes = PAGE, *fields: tuple[bytes, bytes], end: bool = True
    ) -> None:
        """A head and a body, sent as the client's window allows (the rest as it opens it)."""
        assert self.conn is not None
        head = [(b":status", b"%d" % status), *fields, (b"content-length", b"%d" % len(body))]
        self.conn.send_headers(stream, head, end_stream=end and not body)
        self.pending[stream] = (body, end)
        self.send_pending()

    def send_pending(self) -> None:
        assert self.conn is not None
        for stream, (body, end) in list(self.pending.items()):
            while body:
                try:
                    window = self.conn.local_flow_control_window(stream)
                except h2.exceptions.StreamClosedError:
                    body = b""  # the client reset it: it had enough
                    break
                room = min(window, self.conn.max_outbound_frame_size)
                if room <= 0:
                    break
                chunk, body = body[:room], body[room:]
                self.conn.send_data(stream, chunk, end_stream=end and not body)
            if body:
                self.pending[stream] = (body, end)
            else:
                del self.pending[stream]
        self.flush()

    def raw(self, data: bytes) -> None:
        """Bytes written as they are, past h2's own checks."""
        self.flush()
        assert self.transport is not None
        self.transport.write(data)


# -- routes, by path -----------------------------------------------------------------------

Route = Callable[[_Connection, int, dict[bytes, bytes], bytes], None]


def _ok(c: _Connection, stream: int, head: dict[bytes, bytes], body: bytes) -> None:
    c.respond(stream, 200, PAGE, HTML)


def _not_found(c: _Connection, stream: int, head: dict[bytes, bytes], body: bytes) -> None:
    c.respond(stream, 404, b"not found\n")


def _status_500(c: _Connection, stream: int, head: dict[bytes, bytes], body: bytes) -> None:
    c.respond(stream, 500, b"server error\n")


def _redirect(c: _Connection, stream: int, head: dict[bytes, bytes], body: bytes) -> None:
    c.respond(stream, 302, b"", (b"location", b"/"))


def _echo(c: _Connection, stream: int, head: dict[bytes, bytes], body: bytes) -> None:
    seen: dict[str, Any] = {
        "method": head.get(b":method", b"").decode(),
        "content_type": (head.get(b"content-type") or b"").decode() or None,
        "body": body.decode("utf-8", "replace"),
        "user_agent": (head.get(b"user-agent") or b"").decode(),
    }
    c.respond(stream, 200, json.dumps(seen).encode(), (b"content-type", b"application/json"))


def _gzip(c: _Connection, stream: int, head: dict[bytes, bytes], body: bytes) -> None:
    c.respond(stream, 200, gzip.compress(PAGE), HTML, (b"content-encoding", b"gzip"))


def _early_hints(c: _Connection, stream: int, head: dict[bytes, bytes], body: bytes) -> None:
    assert c.conn is not None
    c.conn.send_headers(stream, [(b":status", b"103"), (b"link", b"</style.css>; rel=preload; as=style")])
    c.respond(stream, 200, PAGE, HTML)


def _big(c: _Connection, stream: int, head: dict[bytes, bytes], body: bytes) -> None:
    c.respond(stream, 200, BIG_BODY, (b"content-type", b"text/plain"))


def _huge_head(c: _Connection, stream: int, head: dict[bytes, bytes], body: bytes) -> None:
    value = b"p" * 8000
    c.respond(stream, 200, PAGE, HTML, *((b"x-pad-%d" % n, value) for n in range(300 * 1024 // 8000 + 1)))


def _many_fields(c: _Connection, stream: int, head: dict[bytes, bytes], body: bytes) -> None:
    c.respond(stream, 200, PAGE, *((b"x-field-%d" % n, b"%d" % n) for n in range(1, 1001)))


def _bad_frame(c: _Connection, stream: int, head: dict[bytes, bytes], body: bytes) -> None:
    # A DATA frame on stream 0, which RFC 9113 6.1 makes a connection error (PROTOCOL_ERROR).
    payload = b"not on a stream"
    c.raw(struct.pack("!I", len(payload))[1:] + bytes([0x0, 0x0]) + struct.pack("!I", 0) + payload)


def _goaway(c: _Connection, stream: int, head: dict[bytes, bytes], body: bytes) -> None:
    assert c.conn is not None
    c.conn.close_connection(ErrorCodes.ENHANCE_YOUR_CALM, b"too many requests", last_stream_id=0)
    c.flush()
    c.close()


def _goaway_after(c: _Connection, stream: int, head: dict[bytes, bytes], body: bytes) -> None:
    assert c.conn is not None
    c.respond(stream, 200, PAGE, HTML)
    c.conn.close_connection(ErrorCodes.NO_ERROR, last_stream_id=stream)
    c.flush()
    c.close()


def _reset(c: _Connection, stream: int, head: dict[bytes, bytes], body: bytes) -> None:
    assert c.conn is not None
    c.conn.reset_stream(stream, ErrorCodes.REFUSED_STREAM)


def _body_stalls(c: _Connection, stream: int, head: dict[bytes, bytes], body: bytes) -> None:
    assert c.conn is not None
    c.conn.send_headers(stream, [(b":status", b"200"), HTML, (b"content-length", b"4096")])
    c.conn.send_data(stream, PAGE)  # and no more


def _short_body(c: _Connection, stream: int, head: dict[bytes, bytes], body: bytes) -> None:
    assert c.conn is not None
    c.conn.send_headers(stream, [(b":status", b"200"), HTML, (b"content-length", b"4096")])
    c.conn.send_data(stream, PAGE, end_stream=True)  # short of its length


def _silent(c: _Connection, stream: int, head: dict[bytes, bytes], body: bytes) -> None:
    pass


ROUTES: dict[str, Route] = {
    "/": _ok,
    "/status/500": _status_500,
    "/redirect": _redirect,
    "/echo": _echo,
    "/gzip": _gzip,
    "/early-hints": _early_hints,
    "/big": _big,
    "/huge-head": _huge_head,
    "/1001-fields": _many_fields,
    "/bad-frame": _bad_frame,
    "/goaway": _goaway,
    "/goaway-after-response": _goaway_after,
    "/reset": _reset,
    "/body-stalls": _body_stalls,
    "/short-body": _short_body,
    "/silent": _silent,
}
