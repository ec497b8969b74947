"""The vetting proxy's pure part (``monitor.net.proxy_wire``): what it reads from Chromium, what
it sends on, and how a refusal reads, as tables."""

from __future__ import annotations

import pytest

from monitor.net.proxy_wire import (
    MAX_HEAD,
    BadRequest,
    ProxyRequest,
    answer,
    close_response,
    forward_head,
    parse_authority,
    parse_head,
    refusal,
)


@pytest.mark.parametrize(
    ("text", "default", "expected"),
    [
        ("example.com:443", None, ("example.com", 443)),
        ("Example.COM.:8443", None, ("example.com", 8443)),
        ("127.0.0.1:80", None, ("127.0.0.1", 80)),
        ("[::1]:443", None, ("::1", 443)),
        ("[2001:db8::1]:8080", None, ("2001:db8::1", 8080)),
        ("example.com", 80, ("example.com", 80)),
        ("[::1]", 80, ("::1", 80)),
        ("xn--bcher-kva.example:443", None, ("xn--bcher-kva.example", 443)),
        ("bücher.example:443", None, ("xn--bcher-kva.example", 443)),
    ],
)
def test_authorities_read(text: str, default: int | None, expected: tuple[str, int]) -> None:
    assert parse_authority(text, default) == expected


@pytest.mark.parametrize(
    ("text", "default", "reason"),
    [
        ("example.com", None, "the target has no port"),
        ("example.com:0", None, "port is not a number from 1 to 65535"),
        ("example.com:65536", None, "port is not a number from 1 to 65535"),
        ("example.com:https", None, "port is not a number from 1 to 65535"),
        ("example.com:", None, "port is not a number from 1 to 65535"),
        ("user@example.com:443", None, "without credentials"),
        ("", None, "the target must be host:port"),
        ("::1:443", None, "IPv6 target must be written in brackets"),
        ("[::1:443", None, "unclosed ["),
        ("[::1]x443", None, "junk after the target's IPv6 address"),
        ("2130706433:80", None, "non-canonical numeric host"),
        ("0x7f.1:80", None, "non-canonical numeric host"),
        ("127.1:80", None, "non-canonical numeric host"),
        ("exa mple.com:80", None, "invalid target host"),
        ("a/b:80", None, "invalid target host"),
    ],
)
def test_authorities_refused(text: str, default: int | None, reason: str) -> None:
    with pytest.raises(BadRequest, match=rf".*{reason.replace('[', '.')}") as caught:
        parse_authority(text, default)
    assert caught.value.status == 400


def head(*lines: str) -> bytes:
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


@pytest.mark.parametrize(
    ("raw", "host", "port", "tunnel", "target", "path"),
    [
        (head("CONNECT example.com:443 HTTP/1.1", "Host: example.com:443"),
         "example.com", 443, True, "example.com:443 (tunnel)", ""),
        (head("CONNECT [::1]:8443 HTTP/1.1"), "::1", 8443, True, "[::1]:8443 (tunnel)", ""),
        (head("GET http://169.254.169.254/latest/meta-data HTTP/1.1", "Host: 169.254.169.254"),
         "169.254.169.254", 80, False, "http://169.254.169.254/latest/meta-data", "/latest/meta-data"),
        (head("GET http://Example.com:8080/a?token=secret HTTP/1.1"),
         "example.com", 8080, False, "http://example.com:8080/a?…", "/a?token=secret"),
        (head("GET http://example.com HTTP/1.1"), "example.com", 80, False, "http://example.com/", "/"),
        (head("GET http://example.com?q=1 HTTP/1.1"),
         "example.com", 80, False, "http://example.com/?…", "/?q=1"),
        (head("GET http://example.com/p#frag HTTP/1.0"),
         "example.com", 80, False, "http://example.com/p", "/p"),
        (head("GET ws://[::1]:9000/socket HTTP/1.1", "Upgrade: websocket", "Connection: Upgrade"),
         "::1", 9000, False, "ws://[::1]:9000/socket", "/socket"),
        (head("POST HTTP://example.com:80/form HTTP/1.1", "Content-Length: 3"),
         "example.com", 80, False, "http://example.com/form", "/form"),
    ],
)  # fmt: skip
def test_requests_read(raw: bytes, host: str, port: int, tunnel: bool, target: str, path: str) -> None:
    request = parse_head(raw)
    assert (request.host, request.port, request.tunnel, request.target, request.path) == (
        host, port, tunnel, target, path,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("raw", "status", "reason"),
    [
        (b"\r\n\r\n", 400, "empty request"),
        (head("GET /path HTTP/1.1", "Host: example.com"), 400, "only CONNECT and absolute"),
        (head("GET https://example.com/ HTTP/1.1"), 400, "only CONNECT and absolute"),
        (head("GET ftp://example.com/ HTTP/1.1"), 400, "only CONNECT and absolute"),
        (head("GET http://example.com/ HTTP/2.0"), 400, "malformed request line"),
        (head("GET  http://example.com/ HTTP/1.1"), 400, "malformed request line"),
        (head("G@T http://example.com/ HTTP/1.1"), 400, "malformed request line"),
        (head("GET http://user:pw@example.com/ HTTP/1.1"), 400, "without credentials"),
        (head("GET http://example.com/ HTTP/1.1", " folded: line"), 400, "malformed header field"),
        (head("GET http://example.com/ HTTP/1.1", "Bad Name: x"), 400, "malformed header field"),
        (head("GET http://example.com/ HTTP/1.1", "Cookie: a\x01b"), 400, "control character in header"),
        (head("CONNECT example.com HTTP/1.1"), 400, "the target has no port"),
        (head("GET http://example.com/" + "a" * MAX_HEAD + " HTTP/1.1"), 431, "request head too large"),
    ],
)
def test_requests_refused(raw: bytes, status: int, reason: str) -> None:
    with pytest.raises(BadRequest) as caught:
        parse_head(raw)
    assert (caught.value.status, reason in caught.value.reason) == (status, True), caught.value.reason


def test_a_refused_header_never_shows_its_value() -> None:
    with pytest.raises(BadRequest) as caught:
        parse_head(head("GET http://example.com/ HTTP/1.1", "Authorization: Bearer s3cret\x7f"))
    assert "s3cret" not in caught.value.reason


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            ["Host: example.com", "Proxy-Connection: keep-alive", "Accept: */*"],
            ["Host: example.com", "Accept: */*", "Connection: close"],
        ),
        (
            ["Host: a", "Connection: keep-alive, X-Hop", "X-Hop: 1", "Keep-Alive: 5", "TE: x", "X-End: 2"],
            ["Host: a", "X-End: 2", "Connection: close"],
        ),
        (
            ["Host: a", "Proxy-Authorization: Basic eA==", "Cookie: c=1"],
            ["Host: a", "Cookie: c=1", "Connection: close"],
        ),
        (
            ["Host: a", "Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: k"],
            ["Host: a", "Upgrade: websocket", "Sec-WebSocket-Key: k", "Connection: Upgrade"],
        ),
    ],
)
def test_forwarded_heads(fields: list[str], expected: list[str]) -> None:
    request = parse_head(head("GET http://a/p?q HTTP/1.1", *fields))
    assert forward_head(request) == head("GET /p?q HTTP/1.1", *expected)


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        (head("HTTP/1.1 200 OK", "Content-Length: 2", "Connection: keep-alive", "Keep-Alive: timeout=5"),
         head("HTTP/1.1 200 OK", "Content-Length: 2", "Connection: close")),
        (head("HTTP/1.1 302 Found", "Location: /x"),
         head("HTTP/1.1 302 Found", "Location: /x", "Connection: close")),
        (head("HTTP/1.1 101 Switching Protocols", "Upgrade: websocket", "Connection: Upgrade"),
         head("HTTP/1.1 101 Switching Protocols", "Upgrade: websocket", "Connection: Upgrade")),
        (head("HTTP/1.1 100 Continue"), head("HTTP/1.1 100 Continue")),
        (head("garbage"), head("garbage")),
    ],
)  # fmt: skip
def test_responses_close(response: bytes, expected: bytes) -> None:
    assert close_response(response) == expected


def _request(target: str) -> ProxyRequest:
    return ProxyRequest("GET", "h", 80, False, target, "/", "HTTP/1.1", ())


@pytest.mark.parametrize(
    ("message", "target", "expected"),
    [
        (
            "blocked: 169.254.169.254 (link-local 169.254.0.0/16)",
            "http://169.254.169.254/latest/meta-data",
            "blocked: 169.254.169.254 (link-local 169.254.0.0/16) for http://169.254.169.254/latest/meta-data",
        ),
        (
            "blocked: rebind.test resolves to 127.0.0.2 (loopback 127.0.0.0/8)",
            "rebind.test:443 (tunnel)",
            "blocked: rebind.test resolves to 127.0.0.2 (loopback 127.0.0.0/8) for rebind.test:443 (tunnel)",
        ),
    ],
)
def test_refusals_read(message: str, target: str, expected: str) -> None:
    assert refusal(message, _request(target)) == expected


def test_a_long_url_is_cut_in_a_refusal() -> None:
    request = parse_head(head(f"GET http://example.com/{'a' * 500} HTTP/1.1"))
    assert len(request.target) == 200 and request.target.endswith("…")


@pytest.mark.parametrize(
    ("status", "reason", "first_line"),
    [
        (403, "blocked: 10.0.0.5 (private-use 10.0.0.0/8)", b"HTTP/1.1 403 Forbidden"),
        (502, "cannot resolve x.test: no such domain", b"HTTP/1.1 502 Bad Gateway"),
        (431, "request head too large", b"HTTP/1.1 431 Request Header Fields Too Large"),
        (599, "odd\r\nInjected: 1", b"HTTP/1.1 599 Error"),
    ],
)
def test_answers(status: int, reason: str, first_line: bytes) -> None:
    data = answer(status, reason)
    head_part, _, body = data.partition(b"\r\n\r\n")
    assert head_part.split(b"\r\n")[0] == first_line
    assert b"Connection: close" in head_part and b"Injected" not in head_part
    assert f"Content-Length: {len(body)}".encode() in head_part
