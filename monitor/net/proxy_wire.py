"""What the browser's vetting proxy reads and writes, as pure functions of bytes and text.

Chromium talks to an HTTP proxy in two forms only: ``CONNECT host:port`` for anything it
tunnels (https, wss, ws) and an absolute URI (``GET http://host:port/path HTTP/1.1``) for
plain http. ``parse_head`` reads either into a ``ProxyRequest`` (host normalised as checks dial
it, so the resolver judges the name the connection would use) and refuses every other form
with a ``BadRequest`` that carries its status. ``forward_head`` is the request as the origin
gets it, ``close_response`` the origin's answer as Chromium gets it (one request per upstream
connection: a connection reused for the next request would send it to the first one's
address), ``refusal`` the line a person reads in the run's cause.

No header value is ever put in an error or a refusal (a Cookie or an Authorization may be a
secret); a refused URL is shown without its query, which may carry a token.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .policy import InvalidTarget, literal_address, normal_host

__all__ = [
    "MAX_HEAD",
    "BadRequest",
    "ProxyRequest",
    "answer",
    "close_response",
    "forward_head",
    "parse_authority",
    "parse_head",
    "refusal",
]

# A request head larger than this is refused (431): Chromium's own heads are a few KiB, and
# the proxy must not buffer what a page makes it send.
MAX_HEAD = 32 * 1024
MAX_URL_IN_REFUSAL = 200
_SCHEME_PORTS = {"http": 80, "ws": 80}
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_VERSION = re.compile(r"HTTP/1\.[01]")
_BAD_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
# Hop-by-hop fields (RFC 9110 7.6.1) and the proxy's own: never passed on to the origin.
_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "te", "trailer", "upgrade"}
)
_CONNECTION_FIELDS = frozenset({"connection", "keep-alive", "proxy-connection"})
_REASONS = {
    400: "Bad Request",
    403: "Forbidden",
    431: "Request Header Fields Too Large",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


class BadRequest(ValueError):
    """The request cannot be proxied; ``status`` is the answer's status code."""

    def __init__(self, reason: str, status: int = 400) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status


@dataclass(frozen=True, slots=True)
class ProxyRequest:
    method: str
    host: str  # as checks dial it: IDNA, lower case, no brackets, no trailing dot
    port: int
    tunnel: bool  # CONNECT: the proxy answers 200 and then carries bytes both ways
    target: str  # what a refusal names: the URL without its query, or "host:port (tunnel)"
    path: str  # the origin-form target of a forwarded request; "" for a tunnel
    version: str
    headers: tuple[tuple[str, str], ...]

    @property
    def upgrade(self) -> bool:
        """A WebSocket (or other) upgrade sent as plain http: the connection stays open after."""
        return any(name.lower() == "upgrade" for name, _ in self.headers)


def parse_authority(text: str, default_port: int | None = None) -> tuple[str, int]:
    """``host:port``, ``[v6]:port`` or (with a default port) ``host`` into (host, port).
    BadRequest for anything else, a non-canonical numeric host included."""
    if not text or "@" in text:
        raise BadRequest("the target must be host:port, without credentials")
    if text.startswith("["):
        inside, sep, rest = text[1:].partition("]")
        if not sep:
            raise BadRequest("unclosed [ in the target's host")
        host, port_text = f"[{inside}]", rest[1:] if rest.startswith(":") else None
        if rest and port_text is None:
            raise BadRequest("junk after the target's IPv6 address")
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
    elif ":" in text:
        raise BadRequest("an IPv6 target must be written in brackets")
    else:
        host, port_text = text, None
    if port_text is None:
        if default_port is None:
            raise BadRequest("the target has no port")
        port = default_port
    elif port_text.isascii() and port_text.isdigit() and 0 < int(port_text) < 65536:
        port = int(port_text)
    else:
        raise BadRequest("the target's port is not a number from 1 to 65535")
    try:
        literal_address(host)  # a non-canonical numeric host must never reach a resolver
        name = normal_host(host)
    except (InvalidTarget, ValueError) as exc:
        raise BadRequest(f"invalid target host: {exc}") from None
    return name, port


def parse_head(head: bytes) -> ProxyRequest:
    """A request head (request line and fields, ending in an empty line) as the proxy reads it."""
    if len(head) > MAX_HEAD:
        raise BadRequest("request head too large", 431)
    try:
        text = head.decode("latin-1")
    except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes every byte
        raise BadRequest("undecodable request head") from None
    lines = text.split("\r\n")
    while lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise BadRequest("empty request")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not _TOKEN.fullmatch(parts[0]) or not _VERSION.fullmatch(parts[2]):
        raise BadRequest("malformed request line")
    method, target, version = parts
    headers = tuple(_field(line) for line in lines[1:])
    if method == "CONNECT":
        host, port = parse_authority(target)
        return ProxyRequest(method, host, port, True, f"{_show(host)}:{port} (tunnel)", "", version, headers)
    scheme, sep, rest = target.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in _SCHEME_PORTS:
        raise BadRequest("only CONNECT and absolute http:// or ws:// requests are proxied")
    cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, path = rest[:cut], rest[cut:].split("#", 1)[0]
    if not path.startswith("/"):
        path = "/" + path
    host, port = parse_authority(authority, _SCHEME_PORTS[scheme])
    default = port == _SCHEME_PORTS[scheme]
    shown = f"{scheme}://{_show(host)}{'' if default else f':{port}'}{_without_query(path)}"
    return ProxyRequest(method, host, port, False, _cut(shown), path, version, headers)


def _field(line: str) -> tuple[str, str]:
    name, sep, value = line.partition(":")
    if not sep or not _TOKEN.fullmatch(name):
        # Obsolete line folding and names with spaces are how request smuggling starts.
        raise BadRequest("malformed header field")
    value = value.strip(" \t")
    if _BAD_VALUE.search(value):
        raise BadRequest(f"control character in header {name[:40]!r}")  # the name only, never the value
    return name, value


def _show(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _without_query(path: str) -> str:
    base, sep, _query = path.partition("?")
    return f"{base}?…" if sep else base


def _cut(text: str) -> str:
    return text if len(text) <= MAX_URL_IN_REFUSAL else text[: MAX_URL_IN_REFUSAL - 1] + "…"


def forward_head(request: ProxyRequest) -> bytes:
    """The request as the origin gets it: origin-form, hop-by-hop fields dropped (those the
    Connection field names too), ``Connection: close`` (one request per upstream connection),
    or ``Connection: Upgrade`` and the Upgrade field kept for a WebSocket handshake."""
    named = {
        token.strip().lower()
        for name, value in request.headers
        if name.lower() == "connection"
        for token in value.split(",")
    }
    drop = _HOP_BY_HOP | (named - {"upgrade"} if request.upgrade else named)
    lines = [f"{request.method} {request.path} {request.version}"]
    for name, value in request.headers:
        key = name.lower()
        if key == "upgrade" and request.upgrade:
            lines.append(f"{name}: {value}")
        elif key not in drop:
            lines.append(f"{name}: {value}")
    lines.append("Connection: Upgrade" if request.upgrade else "Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def close_response(head: bytes) -> bytes:
    """The origin's response head as Chromium gets it: ``Connection: close`` in place of its
    own connection fields, so Chromium never sends a second request on this connection. A
    101 (the WebSocket handshake) and a 1xx interim answer pass unchanged."""
    text = head.decode("latin-1")
    status_line, _, rest = text.partition("\r\n")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[1].isdigit() or parts[1].startswith("1"):
        return head
    kept = [
        line
        for line in rest.split("\r\n")
        if line and line.partition(":")[0].strip().lower() not in _CONNECTION_FIELDS
    ]
    return "\r\n".join([status_line, *kept, "Connection: close", "", ""]).encode("latin-1")


def refusal(message: str, request: ProxyRequest) -> str:
    """A refused connection as the run's cause lists it: the guard's reason (``blocked:
    169.254.169.254 (link-local 169.254.0.0/16)``) and what the page asked for."""
    return f"{message} for {request.target}"


def answer(status: int, reason: str) -> bytes:
    """A short plain-text answer that closes the connection (the reason is ours, never a
    header the page sent)."""
    body = (reason.replace("\r", " ").replace("\n", " ") + "\n").encode("utf-8", "replace")
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode("latin-1") + body
