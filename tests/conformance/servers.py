"""The table's own servers: raw asyncio servers that write exact bytes, and Python's http.server.

Raw servers run on an event loop in a thread of their own (``ServerThread``), so they live for
the whole session whatever loop a test runs on, and a check's work never delays their writes.
Each is one ``Raw`` behaviour: what it writes (at once on connect, or after the request head),
with pauses where the timing is the point, and how it ends the connection. A server that must
"stall" simply never writes again; the check's own timeout ends the connection.

All listen on loopback only (127.0.0.1 or ::1, port 0).
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import socket
import ssl
import struct
import threading
import zlib
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass, field
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal, TypeVar

import brotli

T = TypeVar("T")

# -- responses, byte for byte --------------------------------------------------------------

PAGE = b"<!doctype html><title>Home</title><h1>Welcome home</h1>\n"


def response(
    status: bytes = b"200 OK",
    *headers: bytes,
    body: bytes = PAGE,
    length: bool = True,
    version: bytes = b"HTTP/1.1",
    eol: bytes = b"\r\n",
) -> bytes:
    """A response: status line, the given header lines, Content-Length unless ``length`` is
    False (then the body is delimited by the close), a blank line, the body."""
    lines = [version + b" " + status, *headers]
    if length:
        lines.append(b"Content-Length: %d" % len(body))
    return eol.join(lines) + eol + eol + body


def chunked(*chunks: bytes, trailers: bytes = b"") -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n" + trailers + b"\r\n"


def padding(total: int, *, line: int = 8000, name: bytes = b"X-Pad") -> tuple[bytes, ...]:
    """Header lines of ``line`` bytes each, about ``total`` bytes together."""
    value = b"p" * (line - len(name) - 8)
    return tuple(b"%s-%d: %s" % (name, n, value) for n in range(total // line + 1))


def h2_frame(kind: int, payload: bytes, stream: int = 0, flags: int = 0) -> bytes:
    return struct.pack("!I", len(payload))[1:] + bytes([kind, flags]) + struct.pack("!I", stream) + payload


# An HTTP/2 server's connection preface (SETTINGS: max concurrent streams 100), then GOAWAY
# with PROTOCOL_ERROR once the client's bytes turn out not to be the HTTP/2 preface.
H2_SETTINGS = h2_frame(0x4, struct.pack("!HI", 0x3, 100))
H2_GOAWAY = h2_frame(0x7, struct.pack("!II", 0, 1) + b"invalid preface")

EARLY_HINTS = b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n\r\n"
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
HTML = b"Content-Type: text/html; charset=utf-8"
TTFB_DELAY = 0.3  # the origin's think time after the 103 (seconds)
SLOW_DELAY = 0.25  # before the whole answer of the "slow" server


def _raw_deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


@dataclass(frozen=True)
class Raw:
    """One misbehaviour. ``greet`` is written as soon as the connection opens (banners, an
    HTTP/2 preface); then, if ``read_request``, the request head is read; then ``steps`` run:
    bytes are written, a float pauses that many seconds. ``then``: ``close`` (FIN), ``reset``
    (RST: SO_LINGER 0), or ``hold`` (keep the connection open until the client closes it)."""

    steps: tuple[bytes | float, ...] = ()
    greet: bytes = b""
    read_request: bool = True
    then: Literal["close", "reset", "hold"] = "close"
    host: str = "127.0.0.1"
    tls: str | None = None  # a context name from tls.Pki.contexts()


OK = response(b"200 OK", HTML)

RAW: dict[str, Raw] = {
    # framing
    "both-lengths": Raw(
        (
            response(
                b"200 OK",
                HTML,
                b"Content-Length: 5",
                b"Transfer-Encoding: chunked",
                body=chunked(b"<h1>Welcome ", b"home</h1>\n"),
                length=False,
            ),
        )
    ),
    "same-length-twice": Raw((response(b"200 OK", HTML, b"Content-Length: %d" % len(PAGE)),)),
    "length-list": Raw(
        (response(b"200 OK", HTML, b"Content-Length: %d, %d" % (len(PAGE), len(PAGE)), length=False),)
    ),
    "conflicting-lengths": Raw((response(b"200 OK", HTML, b"Content-Length: 5"),)),
    "close-delimited": Raw((response(b"200 OK", HTML, length=False),)),
    "http10": Raw((response(b"200 OK", HTML, version=b"HTTP/1.0", length=False),)),
    "no-reason-phrase": Raw((response(b"200", HTML),)),
    "lf-only": Raw((response(b"200 OK", HTML, eol=b"\n"),)),
    "folded-header": Raw((response(b"200 OK", HTML, b"X-Note: first part", b"  continued here"),)),
    "chunked-trailers": Raw(
        (
            response(
                b"200 OK",
                HTML,
                b"Transfer-Encoding: chunked",
                b"Trailer: X-Checksum",
                body=chunked(b"<h1>Welcome ", b"home</h1>\n", trailers=b"X-Checksum: abc123\r\n"),
                length=False,
            ),
        )
    ),
    "chunk-extensions": Raw(
        (
            response(
                b"200 OK",
                HTML,
                b"Transfer-Encoding: chunked",
                body=b"c;name=value\r\n<h1>Welcome \r\na\r\nhome</h1>\n\r\n0\r\n\r\n",
                length=False,
            ),
        )
    ),
    "no-content-kept-open": Raw((b"HTTP/1.1 204 No Content\r\nServer: raw\r\n\r\n",), then="hold"),
    "not-modified-kept-open": Raw(
        (b'HTTP/1.1 304 Not Modified\r\nETag: "v1"\r\nContent-Length: 1234\r\n\r\n',), then="hold"
    ),
    # A HEAD answer states the GET's length and sends no body; the connection stays open.
    "head-kept-open": Raw(
        (b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5000\r\n\r\n",), then="hold"
    ),
    # status lines and protocols
    "rtsp": Raw((b"RTSP/1.0 200 OK\r\nCSeq: 1\r\nContent-Length: 0\r\n\r\n",)),
    "h2c-only": Raw((H2_GOAWAY,), greet=H2_SETTINGS),
    # sshd greets first, then waits for the client's identification line.
    "ssh-banner": Raw(greet=b"SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n", read_request=False, then="hold"),
    "smtp-banner": Raw(
        (b"500 5.5.2 Error: bad syntax\r\n",), greet=b"220 mail.localhost ESMTP Postfix (Debian/GNU)\r\n"
    ),
    "http09": Raw((PAGE,)),
    # A Java (JSSE) TLS port read as plain HTTP: a fatal TLS alert (unexpected_message).
    "tls-alert": Raw((b"\x15\x03\x03\x00\x02\x02\x0a",)),
    # interim responses
    "continue-then-ok": Raw((CONTINUE + OK,)),
    "early-hints": Raw((EARLY_HINTS + OK,)),
    "early-hints-huge-final": Raw((EARLY_HINTS + response(b"200 OK", HTML, *padding(800 * 1024)),)),
    "early-hints-then-delay": Raw((EARLY_HINTS, TTFB_DELAY, OK)),
    # head sizes
    "head-over-256k": Raw((response(b"200 OK", HTML, *padding(300 * 1024)),)),
    "500-fields": Raw((response(b"200 OK", HTML, *(b"X-Field-%d: %d" % (n, n) for n in range(1, 499))),)),
    "1001-fields": Raw((response(b"200 OK", *(b"X-Field-%d: %d" % (n, n) for n in range(1, 1001))),)),
    "big-set-cookie": Raw(
        (response(b"200 OK", HTML, b"Set-Cookie: session=" + b"c" * 40_000 + b"; Path=/"),)
    ),
    # encodings
    "gzip-unasked": Raw((response(b"200 OK", HTML, b"Content-Encoding: gzip", body=gzip.compress(PAGE)),)),
    "br-unasked": Raw((response(b"200 OK", HTML, b"Content-Encoding: br", body=brotli.compress(PAGE)),)),
    "raw-deflate": Raw((response(b"200 OK", HTML, b"Content-Encoding: deflate", body=_raw_deflate(PAGE)),)),
    "content-encoding-utf8": Raw((response(b"200 OK", HTML, b"Content-Encoding: UTF-8"),)),
    "broken-gzip": Raw((response(b"200 OK", HTML, b"Content-Encoding: gzip"),)),
    # connections that break
    "empty-reply": Raw(),
    "reset-before-head": Raw(then="reset"),
    "reset-after-head": Raw(
        (response(b"200 OK", HTML, b"Content-Length: 4096", length=False, body=PAGE),), then="reset"
    ),
    "truncated-body": Raw((response(b"200 OK", HTML, b"Content-Length: 4096", length=False, body=PAGE),)),
    # time
    "silent": Raw(read_request=False, then="hold"),
    "head-stalls-midway": Raw((b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n",), then="hold"),
    "early-hints-then-silence": Raw((EARLY_HINTS,), then="hold"),
    "body-stalls": Raw(
        (response(b"200 OK", HTML, b"Content-Length: 4096", length=False, body=PAGE),), then="hold"
    ),
    "slow": Raw((SLOW_DELAY, OK)),
    # plain answers, over IPv6 and TLS
    "ok-v6": Raw((OK,), host="::1"),
    **{
        f"tls-{name}": Raw((OK,), tls=name)
        for name in (
            "valid",
            "expired",
            "wrong-name",
            "self-signed",
            "missing-intermediate",
            "tls12-only",
            "tls13-only",
            "sni",
        )
    },
    # An h2-only TLS server: offers ALPN h2 only and speaks HTTP/2 at once, whatever was negotiated.
    "tls-alpn-h2-only": Raw((H2_GOAWAY,), greet=H2_SETTINGS, tls="alpn-h2-only"),
}


# -- the thread the raw servers run in -----------------------------------------------------


class ServerThread:
    """An event loop in a daemon thread, holding the raw servers; ``close`` ends them all."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        # Handshake failures and resets are the point of many servers: keep, do not log, them.
        self.errors: list[dict[str, Any]] = []
        self.loop.set_exception_handler(lambda _loop, context: self.errors.append(context))
        self._servers: list[asyncio.Server] = []
        self._open: set[asyncio.StreamWriter] = set()
        self._thread = threading.Thread(target=self.loop.run_forever, name="conformance-servers", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 10.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def start_raw(self, raw: Raw, contexts: dict[str, ssl.SSLContext]) -> int:
        """Start one raw server; its port."""
        return self.run(self._start(raw, contexts[raw.tls] if raw.tls else None))

    async def _start(self, raw: Raw, context: ssl.SSLContext | None) -> int:
        extra: dict[str, Any] = {"ssl": context, "ssl_handshake_timeout": 5} if context else {}
        server = await asyncio.start_server(partial(self._serve, raw), raw.host, 0, **extra)
        self._servers.append(server)
        return int(server.sockets[0].getsockname()[1])

    async def _serve(self, raw: Raw, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._open.add(writer)
        try:
            if raw.greet:
                writer.write(raw.greet)
                await writer.drain()
            if raw.read_request:
                await reader.readuntil(b"\r\n\r\n")
            for step in raw.steps:
                if isinstance(step, float):
                    await asyncio.sleep(step)
                else:
                    writer.write(step)
                    await writer.drain()
            if raw.then == "hold":
                while await reader.read(65536):
                    pass
            elif raw.then == "reset":
                sock = writer.get_extra_info("socket")
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                writer.transport.abort()
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ssl.SSLError):
            pass  # the client went away or gave up: that is what many rows test
        finally:
            self._open.discard(writer)
            writer.close()

    def close(self) -> None:
        if self.loop.is_closed():
            return
        with contextlib.suppress(Exception):
            self.run(self._shutdown(), timeout=5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        self.loop.close()

    async def _shutdown(self) -> None:
        for server in self._servers:
            server.close()
        for writer in list(self._open):
            writer.transport.abort()
        current = asyncio.current_task()
        tasks = [t for t in asyncio.all_tasks() if t is not current]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class BlockingTlsServer:
    """A TLS server on blocking sockets in a thread of its own, answering ``OK``.

    For a handshake the server refuses (a client certificate required and not sent): OpenSSL
    writes its alert to a blocking socket before the handshake raises, as real servers do,
    while asyncio's TLS server aborts the connection and the alert is lost.
    """

    def __init__(self, context: ssl.SSLContext) -> None:
        self._context = context
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._thread = threading.Thread(target=self._serve, name="blocking-tls", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return  # closed
            conn.settimeout(5)
            tls = self._context.wrap_socket(conn, server_side=True, do_handshake_on_connect=False)
            try:
                tls.do_handshake()
                request = b""
                while b"\r\n\r\n" not in request and (data := tls.recv(4096)):
                    request += data
                tls.sendall(OK)
                tls.close()
            except (OSError, ssl.SSLError):
                # Refused: the alert is sent. Read what the client sent meanwhile (its request,
                # in TLS 1.3) before closing, as Apache's lingering close does: closing with
                # unread data would send a reset that can overtake the alert.
                with socket.socket(fileno=tls.detach()) as plain:
                    with contextlib.suppress(OSError):
                        plain.settimeout(0.5)
                        while plain.recv(65536):
                            pass

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes accept()
        self._listener.close()
        self._thread.join(5)


# -- sockets that never get as far as HTTP -------------------------------------------------


@contextlib.contextmanager
def connect_stall() -> Iterator[int]:
    """A port whose connects hang: a listener with a full accept queue (backlog 0, one
    connection queued and never accepted) drops further SYNs, as a saturated server does."""
    with socket.socket() as listener, socket.socket() as filler:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = int(listener.getsockname()[1])
        filler.connect(("127.0.0.1", port))
        yield port


@contextlib.contextmanager
def silent_dns() -> Iterator[str]:
    """A DNS server (in ``MONITOR_DNS_SERVERS`` form) that never answers: a bound UDP port
    nobody reads."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"127.0.0.1:{sock.getsockname()[1]}"


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- Python's http.server ------------------------------------------------------------------

BEARER_TOKEN = "s3cret-token"
PY_PAGE = b"<h1>Served by Python's http.server</h1>\n"


class _Handler(SimpleHTTPRequestHandler):
    """Files from a directory, as ``python -m http.server`` (HTTP/1.0, the class default),
    plus a few endpoints the table needs."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        route = {
            "/close-delimited": self._close_delimited,
            "/bearer": self._bearer,
            "/no-auth": self._no_auth,
            "/echo": self._echo,
            "/see-other": self._see_other,
            "/temporary-redirect": self._temporary_redirect,
        }.get(self.path)
        if route is None:
            super().do_GET()
        else:
            route()

    def do_POST(self) -> None:
        route = {
            "/echo": self._echo,
            "/see-other": self._see_other,
            "/temporary-redirect": self._temporary_redirect,
        }.get(self.path)
        if route is None:
            self.send_error(405)
        else:
            route()

    do_PUT = do_POST
    do_PATCH = do_POST

    def _send(
        self, status: int, body: bytes, content_type: str = "text/plain", *, length: bool = True
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        if length:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _close_delimited(self) -> None:
        self._send(200, PY_PAGE, "text/html", length=False)  # HTTP/1.0: the close ends the body

    def _bearer(self) -> None:
        if self.headers.get("Authorization") == f"Bearer {BEARER_TOKEN}":
            self._send(200, b"token accepted\n")
        else:
            self._send(401, b"missing or wrong token\n")

    def _no_auth(self) -> None:
        # Another origin: any credential that reaches it leaked through a redirect.
        leaked = [name for name in ("Authorization", "X-Api-Key", "Cookie") if name in self.headers]
        if leaked:
            self._send(400, f"credentials leaked to another origin: {', '.join(leaked)}\n".encode())
        else:
            self._send(200, b"no credentials here\n")

    def _echo(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode("utf-8", "replace")
        seen = {"method": self.command, "content_type": self.headers.get("Content-Type"), "body": body}
        self._send(200, json.dumps(seen).encode(), "application/json")

    def _redirect(self, status: int, to: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.send_response(status)
        self.send_header("Location", to)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _see_other(self) -> None:
        self._redirect(303, "/echo")

    def _temporary_redirect(self) -> None:
        self._redirect(307, "/echo")


class _V6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6


@dataclass
class PyHttp:
    """``python -m http.server`` in a thread, on 127.0.0.1 or ::1, serving ``www``."""

    www: Path
    host: str = "127.0.0.1"
    port: int = 0
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> PyHttp:
        self.www.mkdir(parents=True, exist_ok=True)
        (self.www / "index.html").write_bytes(PY_PAGE)
        kind = _V6Server if ":" in self.host else ThreadingHTTPServer
        self._server = kind((self.host, 0), partial(_Handler, directory=str(self.www)))
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, name="http.server", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)
