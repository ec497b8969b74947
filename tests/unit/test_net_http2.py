"""The HTTP/2 pieces without a socket: the request's fields (a table), the h2 TLS context's
trust, and ``H2Exchange`` fed the bytes of a server built on h2's own server side."""

from __future__ import annotations

import asyncio
import gzip
import ssl
from collections.abc import Callable
from typing import Any

import h2.config
import h2.connection
import h2.events
import pytest
import trustme
from h2.errors import ErrorCodes

from monitor import __version__
from monitor.net.http1 import Limits
from monitor.net.http2 import H2Exchange
from monitor.net.session import same_trust, tls_context
from monitor.net.target import InvalidRequest, h2_fields

AGENT = ("user-agent", f"monitor/{__version__}")
PSEUDO = [(":method", "GET"), (":scheme", "https"), (":authority", "example.org"), (":path", "/p?q=1")]

FIELDS: list[tuple[str, dict[str, str], bytes | None, list[tuple[str, str]]]] = [
    ("plain GET", {}, None, [*PSEUDO, ("accept", "*/*"), AGENT]),
    (
        "names lower-cased, framing dropped",
        {"X-Api-Key": "k", "Connection": "keep-alive", "Transfer-Encoding": "chunked"},
        None,
        [*PSEUDO, ("x-api-key", "k"), ("accept", "*/*"), AGENT],
    ),
    (
        "a Host given is the authority",
        {"Host": "other.example"},
        None,
        [
            (":method", "GET"),
            (":scheme", "https"),
            (":authority", "other.example"),
            (":path", "/p?q=1"),
            ("accept", "*/*"),
            AGENT,
        ],
    ),
    (
        "own Accept and User-Agent",
        {"Accept": "text/html", "User-Agent": "x"},
        None,
        [*PSEUDO, ("accept", "text/html"), ("user-agent", "x")],
    ),
]


@pytest.mark.parametrize(
    ("method", "headers", "body", "want"),
    [("GET", h, b, w) for _, h, b, w in FIELDS],
    ids=[name for name, *_ in FIELDS],
)
def test_request_fields(method: str, headers: dict[str, str], body: bytes | None, want: list[Any]) -> None:
    assert h2_fields(method, "/p?q=1", "example.org", headers, body) == want


def test_request_fields_of_a_post_and_a_bad_header() -> None:
    fields = h2_fields("POST", "/", "example.org", {}, b"ping=1")
    assert fields[0] == (":method", "POST") and ("content-length", "6") in fields
    assert ("content-length", "0") in h2_fields("PUT", "/", "example.org", {})
    with pytest.raises(InvalidRequest, match="invalid header 'X-Bad'"):
        h2_fields("GET", "/", "example.org", {"X-Bad": "a\r\nInjected: 1"})


def test_the_h2_context_trusts_what_the_session_trusts(tmp_path: Any) -> None:
    ca = trustme.CA()
    pem = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(pem))
    given = tls_context(str(pem))
    copy = same_trust(given, ["h2"])
    assert copy.cert_store_stats()["x509_ca"] == given.cert_store_stats()["x509_ca"]
    assert (copy.verify_mode, copy.check_hostname) == (ssl.CERT_REQUIRED, True)
    assert copy.minimum_version == given.minimum_version


# -- H2Exchange against h2's server side, in memory ----------------------------------------


class Pipe(asyncio.Transport):
    """The exchange's transport: what it writes goes to the server connection."""

    def __init__(self, server: h2.connection.H2Connection) -> None:
        super().__init__()
        self.server = server
        self.events: list[h2.events.Event] = []
        self.closed = self.aborted = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.events += self.server.receive_data(bytes(data))

    def is_closing(self) -> bool:
        return self.closed or self.aborted

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True


Answer = Callable[[h2.connection.H2Connection], None]
OK = [(b":status", b"200"), (b"content-type", b"text/html")]


def page(body: bytes, *fields: tuple[bytes, bytes], length: int | None = None) -> Answer:
    def answer(server: h2.connection.H2Connection) -> None:
        size = len(body) if length is None else length
        server.send_headers(1, [*OK, *fields, (b"content-length", b"%d" % size)])
        server.send_data(1, body, end_stream=True)

    return answer


def goaway(server: h2.connection.H2Connection) -> None:
    server.close_connection(ErrorCodes.ENHANCE_YOUR_CALM, b"calm down", last_stream_id=0)


EXCHANGES: list[tuple[str, Answer, dict[str, Any], dict[str, Any]]] = [
    ("a page", page(b"hello"), {}, {"error": None, "status": 200, "body": b"hello"}),
    ("the head only", page(b"hello"), {"read_body": False}, {"error": None, "status": 200, "body": b""}),
    ("the cap", page(b"x" * 100), {"max_body": 10}, {"error": None, "body": b"x" * 10, "truncated": True}),
    (
        "gzip unasked",
        page(gzip.compress(b"hello"), (b"content-encoding", b"gzip")),
        {},
        {"error": None, "body": b"hello"},
    ),
    (
        "short of its length",
        page(b"hello", length=50),
        {},
        {"error": "invalid response body: HTTP/2 protocol error (", "status": 200},
    ),
    (
        "a GOAWAY",
        goaway,
        {},
        {"error": "the server closed the HTTP/2 connection before answering (GOAWAY ENHANCE_YOUR_CALM: "},
    ),
]


@pytest.mark.parametrize(
    ("answer", "options", "want"), [e[1:] for e in EXCHANGES], ids=[e[0] for e in EXCHANGES]
)
async def test_exchange(answer: Answer, options: dict[str, Any], want: dict[str, Any]) -> None:
    server = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding=None))
    server.initiate_connection()
    request = [(":method", "GET"), (":scheme", "https"), (":authority", "t"), (":path", "/"), AGENT]
    exchange = H2Exchange(
        asyncio.get_running_loop(), Limits(), request, None, max_body=options.pop("max_body", 1024), **options
    )
    pipe = Pipe(server)
    exchange.start(pipe)
    assert any(isinstance(e, h2.events.RequestReceived) for e in pipe.events)
    answer(server)
    exchange.data_received(server.data_to_send())
    assert exchange.done.done()
    error = exchange.done.result()
    if want.get("error") is None:
        assert error is None and pipe.closed and not pipe.aborted
    else:
        assert error is not None and error.startswith(want["error"]), error
        assert pipe.aborted
    for key in ("status", "body", "truncated"):
        if key in want:
            assert getattr(exchange, key) == want[key], key
