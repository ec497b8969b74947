"""One HTTP/2 response on one fresh TLS connection: an asyncio Protocol over the h2 library (sans-I/O).

Only for a server that answers nothing but HTTP/2 (ALPN ``h2`` only): the check prefers
HTTP/1.1, whose exchange (``http1.Exchange``) is lighter, and asks for h2 only when the server
refuses 1.1 (``client.py``). This module is imported then, not before, so a process that never
meets such a server never loads h2. The h2 library does the framing, HPACK, flow control and
the protocol's own checks (RFC 9113); this protocol feeds it the bytes as they arrive and
holds the same contract as ``http1.Exchange``, so a check reads the same either way:

- The same caps: at most ``Limits.max_head_bytes`` for a response head (counted as its
  HTTP/1.1 form would be, name and value plus four bytes a field, and bounded before HPACK
  decodes it) and ``max_headers`` fields; at most ``max_body`` decoded body bytes, past which
  the body is ``truncated``; content codings decoded as for HTTP/1.1 (``http1.Inflater``).
- The same end points: at the final head when no body is needed (a HEAD, a redirect to
  follow), after ``END_STREAM`` otherwise; interim (1xx) heads are skipped.
- The same error texts where the failure is the same (``server closed the connection without
  a response``, ``invalid response body: connection closed before the body was complete``);
  HTTP/2's own failures are named: a frame the protocol forbids (``invalid response: HTTP/2
  protocol error (...)``), a GOAWAY (``the server closed the HTTP/2 connection before
  answering (GOAWAY ENHANCE_YOUR_CALM ...)``), a reset stream (``the server reset the request
  (HTTP/2 RST_STREAM REFUSED_STREAM)``).
- ``first_byte`` is the read that completed the final head (the server's SETTINGS, sent
  before it has read the request, are not a first byte of the answer).

A GOAWAY after our response is complete changes nothing: the answer is whole. One that comes
before it ends the check, whatever its code: h2 reads no frame after a GOAWAY, and a server
that sends one to a fresh connection has not answered the request it was sent.
"""

from __future__ import annotations

import asyncio
import ssl
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings
from h2.errors import ErrorCodes

from .http1 import REDIRECT_STATUSES, Abort, Inflater, Limits, Response

STREAM = 1  # the one request of the connection
_HPACK_OVERHEAD = 32  # per field, in HPACK's own measure of a header list (RFC 7541 4.1)
# Frames the server may send before the head (SETTINGS, WINDOW_UPDATE, PING) on top of it
_SLACK = 64 * 1024
_CONFIG = h2.config.H2Configuration(client_side=True, header_encoding=None)


class H2Exchange(Response, asyncio.Protocol):
    """Sends one request (``start``) and reads its response. ``done`` resolves to None
    (complete) or the error text, never to an exception. After ``done``, the attributes of
    ``http1.Exchange``: ``status``, ``location``, ``content_type``, ``headers``, ``body``,
    ``truncated``, ``first_byte``."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        limits: Limits,
        request: list[tuple[str, str]],
        body: bytes | None,
        *,
        max_body: int,
        read_body: bool = True,
        head_only: bool = False,
        skip_redirect_body: bool = False,
        header_names: frozenset[bytes] = frozenset(),
    ) -> None:
        self._begin(loop, max_body)
        self._limits = limits
        self._read_body = read_body and not head_only
        self._head_only = head_only
        self._skip_redirect_body = skip_redirect_body
        self._header_names = header_names
        self._in_head = True
        self._received = 0  # bytes before the final head
        self._buffer = bytearray()  # the start of a frame not yet whole
        self._read_at = 0.0
        self._started = False
        self._pending = body or b""  # request body not yet sent (flow control)
        conn = self._conn = h2.connection.H2Connection(_CONFIG)
        # HPACK's measure counts 32 bytes a field more than ours; ours is checked on the head.
        most = limits.max_head_bytes + _HPACK_OVERHEAD * limits.max_headers
        conn.local_settings = h2.settings.Settings(
            client=True,
            initial_values={
                h2.settings.SettingCodes.ENABLE_PUSH: 0,
                h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 1,
                h2.settings.SettingCodes.MAX_HEADER_LIST_SIZE: most,
            },
        )
        conn.decoder.max_header_list_size = most
        # Queued now, sent by start(): the server's SETTINGS may arrive before that.
        conn.initiate_connection()
        conn.send_headers(STREAM, request, end_stream=body is None)

    def __call__(self) -> H2Exchange:
        return self  # its own protocol factory, as http1.Exchange

    @property
    def in_head(self) -> bool:
        return self._in_head

    def reading_phase(self) -> str:
        """Where a timeout cut the exchange, in ``http1.Exchange.reading_phase``'s words (a head
        arrives whole here: h2 yields it once decoded)."""
        if self._in_head:
            if self.interim:
                return f"waiting for the response head (after an interim {self.interim})"
            return "waiting for the response head (nothing received)"
        return f"reading the body (after a {self.status} response head, {self._body_len} bytes read)"

    def start(self, transport: asyncio.Transport) -> None:
        """Send the connection preface and the request on ``transport`` (TLS, ALPN done)."""
        self.transport = transport
        self._started = True
        self._send_body()
        self._flush()

    # -- asyncio.Protocol ----------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # TCP now; start() gives the TLS one

    def data_received(self, data: bytes) -> None:
        if self.finished:
            return
        self._read_at = time.perf_counter()
        try:
            if self._in_head:
                self._received += len(data)
                if self._received > self._limits.max_head_bytes + _SLACK:
                    raise Abort(self._head_too_big())
            buffer = self._buffer
            buffer += data
            # A frame at a time: h2 raises for a frame before returning the events of the
            # frames before it, and a head must count before a body that breaks its promise.
            while len(buffer) >= 9:
                size = int.from_bytes(buffer[:3], "big")
                end = 9 if size > self._conn.max_inbound_frame_size else 9 + size  # h2 refuses it
                if len(buffer) < end:
                    break
                frame = bytes(buffer[:end])
                del buffer[:end]
                for event in self._conn.receive_data(frame):
                    self._on(event)
                    if self.finished:
                        return
        except Abort as exc:
            self.finish(exc.message)
            return
        except h2.exceptions.DenialOfServiceError:
            self.finish(self._head_too_big())  # HPACK decoded more than the cap
            return
        except h2.exceptions.ProtocolError as exc:
            where = "invalid response" if self._in_head else "invalid response body"
            self.finish(f"{where}: HTTP/2 protocol error ({exc})")
            return
        self._flush()  # SETTINGS and PING acknowledgements, WINDOW_UPDATEs

    def eof_received(self) -> bool | None:
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        if self.finished:
            return
        if not self._in_head:
            detail = f": {exc}" if exc is not None else ""
            self.finish(f"invalid response body: connection closed before the body was complete{detail}")
        elif isinstance(exc, ssl.SSLError) and "CERTIFICATE_REQUIRED" in (exc.reason or ""):
            self.finish("TLS error: the server requires a client certificate")
        elif exc is not None:
            self.finish(f"connection failed: {exc}")
        else:
            self.finish("server closed the connection without a response")

    # -- h2 events -----------------------------------------------------------------

    def _on(self, event: h2.events.Event) -> None:
        if isinstance(event, h2.events.ResponseReceived):
            self._head(event.headers)
        elif isinstance(event, h2.events.DataReceived):
            self._conn.acknowledge_received_data(event.flow_controlled_length, STREAM)
            if event.data:
                self._keep(event.data)
        elif isinstance(event, h2.events.StreamEnded):
            self._complete()
        elif isinstance(event, h2.events.InformationalResponseReceived):
            self.interim = _status(event.headers)
            self._received = 0  # the final head has its own budget, as in HTTP/1.1
        elif isinstance(event, h2.events.WindowUpdated):
            self._send_body()
        elif isinstance(event, h2.events.StreamReset):
            code = _code(event.error_code)
            if self._in_head:
                raise Abort(f"the server reset the request (HTTP/2 RST_STREAM {code})")
            raise Abort(f"invalid response body: the server reset the stream (HTTP/2 RST_STREAM {code})")
        elif isinstance(event, h2.events.ConnectionTerminated):
            raise Abort(_goaway(event, self._in_head))

    def _head(self, fields: list[tuple[bytes, bytes]]) -> None:
        limits = self._limits
        size, count = 0, 0
        location = content_type = encoding = None
        wanted = self._header_names
        for name, value in fields:
            size += len(name) + len(value) + 4
            if name[:1] == b":":
                continue
            count += 1
            if name == b"location":
                location = location or value
            elif name == b"content-type":
                content_type = content_type or value
            elif name == b"content-encoding":
                encoding = encoding or value
            if wanted and name in wanted:
                self.headers.setdefault(name, []).append(value)
        if size > limits.max_head_bytes:
            raise Abort(self._head_too_big())
        if count > limits.max_headers:
            raise Abort(f"invalid response: more than {limits.max_headers} header fields")
        self._in_head = False
        self.first_byte = self._read_at
        status = self.status = _status(fields)
        if location is not None:
            self.location = location.decode("utf-8", "replace")
        if content_type is not None:
            self.content_type = content_type.decode("latin-1")
        if (
            not self._read_body
            or self._head_only
            or (self._skip_redirect_body and status in REDIRECT_STATUSES and self.location)
        ):
            self.finish(None)
            return
        if encoding is not None:
            self._inflater = Inflater.for_encoding(encoding)

    def _complete(self) -> None:
        if self._in_head:
            raise Abort("invalid response: the stream ended without a final response head")
        self.finish(self._end_of_body())

    # -- internals -----------------------------------------------------------------

    def _head_too_big(self) -> str:
        return f"invalid response: the response head exceeds {self._limits.max_head_bytes} bytes"

    def _send_body(self) -> None:
        while self._pending:
            room = min(self._conn.local_flow_control_window(STREAM), self._conn.max_outbound_frame_size)
            if room <= 0:
                return  # the rest goes when the server opens its window (WindowUpdated)
            chunk, self._pending = self._pending[:room], self._pending[room:]
            self._conn.send_data(STREAM, chunk, end_stream=not self._pending)

    def _flush(self) -> None:
        if self._started and self.transport is not None and not self.transport.is_closing():
            data = self._conn.data_to_send()
            if data:
                self.transport.write(data)

    def finish(self, error: str | None) -> None:
        """Settle ``done`` (first call wins) and release the socket: after a complete answer
        with a GOAWAY and the TLS close, after a failure at once."""
        if not self._settle(error):
            return
        transport = self.transport
        if transport is None:
            return
        if error is None and self._started:
            try:
                self._conn.close_connection()
            except h2.exceptions.ProtocolError:
                pass  # already closed by the server's GOAWAY
            self._flush()
            transport.close()
        else:
            transport.abort()


def _status(fields: list[tuple[bytes, bytes]]) -> int:
    for name, value in fields:
        if name == b":status":
            return int(value)  # h2 has checked it is there and three digits
    raise Abort("invalid response: HTTP/2 protocol error (no :status)")


def _code(code: int | None) -> str:
    try:
        return ErrorCodes(code or 0).name
    except ValueError:
        return f"error {code}"


def _goaway(event: h2.events.ConnectionTerminated, in_head: bool) -> str:
    said = (event.additional_data or b"")[:80].decode("utf-8", "replace")
    what = f"GOAWAY {_code(event.error_code)}" + (f": {said}" if said else "")
    if in_head:
        return f"the server closed the HTTP/2 connection before answering ({what})"
    return f"invalid response body: the server closed the HTTP/2 connection ({what})"
