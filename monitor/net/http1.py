"""One HTTP/1.1 response on one fresh connection: an asyncio Protocol over httptools' C parser.

Built for the scheduler's hot path. A check is one request on a new connection that is closed
afterwards, so there is no pool, no stream and no task per connection: the response is parsed in
``data_received`` as it arrives, the caps are enforced there, and the waiting fetch is woken once,
when the response is complete or has failed. That keeps a check close to the cost of the socket
calls themselves (see issue 4's budget).

Every limit a hostile server could push against is checked before bytes are kept: line length
and header count while the head arrives (httptools itself buffers a header without bound), the
declared Content-Length at the end of the head, and the body, after decoding, as it arrives.
"""

from __future__ import annotations

import asyncio
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

import httptools

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_WANTED = frozenset({b"location", b"content-length", b"content-encoding", b"transfer-encoding"})
_WANTED_LENGTHS = frozenset(len(name) for name in _WANTED)


@dataclass(frozen=True, slots=True)
class Limits:
    """Caps on what one response may make us hold. The line and header defaults are aiohttp's,
    so targets that passed before still pass; the head total is what browsers accept."""

    max_line_size: int = 8190  # the status line
    max_field_size: int = 8190  # one header line
    max_headers: int = 128
    max_head_bytes: int = 256 * 1024
    # A head shorter than this breaks no length limit, whatever its lines (derived).
    short_head: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "short_head", min(self.max_line_size, self.max_field_size, self.max_head_bytes)
        )


class Inflater:
    """Incremental gzip/deflate decoding that never produces more than it is asked for."""

    def __init__(self, encoding: str) -> None:
        self._encoding = encoding
        self._zlib: Any = None

    @classmethod
    def for_encoding(cls, value: bytes) -> Inflater | None:
        """None for an identity body; raises ``Abort`` for an encoding we cannot decode."""
        encoding = value.strip().lower().decode("latin-1")
        if encoding in ("", "identity"):
            return None
        if encoding in ("gzip", "x-gzip", "deflate"):
            return cls(encoding)
        raise Abort(f"invalid response body: unsupported Content-Encoding {encoding!r}")

    def decode(self, data: bytes, limit: int) -> bytes:
        """At most ``limit`` (>= 1) decoded bytes of ``data``; reaching it means "more than
        the caller can take", so the input left over does not matter."""
        if self._zlib is None:
            if self._encoding == "deflate":
                # RFC 9110 deflate is zlib-wrapped; some servers send raw deflate (browsers accept both).
                wbits = zlib.MAX_WBITS if data[0] & 0x0F == 8 else -zlib.MAX_WBITS
            else:
                wbits = 16 + zlib.MAX_WBITS
            self._zlib = zlib.decompressobj(wbits)
        try:
            return bytes(self._zlib.decompress(data, limit))
        except zlib.error as exc:
            raise Abort(f"invalid response body: cannot decode {self._encoding}: {exc}") from exc

    def flush(self) -> bytes:
        return bytes(self._zlib.flush()) if self._zlib is not None else b""


class Abort(Exception):
    """The response is refused; ``message`` is the check's error."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Exchange(asyncio.Protocol):
    """Reads one response. ``done`` resolves to None (complete) or the error text, never to an
    exception, so an abandoned exchange cannot leave an unretrieved one behind.

    After ``done``: ``status``, ``location``, ``body`` (at most ``max_body`` bytes, decoded),
    and ``first_byte`` (a ``time.perf_counter()`` mark, 0.0 if nothing arrived).
    ``skip_body`` (HEAD, or a redirect the caller will follow) ends the exchange at the head.
    """

    __slots__ = (
        "_body_len",
        "_chunks",
        "_fields",
        "_head_bytes",
        "_head_lines",
        "_head_only",
        "_in_head",
        "_inflater",
        "_leading",
        "_limits",
        "_max_body",
        "_parser",
        "_partial",
        "_skip_redirect_body",
        "_until_close",
        "done",
        "finished",
        "first_byte",
        "location",
        "status",
        "transport",
    )

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        limits: Limits,
        *,
        max_body: int,
        head_only: bool = False,
        skip_redirect_body: bool = False,
    ) -> None:
        self.done: asyncio.Future[str | None] = loop.create_future()
        self.finished = False
        self.transport: asyncio.Transport | None = None
        self.status: int | None = None
        self.location: str | None = None
        self.first_byte = 0.0
        self._limits = limits
        self._max_body = max_body
        self._head_only = head_only
        self._skip_redirect_body = skip_redirect_body
        self._parser = httptools.HttpResponseParser(self)
        # Tolerate what aiohttp's parser tolerated, so targets that passed before still pass.
        self._parser.set_dangerous_leniencies(
            lenient_headers=True, lenient_optional_cr_before_lf=True, lenient_spaces_after_chunk_size=True
        )
        self._reset_head()
        self._chunks: list[bytes] = []
        self._body_len = 0
        self._inflater: Inflater | None = None
        self._until_close = False

    def _reset_head(self) -> None:
        self._in_head = True
        self._head_bytes = 0
        self._head_lines = 0  # complete lines so far, the status line included
        self._leading = 0  # blank lines before the status line
        self._partial = 0  # length of the line still arriving
        self._fields: dict[bytes, bytes] = {}  # the headers in _WANTED, lower-case names

    def __call__(self) -> Exchange:
        """Its own protocol factory: ``create_connection`` wants one, and this protocol exists
        before its connection does (the caller holds it to await ``done``)."""
        return self

    @property
    def body(self) -> bytes:
        return b"".join(self._chunks)

    # -- asyncio.Protocol ----------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a stream transport

    def data_received(self, data: bytes) -> None:
        if self.finished:
            return
        if not self.first_byte:
            self.first_byte = time.perf_counter()
        try:
            if self._in_head:
                self._check_head(data)
            self._parser.feed_data(data)
        except Abort as exc:
            self.finish(exc.message)
        except httptools.HttpParserCallbackError as exc:
            # A callback below raised; its Abort carries the message, anything else is a bug.
            cause = exc.__context__
            if not isinstance(cause, Abort):
                self.finish(f"invalid response: {exc}")
                raise  # a bug of ours: the loop's exception handler logs it
            self.finish(cause.message)
        except httptools.HttpParserUpgrade:
            self.finish(None)  # 101 Switching Protocols: the head is the whole answer
        except httptools.HttpParserError as exc:
            where = "invalid response" if self._in_head else "invalid response body"
            self.finish(f"{where}: {exc}")

    def eof_received(self) -> bool | None:
        return None  # close our side too; connection_lost decides what the EOF meant

    def connection_lost(self, exc: Exception | None) -> None:
        if self.finished:
            return
        if self._in_head:
            if exc is None:
                self.finish("server closed the connection without a response")
            else:
                self.finish(f"connection failed: {exc}")
        elif self._until_close and exc is None:
            # No Content-Length and not chunked: the close is the end of the body.
            self._complete()
        else:
            detail = f": {exc}" if exc is not None else ""
            self.finish(f"invalid response body: connection closed before the body was complete{detail}")

    # -- httptools callbacks -------------------------------------------------------

    def on_header(self, name: bytes, value: bytes) -> None:
        # Only the headers this client acts on are kept, the first of duplicates as aiohttp's
        # ``headers.get`` did; the length test spares lower() for all the others.
        if len(name) in _WANTED_LENGTHS:
            key = name.lower()
            if key in _WANTED and key not in self._fields:
                self._fields[key] = value

    def on_headers_complete(self) -> None:
        if self.finished:
            return  # a second message in the same read: only the first counts
        status = self._parser.get_status_code()
        if 100 <= status < 200 and status != 101:
            return  # interim (100, 103): the real response follows; reset in on_message_complete
        self._in_head = False
        self.status = status
        fields = self._fields
        location = fields.get(b"location")
        if location is not None:
            self.location = location.decode("utf-8", "replace")
        if self._head_only or (self._skip_redirect_body and status in REDIRECT_STATUSES and self.location):
            self.finish(None)
            raise Abort("")  # stop the parser; done already holds the result
        declared = None
        if (length := fields.get(b"content-length")) is not None:
            try:
                declared = int(length)
            except ValueError:
                raise Abort("invalid response: invalid Content-Length") from None
        if declared is not None and declared > self._max_body:
            raise Abort(f"response body exceeds {self._max_body} bytes")
        encoding = fields.get(b"content-encoding")
        if encoding is not None:
            self._inflater = Inflater.for_encoding(encoding)
        self._until_close = (
            declared is None and b"chunked" not in fields.get(b"transfer-encoding", b"").lower()
        )

    def on_body(self, data: bytes) -> None:
        if not data or self.finished:
            return
        if self._inflater is not None:
            data = self._inflater.decode(data, self._max_body - self._body_len + 1)
        self._body_len += len(data)
        if self._body_len > self._max_body:
            raise Abort(f"response body exceeds {self._max_body} bytes")
        self._chunks.append(data)

    def on_message_complete(self) -> None:
        if self._in_head:  # an interim response ended; parse the next head from scratch
            self._reset_head()
            return
        self._complete()  # done is set: data_received ignores anything after this

    # -- internals -----------------------------------------------------------------

    def _complete(self) -> None:
        if self._inflater is not None:
            tail = self._inflater.flush()
            if self._body_len + len(tail) > self._max_body:
                self.finish(f"response body exceeds {self._max_body} bytes")
                return
            self._chunks.append(tail)
        self.finish(None)

    def finish(self, error: str | None) -> None:
        """Settle ``done`` (first call wins) and release the socket: politely after a complete
        response, at once after a failure so a hostile sender stops costing us. Also the
        caller's cleanup when it is cancelled, which cancels ``done`` but leaves the socket."""
        if self.finished:
            return
        self.finished = True
        if not self.done.done():
            self.done.set_result(error)
        if error is not None:
            self._chunks.clear()  # a failed response has no body; free it now
        if self.transport is not None:
            if error is None:
                self.transport.close()
            else:
                self.transport.abort()

    def _check_head(self, data: bytes) -> None:
        """Refuse an over-long line or too many headers before the parser buffers them."""
        limits = self._limits
        seen = self._head_bytes
        self._head_bytes = seen + len(data)
        if seen == 0 and data.startswith(b"HTTP/"):
            # Fast path, the usual case: the whole head in the first read and shorter than any
            # line limit, so no line in it can be too long; only the header count is left.
            end = data.find(b"\r\n\r\n")
            if 0 <= end < limits.short_head:
                if data.count(b"\n", 0, end) > limits.max_headers:
                    raise Abort("invalid response: Too many headers received")
                return
        start = 0
        while True:
            newline = data.find(b"\n", start)
            length = self._partial + (len(data) if newline < 0 else newline) - start
            status_line = self._head_lines == self._leading
            limit = limits.max_line_size if status_line else limits.max_field_size
            if length > limit:
                what = "the status line" if status_line else "a header line"
                raise Abort(f"invalid response: Got more than {limit} bytes when reading {what}")
            if newline < 0:
                self._partial = length
                return
            self._partial = 0
            start = newline + 1
            if length <= 1:  # "" or "\r"
                if self._head_lines > self._leading:
                    return  # the blank line that ends the head
                self._leading += 1  # before the status line: tolerated, and counted as a line
            self._head_lines += 1
            if self._head_lines > limits.max_headers + 1:
                raise Abort("invalid response: Too many headers received")
            if seen + start > limits.max_head_bytes:
                raise Abort(f"invalid response: headers exceed {limits.max_head_bytes} bytes")
