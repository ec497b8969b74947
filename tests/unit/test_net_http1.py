"""http1.Exchange without a network: bytes in, outcome out, in whatever pieces they arrive.

Each scenario is fed whole, in two arbitrary halves and one byte at a time, since a hostile or
slow server decides where reads split and the caps must hold for every split.
"""

from __future__ import annotations

import asyncio
import gzip
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

import brotli
import pytest

from monitor.net.http1 import Exchange, Limits


class FakeTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.state = "open"

    def close(self) -> None:
        self.state = "closed"

    def abort(self) -> None:
        self.state = "aborted"

    def is_closing(self) -> bool:
        return self.state != "open"


@dataclass
class Outcome:
    error: str | None
    status: int | None
    location: str | None
    body: bytes
    transport: str


def splits(data: bytes) -> Iterator[list[bytes]]:
    yield [data]
    yield [data[: len(data) // 2], data[len(data) // 2 :]]
    yield [data[i : i + 1] for i in range(len(data))]


async def run(
    pieces: list[bytes], *, close: bool = True, limits: Limits | None = None, **kwargs: object
) -> Outcome:
    exchange = Exchange(asyncio.get_running_loop(), limits or Limits(), **{"max_body": 1000, **kwargs})  # type: ignore[arg-type]
    transport = FakeTransport()
    exchange.connection_made(transport)
    for piece in pieces:
        exchange.data_received(piece)
    if close:
        exchange.connection_lost(None)
    assert exchange.done.done()
    return Outcome(exchange.done.result(), exchange.status, exchange.location, exchange.body, transport.state)


def response(head: str, body: bytes = b"") -> bytes:
    return head.replace("\n", "\r\n").encode() + b"\r\n" + body


OK = response("HTTP/1.1 200 OK\nContent-Length: 5\n", b"hello")
CHUNKED = response("HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n", b"3\r\nhel\r\n2\r\nlo\r\n0\r\n\r\n")
UNTIL_CLOSE = response("HTTP/1.0 200 OK\n", b"hello")
GZIPPED = gzip.compress(b"hello")
BROTLI = brotli.compress(b"hello")


@pytest.mark.parametrize(
    ("name", "data", "kwargs", "want"),
    [
        ("content-length", OK, {}, (None, 200, None, b"hello")),
        ("chunked", CHUNKED, {}, (None, 200, None, b"hello")),
        ("until close", UNTIL_CLOSE, {}, (None, 200, None, b"hello")),
        ("204 has no body", response("HTTP/1.1 204 No Content\n"), {}, (None, 204, None, b"")),
        (
            "interim 100 and 103 are skipped",
            response("HTTP/1.1 100 Continue\n") + response("HTTP/1.1 103 Early Hints\nLink: </a>\n") + OK,
            {},
            (None, 200, None, b"hello"),
        ),
        (
            "gzip is decoded",
            response(f"HTTP/1.1 200 OK\nContent-Encoding: gzip\nContent-Length: {len(GZIPPED)}\n", GZIPPED),
            {},
            (None, 200, None, b"hello"),
        ),
        (
            "raw deflate is decoded too",
            response("HTTP/1.1 200 OK\nContent-Encoding: deflate\n", zlib.compress(b"hello")[2:-4]),
            {},
            (None, 200, None, b"hello"),
        ),
        (
            "3xx body is read when not followed",
            response("HTTP/1.1 302 Found\nLocation: /next\nContent-Length: 3\n", b"bye"),
            {},
            (None, 302, "/next", b"bye"),
        ),
        (
            "3xx body is skipped when followed",
            response("HTTP/1.1 302 Found\nLocation: /next\nContent-Length: 5000\n", b"bye"),
            {"skip_redirect_body": True},
            (None, 302, "/next", b""),
        ),
        (
            "HEAD ends at the head",
            response("HTTP/1.1 200 OK\nContent-Length: 5000\n"),
            {"head_only": True},
            (None, 200, None, b""),
        ),
        (
            "first Location wins",
            response("HTTP/1.1 301 Moved\nLocation: /a\nlocation: /b\nContent-Length: 0\n"),
            {},
            (None, 301, "/a", b""),
        ),
        (
            "bare LF line ends are tolerated",
            b"HTTP/1.1 200 OK\nContent-Length: 5\n\nhello",
            {},
            (None, 200, None, b"hello"),
        ),
        (
            "a declared length over the cap is read up to the cap",
            response("HTTP/1.1 200 OK\nContent-Length: 1001\n", b"x" * 1001),
            {},
            (None, 200, None, b"x" * 1000),
        ),
        (
            "a chunked body over the cap is cut at the cap",
            response("HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n", b"3e9\r\n" + b"x" * 1001 + b"\r\n"),
            {},
            (None, 200, None, b"x" * 1000),
        ),
        (
            "a status check ends at the head, whatever the body",
            response("HTTP/1.1 200 OK\nContent-Length: 99999999\nContent-Encoding: UTF-8\n", b"x" * 10),
            {"read_body": False},
            (None, 200, None, b""),
        ),
        (
            "an unknown encoding fails when the body is read",
            response("HTTP/1.1 200 OK\nContent-Length: 5\nContent-Encoding: UTF-8\n", b"hello"),
            {},
            ("cannot decode the body: unsupported Content-Encoding 'UTF-8'", 200, None, b""),
        ),
        (
            "broken gzip fails when the body is read",
            response("HTTP/1.1 200 OK\nContent-Length: 5\nContent-Encoding: gzip\n", b"hello"),
            {},
            ("cannot decode the body: invalid gzip data (", 200, None, b""),
        ),
        (
            "gzip cut short fails when the body is read, though its length matched",
            response(
                f"HTTP/1.1 200 OK\nContent-Length: {len(GZIPPED) - 10}\nContent-Encoding: gzip\n",
                GZIPPED[:-10],
            ),
            {},
            ("cannot decode the body: the gzip data ends early", 200, None, b""),
        ),
        (
            "br is decoded",
            response(f"HTTP/1.1 200 OK\nContent-Encoding: br\nContent-Length: {len(BROTLI)}\n", BROTLI),
            {},
            (None, 200, None, b"hello"),
        ),
        (
            "chunked wins over Content-Length",
            response(
                "HTTP/1.1 200 OK\nContent-Length: 2\nTransfer-Encoding: chunked\n", b"5\r\nhello\r\n0\r\n\r\n"
            ),
            {},
            (None, 200, None, b"hello"),
        ),
        (
            "identical duplicate Content-Length fields are one",
            response("HTTP/1.1 200 OK\nContent-Length: 5\nX: y\ncontent-length: 5\n", b"hello"),
            {},
            (None, 200, None, b"hello"),
        ),
        (
            "a Content-Length list of one value is that value",
            response("HTTP/1.1 200 OK\nContent-Length: 5, 5\n", b"hello"),
            {},
            (None, 200, None, b"hello"),
        ),
        (
            "different Content-Length fields fail",
            response("HTTP/1.1 200 OK\nContent-Length: 5\nContent-Length: 6\n", b"hello"),
            {},
            ("invalid response: conflicting Content-Length values (5 and 6)", None, None, b""),
        ),
        (
            "RTSP is not HTTP",
            response("RTSP/1.0 200 OK\nContent-Length: 0\n"),
            {},
            ("invalid response: not HTTP (the server sent 'RTSP/1.0 200 OK')", None, None, b""),
        ),
        (
            "an HTTP/2 frame",
            b"\x00\x00\x12\x04\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x64",
            {},
            ("the server answered in HTTP/2 only (it does not speak HTTP/1.1)", None, None, b""),
        ),
        (
            "head cut short",
            b"HTTP/1.1 200 OK\r\nContent-Le",
            {},
            ("invalid response: the connection closed in the middle of the response head", None, None, b""),
        ),
        (
            "not HTTP",
            b"SSH-2.0-OpenSSH_9.2\r\n\r\n",
            {},
            ("invalid response: not HTTP (the server sent 'SSH-2.0-OpenSSH_9.2')", None, None, b""),
        ),
    ],
)
async def test_responses(name: str, data: bytes, kwargs: dict[str, bool], want: tuple[object, ...]) -> None:
    for pieces in splits(data) if data else [[]]:
        got = await run(pieces, **kwargs)  # type: ignore[arg-type]
        error, status, location, body = want
        assert isinstance(error, str | None)
        if error is not None and got.error is not None and error.endswith((": ", "(")):
            assert got.error.startswith(error), (name, got)
        else:
            assert got.error == error, (name, len(pieces), got)
        assert (got.status, got.location, got.body) == (status, location, body), (name, got)
        assert got.transport == ("closed" if error is None else "aborted"), (name, got)


def head_with(lines: list[str]) -> bytes:
    return response("HTTP/1.1 200 OK\n" + "".join(f"{line}\n" for line in lines) + "Content-Length: 0\n")


LIMITS = Limits(max_headers=5, max_head_bytes=400)


@pytest.mark.parametrize(
    ("name", "data", "error"),
    [
        # A line has no limit of its own (a 40 KB cookie is fine in a browser): only the head's.
        ("a long header line within the head's total", head_with(["X: " + "a" * 300]), None),
        ("headers at the count", head_with([f"X-{i}: v" for i in range(4)]), None),
        (
            "headers over the count",
            head_with([f"X-{i}: v" for i in range(5)]),
            "invalid response: more than 5 header fields",
        ),
        ("blank lines before the status line are tolerated", b"\r\n" * 10 + head_with([]), None),
        (
            "a final head over the cap after a 103 in the same read",
            response("HTTP/1.1 103 Early Hints\nLink: </a>\n") + head_with(["X: " + "a" * 400]),
            "invalid response: the response head exceeds 400 bytes",
        ),
        (
            "too many fields in a 1xx head",
            response("HTTP/1.1 103 Early Hints\n" + "".join(f"L{i}: v\n" for i in range(6))) + head_with([]),
            "invalid response: more than 5 header fields",
        ),
    ],
)
async def test_head_limits(name: str, data: bytes, error: str | None) -> None:
    for pieces in splits(data):
        got = await run(pieces, limits=LIMITS)
        assert got.error == error, (name, len(pieces), got)


async def test_head_total_is_capped() -> None:
    many = [f"X-{i}: " + "v" * 50 for i in range(8)]
    limits = Limits(max_headers=100, max_head_bytes=400)
    for pieces in splits(head_with(many)):
        got = await run(pieces, limits=limits)
        assert got.error == "invalid response: the response head exceeds 400 bytes", (len(pieces), got)


async def test_endless_header_is_refused_before_it_is_buffered() -> None:
    exchange = Exchange(asyncio.get_running_loop(), Limits(), max_body=1000)
    exchange.connection_made(FakeTransport())
    exchange.data_received(b"HTTP/1.1 200 OK\r\nX-Endless: ")
    for _ in range(70):
        exchange.data_received(b"a" * 4000)
    assert exchange.done.result() == "invalid response: the response head exceeds 262144 bytes"


async def test_ttfb_is_the_final_heads_first_byte() -> None:
    exchange = Exchange(asyncio.get_running_loop(), Limits(), max_body=1000)
    exchange.connection_made(FakeTransport())
    exchange.data_received(response("HTTP/1.1 103 Early Hints\nLink: </a>\n"))
    early = exchange.first_byte
    exchange.data_received(OK)
    assert exchange.done.result() is None
    assert exchange.first_byte > early


async def test_data_after_the_response_is_ignored() -> None:
    got = await run([OK + b"HTTP/1.1 500 Oops\r\n\r\n"], close=False)
    assert (got.error, got.status, got.body) == (None, 200, b"hello")
