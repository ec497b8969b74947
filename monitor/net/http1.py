"""One HTTP/1.1 response on one fresh connection: an asyncio Protocol over httptools' C parser.

Built for the scheduler's hot path. A check is one request on a new connection that is closed
afterwards, so there is no pool, no stream and no task per connection: the response is parsed in
``data_received`` as it arrives, the caps are enforced there, and the waiting fetch is woken once,
when the response is complete or has failed. That keeps a check close to the cost of the socket
calls themselves (see issue 4's budget).

What it accepts is what a browser accepts (issue 10: a check's verdict is a visitor's):
- A response head is held until it is complete (at most ``Limits.max_head_bytes``, 256 KiB like
  Chrome, and ``max_headers`` fields), then checked and parsed whole; the same holds for every
  interim (1xx) head. A head line has no limit of its own: a 40 KB cookie is fine in a browser.
- The status line must be ``HTTP/1.0`` or ``HTTP/1.1`` (llhttp also takes RTSP/ and ICE/); an
  HTTP/2 frame, a TLS record or another protocol's banner is named as such.
- Lenient where browsers are: chunked wins over Content-Length; identical duplicate
  Content-Length fields count once (llhttp refuses them; we parse the head again without them).
- A check that needs no body (``read_body=False``) ends at the final head. One that does reads
  at most ``max_body`` bytes after decoding (gzip, deflate, br) and stops there: a cap reached is
  ``truncated``, not a failure. An encoding is decoded only when the body is read.
- ``first_byte`` is the first byte of the *final* response's head, not of a 103 before it.
"""

from __future__ import annotations

import asyncio
import ssl
import time
import zlib
from dataclasses import dataclass
from typing import Any

import brotli
import httptools

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_WANTED = frozenset(
    {b"location", b"content-length", b"content-encoding", b"transfer-encoding", b"content-type"}
)
_WANTED_LENGTHS = frozenset(len(name) for name in _WANTED)
_STATUS_PREFIXES = (b"HTTP/1.1 ", b"HTTP/1.0 ")
_BLANK = b"\r\n"


@dataclass(frozen=True, slots=True)
class Limits:
    """Caps on one response head, browser-sized (Chrome: 256 KiB for the whole head)."""

    max_head_bytes: int = 256 * 1024
    max_headers: int = 1000


class Inflater:
    """Incremental gzip/deflate/br decoding that never produces more than it is asked for."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self._fed = False
        self._zlib: Any = None
        self._brotli: Any = brotli.Decompressor() if encoding == "br" else None

    @classmethod
    def for_encoding(cls, value: bytes) -> Inflater | None:
        """None for an identity body; raises ``Abort`` for an encoding we cannot decode."""
        encoding = value.strip().lower().decode("latin-1")
        if encoding in ("", "identity"):
            return None
        if encoding in ("gzip", "x-gzip", "deflate", "br"):
            return cls(encoding)
        shown = value.strip().decode("latin-1")[:40]
        raise Abort(f"cannot decode the body: unsupported Content-Encoding {shown!r}")

    def decode(self, data: bytes, limit: int) -> bytes:
        """At most ``limit`` (>= 1) decoded bytes of ``data``; reaching it means "more than
        the caller can take", so the input left over does not matter."""
        self._fed = True
        try:
            if self._brotli is not None:
                return bytes(self._brotli.process(data, output_buffer_limit=limit))[:limit]
            if self._zlib is None:
                if self.encoding == "deflate":
                    # RFC 9110 deflate is zlib-wrapped; some servers send raw deflate (browsers accept both).
                    wbits = zlib.MAX_WBITS if data[0] & 0x0F == 8 else -zlib.MAX_WBITS
                else:
                    wbits = 16 + zlib.MAX_WBITS
                self._zlib = zlib.decompressobj(wbits)
            return bytes(self._zlib.decompress(data, limit))
        except (zlib.error, brotli.error) as exc:
            raise Abort(f"cannot decode the body: invalid {self.encoding} data ({exc})") from exc

    def flush(self) -> bytes:
        return bytes(self._zlib.flush()) if self._zlib is not None else b""

    @property
    def ended(self) -> bool:
        """Whether the compressed stream reached its end (a stream cut short has not)."""
        if not self._fed:
            return True  # an empty body: nothing was cut
        if self._brotli is not None:
            return bool(self._brotli.is_finished())
        return bool(self._zlib.eof)


class Abort(Exception):
    """The response is refused; ``message`` is the check's error."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


HTTP2_ONLY = "the server answered in HTTP/2 only (it does not speak HTTP/1.1)"


def not_http(start: bytes) -> str:
    """The error for a response that does not begin with an HTTP/1.x status line."""
    if len(start) >= 9 and start[0] == 0 and start[3] in (0x04, 0x07):  # an h2 SETTINGS/GOAWAY frame
        return HTTP2_ONLY
    if start[:1] == b"\x15" and start[1:2] == b"\x03":  # a TLS alert record
        return "the server answered with TLS: use an https:// URL"
    line = start.split(b"\n", 1)[0].rstrip(b"\r")
    shown = "".join(ch if ch.isprintable() else "?" for ch in line[:40].decode("latin-1"))
    if line.startswith(b"HTTP/2") or line.startswith(b"HTTP/3"):
        return HTTP2_ONLY
    if line.startswith(b"HTTP/"):
        return f"invalid response: unsupported HTTP version in {shown!r}"
    return f"invalid response: not HTTP (the server sent {shown!r})"


def _may_be_http(buf: bytes | bytearray, start: int) -> bool:
    prefix = buf[start : start + 9]
    return _STATUS_PREFIXES[0].startswith(prefix) or _STATUS_PREFIXES[1].startswith(prefix)


def _without_duplicate_lengths(head: bytes) -> bytes:
    """The head with one Content-Length field of one value, when its repeated fields or its
    list ("5, 5") all agree, as the Fetch standard and browsers accept; Abort when they
    differ (browsers refuse that). A value that is no number is left to the parser."""
    kept: list[bytes] = []
    length: bytes | None = None
    for line in head.split(b"\n"):
        name, colon, value = line.partition(b":")
        if not (colon and name.strip().lower() == b"content-length"):
            kept.append(line)
            continue
        first = length is None
        for item in value.split(b","):
            item = item.strip()
            if length is None:
                length = item
            elif item != length:
                shown = f"{length.decode('latin-1')[:20]} and {item.decode('latin-1')[:20]}"
                raise Abort(f"invalid response: conflicting Content-Length values ({shown})")
        if first:
            kept.append(b"Content-Length: %s\r" % length)
    return b"\n".join(kept)


class Response:
    """What an exchange reads and reports, in HTTP/1.1 (``Exchange``) or HTTP/2
    (``http2.H2Exchange``): the final head's facts, the body within its cap (``max_body``
    decoded bytes), and ``done``, settled once with None or the error."""

    __slots__ = (
        "_body_len",
        "_chunks",
        "_inflater",
        "_max_body",
        "content_type",
        "done",
        "finished",
        "first_byte",
        "headers",
        "interim",
        "location",
        "status",
        "transport",
        "truncated",
    )

    def _begin(self, loop: asyncio.AbstractEventLoop, max_body: int) -> None:
        self.done: asyncio.Future[str | None] = loop.create_future()
        self.finished = False
        self.transport: asyncio.Transport | None = None
        self.status: int | None = None
        self.location: str | None = None
        self.content_type: str | None = None
        self.headers: dict[bytes, list[bytes]] = {}
        self.truncated = False
        self.first_byte = 0.0
        self.interim = 0  # the status of the last interim (1xx) response, if one came
        self._max_body = max_body
        self._chunks: list[bytes] = []
        self._body_len = 0
        self._inflater: Inflater | None = None

    @property
    def body(self) -> bytes:
        return b"".join(self._chunks)

    @property
    def body_bytes(self) -> int:
        return self._body_len

    def _keep(self, data: bytes) -> bool:
        """Keep body bytes (decoded) up to the cap; True when it is reached: the exchange is
        then finished, judged on what fits."""
        room = self._max_body - self._body_len
        if self._inflater is not None:
            data = self._inflater.decode(data, room + 1)
        if len(data) > room:
            self._chunks.append(data[:room])
            self._body_len = self._max_body
            self.truncated = True
            self.finish(None)
            return True
        self._body_len += len(data)
        self._chunks.append(data)
        return False

    def _end_of_body(self) -> str | None:
        """The body is over: what the decoder still held, or the error if its data ended early."""
        inflater = self._inflater
        if inflater is None:
            return None
        tail = inflater.flush()
        room = self._max_body - self._body_len
        if len(tail) > room:
            tail, self.truncated = tail[:room], True
        self._chunks.append(tail)
        self._body_len += len(tail)
        if not self.truncated and not inflater.ended:
            # A browser shows such a page cut off, or not at all: the body is not whole.
            return f"cannot decode the body: the {inflater.encoding} data ends early"
        return None

    def _settle(self, error: str | None) -> bool:
        """Settle ``done`` (first call wins); False if it was already."""
        if self.finished:
            return False
        self.finished = True
        if not self.done.done():
            self.done.set_result(error)
        if error is not None:
            self._chunks.clear()  # a failed response has no body; free it now
        return True

    def finish(self, error: str | None) -> None:
        raise NotImplementedError


class Exchange(Response, asyncio.Protocol):
    """Reads one response. ``done`` resolves to None (complete) or the error text, never to an
    exception, so an abandoned exchange cannot leave an unretrieved one behind.

    After ``done``: ``status``, ``location``, ``content_type``, ``headers`` (the values of the
    fields named in ``header_names``, lower-case names), ``body`` (at most ``max_body`` bytes,
    decoded, when ``read_body``), ``truncated`` (the body went on past ``max_body``) and
    ``first_byte`` (a ``time.perf_counter()`` mark of the final head's first byte, 0.0 if
    nothing arrived). ``head_only`` (HEAD) and ``skip_redirect_body`` (a redirect the caller
    will follow) end the exchange at the head, as ``read_body=False`` does for any response.
    """

    __slots__ = (
        "_counted",
        "_fields",
        "_head",
        "_head_only",
        "_header_names",
        "_in_head",
        "_limits",
        "_lines",
        "_loop",
        "_parser",
        "_read_body",
        "_scan_from",
        "_skip_redirect_body",
        "_until_close",
    )

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        limits: Limits,
        *,
        max_body: int,
        read_body: bool = True,
        head_only: bool = False,
        skip_redirect_body: bool = False,
        header_names: frozenset[bytes] = frozenset(),
    ) -> None:
        self._begin(loop, max_body)
        self._loop = loop
        self._limits = limits
        self._read_body = read_body and not head_only
        self._head_only = head_only
        self._skip_redirect_body = skip_redirect_body
        self._header_names = header_names
        self._parser = self._new_parser()
        self._head = bytearray()  # the part of a head that has arrived so far
        self._scan_from = 0  # where to look for its end next time
        self._counted = 0  # how much of it has had its lines counted, and how many there were
        self._lines = 0
        self._in_head = True
        self._fields: dict[bytes, bytes] = {}  # the headers in _WANTED, lower-case names
        self._until_close = False

    def _new_parser(self) -> httptools.HttpResponseParser:
        parser = httptools.HttpResponseParser(self)
        # lenient_chunked_length: "Transfer-Encoding: chunked" wins over a Content-Length, as
        # in browsers. The others tolerate what aiohttp's parser did (LF-only lines, obs-fold).
        parser.set_dangerous_leniencies(
            lenient_headers=True,
            lenient_chunked_length=True,
            lenient_optional_cr_before_lf=True,
            lenient_spaces_after_chunk_size=True,
        )
        return parser

    def __call__(self) -> Exchange:
        """Its own protocol factory: ``create_connection`` wants one, and this protocol exists
        before its connection does (the caller holds it to await ``done``)."""
        return self

    @property
    def in_head(self) -> bool:
        return self._in_head

    def reading_phase(self) -> str:
        """Where the exchange is, for a timeout's message."""
        if self._in_head:
            if self.first_byte:
                return "waiting for the rest of the response head"
            if self.interim:
                return f"waiting for the response head (after an interim {self.interim})"
            return "waiting for the response head (nothing received)"
        return f"reading the body (after a {self.status} response head, {self._body_len} bytes read)"

    # -- asyncio.Protocol ----------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a stream transport

    def data_received(self, data: bytes) -> None:
        if self.finished:
            return
        try:
            if self._in_head:
                data = self._take_heads(data)
            if data and not self.finished:
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
            if isinstance(exc, ssl.SSLError) and "CERTIFICATE_REQUIRED" in (exc.reason or ""):
                # TLS 1.3 sends this alert after the handshake, on the first read.
                self.finish("TLS error: the server requires a client certificate")
            elif exc is not None:
                self.finish(f"connection failed: {exc}")
            elif self._head.strip(_BLANK):
                start = len(self._head) - len(self._head.lstrip(_BLANK))
                if not _may_be_http(self._head, start):
                    self.finish(not_http(bytes(self._head[start:])))
                else:
                    self.finish("invalid response: the connection closed in the middle of the response head")
            else:
                self.finish("server closed the connection without a response")
        elif self._until_close and exc is None:
            # No Content-Length and not chunked: the close is the end of the body.
            self._complete()
        else:
            detail = f": {exc}" if exc is not None else ""
            self.finish(f"invalid response body: connection closed before the body was complete{detail}")

    # -- heads ---------------------------------------------------------------------

    def _take_heads(self, data: bytes) -> bytes:
        """Hold ``data`` until a head is complete; check and parse each complete head (interim
        ones and the final one). Returns what follows the final head (body bytes)."""
        limits = self._limits
        while self._in_head and data:
            if not self._head:
                self.first_byte = time.perf_counter()  # a head starts here
                buf: bytes | bytearray = data
            else:
                self._head += data  # a bytearray: a head dripping in is not copied again each read
                buf = self._head
            start = 0
            while start < len(buf) and buf[start] in _BLANK:  # blank lines before a status line
                start += 1
            # A whole status prefix, the usual case, needs no call of _may_be_http.
            if buf[start : start + 9] not in _STATUS_PREFIXES and not _may_be_http(buf, start):
                # Refused at once, but named from its first line (or an h2 frame's header).
                first = buf[start]
                if b"\n" in buf[start:] or len(buf) - start >= (9 if first in (0, 0x15) else 64):
                    raise Abort(not_http(bytes(buf[start:])))
            # The index just past the blank line that ends the head (searched past any blank
            # lines before the status line and what was searched before), or -1.
            scan = max(start, self._scan_from)
            crlf = buf.find(b"\n\r\n", scan)
            lf = buf.find(b"\n\n", scan, crlf + 2 if crlf >= 0 else len(buf))
            end = lf + 2 if lf >= 0 else crlf + 3 if crlf >= 0 else -1
            if end < 0:
                if len(buf) > limits.max_head_bytes:
                    raise Abort(f"invalid response: the response head exceeds {limits.max_head_bytes} bytes")
                self._lines += buf.count(b"\n", max(start, self._counted))
                self._counted = len(buf)
                if self._lines - 1 > limits.max_headers:  # less the status line
                    raise Abort(f"invalid response: more than {limits.max_headers} header fields")
                if buf is not self._head:
                    self._head += buf
                self._scan_from = max(start, len(buf) - 2)
                return b""
            if end == len(buf) and isinstance(buf, bytes):
                head, data = buf, b""  # the usual case: a whole head, alone in one read
            else:
                head, data = bytes(buf[:end]), bytes(buf[end:])
            self._head, self._scan_from, self._counted, self._lines = bytearray(), 0, 0, 0
            if end > limits.max_head_bytes:
                raise Abort(f"invalid response: the response head exceeds {limits.max_head_bytes} bytes")
            if head.count(b"\n", start) - 2 > limits.max_headers:  # less the status and blank lines
                raise Abort(f"invalid response: more than {limits.max_headers} header fields")
            try:  # parsed here, not in a method of its own: one call fewer a check
                self._parser.feed_data(head)
            except httptools.HttpParserError as exc:
                if isinstance(exc, httptools.HttpParserCallbackError):
                    raise
                if "Content-Length" not in str(exc):  # Duplicate, or a list ("5, 5")
                    raise
                self._reparse(head)
        return data

    def _reparse(self, head: bytes) -> None:
        """Parse ``head`` again with one Content-Length, as the first parse refused its
        repeated or listed ones."""
        # The callbacks have seen only the fields before the Content-Length at fault.
        self._fields = {}
        self.headers = {}
        self._parser = self._new_parser()
        self._parser.feed_data(_without_duplicate_lengths(head))

    # -- httptools callbacks -------------------------------------------------------

    def on_header(self, name: bytes, value: bytes) -> None:
        # Only the headers this client acts on are kept, the first of duplicates; the length
        # test spares lower() for all the others. Those an assertion asks for keep every value.
        if len(name) in _WANTED_LENGTHS:
            key = name.lower()
            if key in _WANTED and key not in self._fields:
                self._fields[key] = value
        if self._header_names:
            key = name.lower()
            if key in self._header_names:
                self.headers.setdefault(key, []).append(value)

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
        content_type = fields.get(b"content-type")
        if content_type is not None:
            self.content_type = content_type.decode("latin-1")
        if (
            not self._read_body
            or self._head_only
            or (self._skip_redirect_body and status in REDIRECT_STATUSES and self.location)
        ):
            # Done. No exception to stop the parser (that costs more than the rest of the
            # head): it was fed this head alone, and data_received feeds a finished one nothing.
            self.finish(None)
            return
        declared = None
        if (length := fields.get(b"content-length")) is not None:
            try:
                declared = int(length)
            except ValueError:
                raise Abort("invalid response: invalid Content-Length") from None
        encoding = fields.get(b"content-encoding")
        if encoding is not None:
            self._inflater = Inflater.for_encoding(encoding)
        self._until_close = (
            declared is None and b"chunked" not in fields.get(b"transfer-encoding", b"").lower()
        )

    def on_body(self, data: bytes) -> None:
        if not data or self.finished:
            return
        if self._keep(data):  # the cap: stop the parser
            raise Abort("")

    def on_message_complete(self) -> None:
        if self._in_head:  # an interim response ended; the next head is parsed from scratch
            self._fields = {}
            self.headers = {}
            self.interim = self._parser.get_status_code()
            self.first_byte = 0.0  # time to first byte is the final response's
            return
        self._complete()  # done is set: data_received ignores anything after this

    # -- internals -----------------------------------------------------------------

    def _complete(self) -> None:
        if self._inflater is not None and not self.finished:
            self.finish(self._end_of_body())
            return
        self.finish(None)

    def finish(self, error: str | None) -> None:
        """Settle ``done`` (first call wins) and release the socket: politely after a complete
        response, at once after a failure so a hostile sender stops costing us. Also the
        caller's cleanup when it is cancelled, which cancels ``done`` but leaves the socket."""
        if not self._settle(error):
            return
        if self.transport is not None:
            if error is None:
                self.transport.close()
            else:
                self.transport.abort()
