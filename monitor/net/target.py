"""A check target parsed once: the validated URL, what follows from its text alone, the request.

A monitor fetches the same URL every interval. Validating it (``parse_target_url``), judging an
IP literal and formatting the request are pure functions of that text (and of the immutable
``AddressPolicy``), so ``HttpSession`` keeps them per URL string instead of redoing them each
check; on a scheduler that wakes for one check at a time, that work runs with cold caches and
cost more than the HTTP exchange itself. Nothing about a *name* is kept: names are resolved
and judged afresh on every hop.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from yarl import URL

from monitor import __version__

from .policy import AddressPolicy, BlockedTarget, IPAddress, literal_address, parse_target_url

# Framing is ours: one request (and its body, if any) on a connection closed after the response.
FRAMING_HEADERS = frozenset(
    {"connection", "content-length", "transfer-encoding", "keep-alive", "upgrade", "te", "expect"}
)
# Methods that carry no body; the others get "Content-Length: 0", as aiohttp sent, so servers
# that insist on a length (411) still answer.
_BODYLESS_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE", "DELETE"})
TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_BAD_VALUE = re.compile(r"[\r\n\x00]")
# No Accept-Encoding: a check never needs the body beyond the cap, and servers then send it
# unencoded. A server that compresses anyway is decoded within the cap (http1.Inflater).
_ACCEPT = "Accept: */*\r\n"
_AGENT = f"monitor/{__version__}"
_USER_AGENT = f"User-Agent: {_AGENT}\r\n"


class InvalidRequest(ValueError):
    """A header or method the caller gave cannot be sent as HTTP/1.1."""


class Target:
    """One validated URL (``parse``) and the facts derived from it. Immutable once built,
    apart from the memo of the last policy's verdict on an IP literal."""

    # The yarl URL itself is not kept: its caches make it most of an entry's size, and only a
    # redirect needs it again (``url``).
    __slots__ = (
        "_get",
        "_verdict",
        "authority",
        "h2_only",
        "host",
        "literal",
        "path",
        "port",
        "scheme",
        "text",
        "tls",
    )

    def __init__(self, url: URL) -> None:
        self.text = str(url)
        self.scheme = url.scheme
        self.host = url.raw_host or ""  # IDNA, lower case, no brackets, no trailing dot
        self.tls = self.scheme == "https"
        self.port = url.port or (443 if self.tls else 80)
        authority = f"[{self.host}]" if ":" in self.host else self.host
        self.authority = authority if url.is_default_port() else f"{authority}:{self.port}"  # Host
        self.path = url.raw_path_qs
        # InvalidTarget cannot happen here: parse_target_url has accepted this host already.
        self.literal: IPAddress | None = literal_address(self.host)
        self._get: bytes | None = None
        # (policy, address to dial, or the reason it is blocked)
        self._verdict: tuple[AddressPolicy, str | None, str] | None = None
        # The last check found the server HTTP/2-only (ALPN h2): the next one asks for h2 at
        # once instead of being refused HTTP/1.1 first (client.py).
        self.h2_only = False

    @classmethod
    def parse(cls, text: str) -> Target:
        """Raises InvalidTarget with a reason a user can act on."""
        return cls(parse_target_url(text))

    @property
    def url(self) -> URL:
        return URL(self.text, encoded=True)

    @property
    def origin(self) -> tuple[str, str, int]:
        return (self.scheme, self.host, self.port)

    def dial_literal(self, policy: AddressPolicy) -> str:
        """The address to dial for an IP literal, or BlockedTarget. An IPv4-mapped literal
        dials its IPv4 address. The verdict is a pure function of the address and the policy
        (whose allow-list is fixed at construction), so it is kept for the next check."""
        verdict = self._verdict
        if verdict is None or verdict[0] is not policy:
            assert self.literal is not None
            try:
                verdict = (policy, str(policy.check(self.literal)), "")
            except BlockedTarget as exc:
                verdict = (policy, None, exc.reason)
            self._verdict = verdict
        if verdict[1] is None:
            raise BlockedTarget(verdict[2])  # a new one each time: a re-raised one grows its traceback
        return verdict[1]

    def request(self, method: str, headers: dict[str, str], body: bytes | None = None) -> bytes:
        """The request. A plain GET, every status check's case, is formatted once."""
        if method == "GET" and not headers and body is None:
            if self._get is None:
                self._get = build_request("GET", self.path, self.authority, {})
            return self._get
        return build_request(method, self.path, self.authority, headers, body)

    def h2_fields(
        self, method: str, headers: dict[str, str], body: bytes | None = None
    ) -> list[tuple[str, str]]:
        """The same request as HTTP/2 header fields (``http2.H2Exchange``)."""
        return h2_fields(method, self.path, self.authority, headers, body)


def _given(headers: dict[str, str]) -> Iterator[tuple[str, str, str]]:
    """The caller's fields that are not framing, as (name, lower-case name, value); raises
    InvalidRequest for one that cannot be sent."""
    for name, value in headers.items():
        key = name.lower()
        if key in FRAMING_HEADERS:
            continue
        if not TOKEN.fullmatch(name) or _BAD_VALUE.search(value):
            raise InvalidRequest(f"invalid header {name[:40]!r}")  # never the value: it may be a secret
        yield name, key, value


def build_request(
    method: str, path: str, authority: str, headers: dict[str, str], body: bytes | None = None
) -> bytes:
    """Request line, headers and body; Host carries the name (and a port that is not the
    default). Caller headers replace Host, Accept and User-Agent; framing headers are ours."""
    given = ""
    names: set[str] = set()
    for name, key, value in _given(headers):
        names.add(key)
        given += f"{name}: {value}\r\n"
    head = f"{method} {path} HTTP/1.1\r\n"
    if "host" not in names:
        head += f"Host: {authority}\r\n"
    if "accept" not in names:
        given += _ACCEPT
    if "user-agent" not in names:
        given += _USER_AGENT
    if body is not None:
        given += f"Content-Length: {len(body)}\r\n"
    elif method not in _BODYLESS_METHODS:
        given += "Content-Length: 0\r\n"
    request = f"{head}{given}Connection: close\r\n\r\n".encode()
    return request + body if body else request


def h2_fields(
    method: str, path: str, authority: str, headers: dict[str, str], body: bytes | None = None
) -> list[tuple[str, str]]:
    """``build_request``'s request as HTTP/2 fields: the pseudo-headers first, a caller's Host
    as ``:authority``, lower-case names (HTTP/2 allows no other), the same defaults."""
    fields: list[tuple[str, str]] = []
    for _name, key, value in _given(headers):
        if key == "host":
            authority = value
        else:
            fields.append((key, value.strip()))
    names = {key for key, _ in fields}
    if "accept" not in names:
        fields.append(("accept", "*/*"))
    if "user-agent" not in names:
        fields.append(("user-agent", _AGENT))
    if body is not None:
        fields.append(("content-length", str(len(body))))
    elif method not in _BODYLESS_METHODS:
        fields.append(("content-length", "0"))
    return [(":method", method), (":scheme", "https"), (":authority", authority), (":path", path), *fields]
