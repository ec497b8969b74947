"""The HTTP client every check uses: one shared session, vetted resolution, capped reads.

``fetch`` turns everything the target can do wrong into a ``FetchResult`` with an ``error``
string, so a hostile or broken target can fail a check but never crash the caller.
"""

from __future__ import annotations

import asyncio
import ssl
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import aiohttp
from aiohttp import hdrs
from yarl import URL

from .policy import AddressPolicy, BlockedTarget, InvalidTarget, literal_address, parse_target_url
from .resolver import ResolutionError, VettedResolver

_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
# Credentials are meant for the origin the user configured, never for whoever it redirects to.
_ORIGIN_BOUND_HEADERS = frozenset({"authorization", "cookie", "proxy-authorization", "host"})
_CHUNK = 64 * 1024
# Bodies are decoded here, not by aiohttp: it inflates each network read up to 32 MiB before
# any cap of ours applies, so one gzip bomb costs over 100 MiB per check. We advertise only
# what _Inflater decodes.
_ACCEPT_ENCODING = "gzip, deflate"
_TIMING_KEYS = ("dns_ms", "connect_ms", "tls_ms", "ttfb_ms", "total_ms")


@dataclass
class FetchResult:
    """What one fetch saw.

    ``ok_transport`` is True only when a complete response (status, headers and a body within
    the cap) arrived; ``error`` is then None. ``status`` can be set with an error too (body over
    the cap). ``body`` holds at most ``max_body_bytes``; ``peer`` is the IP actually dialled.
    """

    status: int | None
    ok_transport: bool
    error: str | None
    location: str | None
    final_url: str
    elapsed_ms: float
    timings: dict[str, float | None]
    blocked: bool
    body: bytes = b""
    peer: str | None = None


def _empty_timings() -> dict[str, float | None]:
    return dict.fromkeys(_TIMING_KEYS)


# Trace callbacks write into the per-request dict passed as trace_request_ctx, so concurrent
# fetches on the shared session never see each other's timings.
def _clock(ctx: SimpleNamespace) -> dict[str, Any] | None:
    marks = ctx.trace_request_ctx
    return marks if isinstance(marks, dict) else None


async def _on_request_start(_s: aiohttp.ClientSession, ctx: SimpleNamespace, _p: object) -> None:
    if (marks := _clock(ctx)) is not None:
        marks["_start"] = time.perf_counter()


async def _on_dns_start(_s: aiohttp.ClientSession, ctx: SimpleNamespace, _p: object) -> None:
    if (marks := _clock(ctx)) is not None:
        marks["_dns"] = time.perf_counter()


async def _on_dns_end(_s: aiohttp.ClientSession, ctx: SimpleNamespace, _p: object) -> None:
    if (marks := _clock(ctx)) is not None and "_dns" in marks:
        marks["dns_ms"] = (time.perf_counter() - marks["_dns"]) * 1000


async def _on_conn_start(_s: aiohttp.ClientSession, ctx: SimpleNamespace, _p: object) -> None:
    if (marks := _clock(ctx)) is not None:
        marks["_conn"] = time.perf_counter()


async def _on_conn_end(_s: aiohttp.ClientSession, ctx: SimpleNamespace, _p: object) -> None:
    # aiohttp reports connection creation as one span: DNS, TCP and TLS together. Subtract the
    # DNS part; TLS cannot be separated without private connector hooks, so tls_ms stays None.
    if (marks := _clock(ctx)) is not None and "_conn" in marks:
        span = (time.perf_counter() - marks["_conn"]) * 1000
        marks["connect_ms"] = max(span - (marks.get("dns_ms") or 0.0), 0.0)


async def _on_request_end(_s: aiohttp.ClientSession, ctx: SimpleNamespace, _p: object) -> None:
    # request_end fires once the status line and headers are parsed: time to first byte, near enough.
    if (marks := _clock(ctx)) is not None and "_start" in marks:
        marks["ttfb_ms"] = (time.perf_counter() - marks["_start"]) * 1000


class _PeerResponse(aiohttp.ClientResponse):
    """Records the address the socket is connected to; a short body releases the connection
    before the caller could ask, so it is captured when the response starts."""

    peer: str | None = None

    async def start(self, connection: aiohttp.connector.Connection) -> aiohttp.ClientResponse:
        transport = connection.transport
        peername = transport.get_extra_info("peername") if transport is not None else None
        self.peer = str(peername[0]) if peername else None
        return await super().start(connection)


def _trace_config() -> aiohttp.TraceConfig:
    trace = aiohttp.TraceConfig()
    trace.on_request_start.append(_on_request_start)
    trace.on_dns_resolvehost_start.append(_on_dns_start)
    trace.on_dns_resolvehost_end.append(_on_dns_end)
    trace.on_connection_create_start.append(_on_conn_start)
    trace.on_connection_create_end.append(_on_conn_end)
    trace.on_request_end.append(_on_request_end)
    return trace


def make_session(
    resolver: VettedResolver,
    *,
    limit: int = 100,
    max_line_size: int = 8190,
    max_field_size: int = 8190,
    ssl_context: ssl.SSLContext | None = None,
) -> aiohttp.ClientSession:
    """The one HTTP session of a process. Call inside the running loop; close it on shutdown.

    ``ssl_context`` defaults to the system trust store with host name checks; pass one only to
    trust another CA (tests, a private CA). Closing the session does not close ``resolver``:
    its owner does that.
    """
    connector = aiohttp.TCPConnector(
        resolver=resolver,
        use_dns_cache=False,  # a cached answer is an unjudged answer once the TTL games start
        force_close=True,  # every check measures a fresh connection, and no pooled socket outlives a verdict
        limit=limit,
        # One context for all checks: building one per request costs milliseconds of CPU each.
        ssl=ssl_context if ssl_context is not None else ssl.create_default_context(),
    )
    return aiohttp.ClientSession(
        connector=connector,
        trust_env=False,  # a proxy would resolve and dial names itself, past the guard
        cookie_jar=aiohttp.DummyCookieJar(),
        trace_configs=[_trace_config()],
        response_class=_PeerResponse,
        max_line_size=max_line_size,
        max_field_size=max_field_size,
        auto_decompress=False,  # _read_capped decodes, within the cap
    )


@dataclass
class _Progress:
    """What is known so far, so a timeout mid-way still reports the hop it stopped on."""

    url: str
    status: int | None = None
    location: str | None = None
    peer: str | None = None
    timings: dict[str, float | None] = field(default_factory=_empty_timings)


async def fetch(
    session: aiohttp.ClientSession,
    policy: AddressPolicy,
    url: str,
    *,
    method: str = "GET",
    timeout: float,  # noqa: ASYNC109 - the check's own budget, applied with asyncio.timeout below
    follow_redirects: bool = False,
    max_redirects: int = 5,
    headers: Mapping[str, str] | None = None,
    max_body_bytes: int = 1_048_576,
) -> FetchResult:
    """Fetch ``url`` once (or along its redirects) and report what happened; never raises for
    anything the target does. ``timeout`` bounds the whole fetch, redirects and body included.

    A body larger than ``max_body_bytes`` fails the check ("response body exceeds N bytes"); the
    status is still reported.
    """
    started = time.perf_counter()
    progress = _Progress(url=url)

    def result(error: str | None, *, blocked: bool = False, body: bytes = b"") -> FetchResult:
        elapsed = (time.perf_counter() - started) * 1000
        return FetchResult(
            status=progress.status,
            ok_transport=error is None,
            error=None if error is None else _clip(error),
            location=progress.location,
            final_url=progress.url,
            elapsed_ms=elapsed,
            timings=progress.timings,
            blocked=blocked,
            body=body,
            peer=progress.peer,
        )

    try:
        target = parse_target_url(url)
    except InvalidTarget as exc:
        return result(f"invalid target: {exc}")
    progress.url = str(target)
    try:
        async with asyncio.timeout(timeout):
            body = await _follow(
                session,
                policy,
                target,
                progress,
                method=method.upper(),
                follow_redirects=follow_redirects,
                max_redirects=max_redirects,
                headers=_with_accept_encoding(headers),
                max_body_bytes=max_body_bytes,
                request_timeout=timeout,
            )
    except _Failed as exc:
        return result(exc.message, blocked=exc.blocked)
    except TimeoutError:
        return result(f"timed out after {timeout:g}s")
    return result(None, body=body)


def _clip(text: str, limit: int = 300) -> str:
    # Errors quote target-controlled bytes (header values, Location); they end up in the database
    # and in alert messages, so keep them short and printable.
    clean = "".join(ch if ch.isprintable() else "?" for ch in text)
    return clean if len(clean) <= limit else clean[: limit - 3] + "..."


class _Failed(Exception):
    def __init__(self, message: str, *, blocked: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.blocked = blocked


async def _follow(
    session: aiohttp.ClientSession,
    policy: AddressPolicy,
    target: URL,
    progress: _Progress,
    *,
    method: str,
    follow_redirects: bool,
    max_redirects: int,
    headers: dict[str, str],
    max_body_bytes: int,
    request_timeout: float,
) -> bytes:
    for _hop in range(max_redirects + 1):
        progress.url = str(target)
        progress.status = progress.location = progress.peer = None
        progress.timings = _empty_timings()
        _judge_literal(policy, target)
        marks: dict[str, Any] = {}
        started = time.perf_counter()
        try:
            async with session.request(
                method,
                target,
                headers=headers,
                allow_redirects=False,  # we loop ourselves so every hop is judged
                timeout=aiohttp.ClientTimeout(total=request_timeout),
                trace_request_ctx=marks,
            ) as resp:
                _copy_timings(marks, progress)
                progress.status = resp.status
                progress.location = resp.headers.get(hdrs.LOCATION)
                progress.peer = _peer(resp)
                if not (follow_redirects and resp.status in _REDIRECT_STATUSES and progress.location):
                    body = await _read_capped(resp, max_body_bytes)
                    progress.timings["total_ms"] = (time.perf_counter() - marks.get("_start", started)) * 1000
                    return body
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            _copy_timings(marks, progress)
            raise _translate(exc, target) from exc
        next_target = _next_hop(target, progress.location or "")
        if _origin(next_target) != _origin(target):
            headers = {k: v for k, v in headers.items() if k.lower() not in _ORIGIN_BOUND_HEADERS}
        if progress.status == 303 or (progress.status in (301, 302) and method == "POST"):
            method = "GET" if method != "HEAD" else method
        target = next_target
    raise _Failed(f"too many redirects (more than {max_redirects})")


def _judge_literal(policy: AddressPolicy, target: URL) -> None:
    # aiohttp never sends an IP literal through the resolver, so literals are judged here.
    try:
        literal = literal_address(target.raw_host or "")
    except InvalidTarget as exc:
        raise _Failed(f"invalid target: {exc}") from exc
    if literal is not None:
        try:
            policy.check(literal)
        except BlockedTarget as exc:
            raise _Failed(f"blocked: {exc.reason}", blocked=True) from exc


def _next_hop(current: URL, location: str) -> URL:
    try:
        joined = current.join(URL(location))
        return parse_target_url(str(joined))
    except (InvalidTarget, ValueError) as exc:
        raise _Failed(f"redirect to invalid target {location!r}: {exc}") from exc


def _origin(url: URL) -> tuple[str, str | None, int | None]:
    return (url.scheme, url.raw_host, url.port)


def _with_accept_encoding(headers: Mapping[str, str] | None) -> dict[str, str]:
    merged = dict(headers or {})
    if not any(key.lower() == "accept-encoding" for key in merged):
        merged["Accept-Encoding"] = _ACCEPT_ENCODING
    return merged


class _Inflater:
    """Incremental gzip/deflate decoding that never produces more than it is asked for."""

    def __init__(self, encoding: str) -> None:
        self._encoding = encoding
        self._zlib: Any = None

    @classmethod
    def for_response(cls, resp: aiohttp.ClientResponse) -> _Inflater | None:
        encoding = resp.headers.get(hdrs.CONTENT_ENCODING, "").strip().lower()
        if encoding in ("", "identity"):
            return None
        if encoding in ("gzip", "x-gzip", "deflate"):
            return cls(encoding)
        raise _Failed(f"invalid response body: unsupported Content-Encoding {encoding!r}")

    def decode(self, data: bytes, limit: int) -> bytes:
        """At most ``limit`` (>= 1) decoded bytes of ``data``; reaching it means "more than
        the caller can take", so the input left over does not matter."""
        if self._zlib is None:
            if self._encoding == "deflate":
                # RFC 9110 deflate is zlib-wrapped; some servers send raw deflate (as aiohttp accepts).
                wbits = zlib.MAX_WBITS if data[0] & 0x0F == 8 else -zlib.MAX_WBITS
            else:
                wbits = 16 + zlib.MAX_WBITS
            self._zlib = zlib.decompressobj(wbits)
        try:
            return bytes(self._zlib.decompress(data, limit))
        except zlib.error as exc:
            raise _Failed(f"invalid response body: cannot decode {self._encoding}: {exc}") from exc

    def flush(self) -> bytes:
        return bytes(self._zlib.flush()) if self._zlib is not None else b""


async def _read_capped(resp: aiohttp.ClientResponse, cap: int) -> bytes:
    # Decided by the declared length first, so a 1 GB response is refused without reading it;
    # otherwise read in chunks: aiohttp's stream pauses the socket when its buffer fills, so
    # memory stays near cap + one chunk whatever the target sends. Decoding is bounded the
    # same way: never more decoded bytes than the room left under the cap, plus one.
    if resp.content_length is not None and resp.content_length > cap:
        raise _Failed(f"response body exceeds {cap} bytes")
    inflater = _Inflater.for_response(resp)
    buf = bytearray()
    async for chunk in resp.content.iter_chunked(_CHUNK):
        data = chunk if inflater is None else inflater.decode(chunk, cap - len(buf) + 1)
        if len(buf) + len(data) > cap:
            raise _Failed(f"response body exceeds {cap} bytes")
        buf += data
    if inflater is not None:
        buf += inflater.flush()
        if len(buf) > cap:
            raise _Failed(f"response body exceeds {cap} bytes")
    return bytes(buf)


def _peer(resp: aiohttp.ClientResponse) -> str | None:
    return resp.peer if isinstance(resp, _PeerResponse) else None


def _copy_timings(marks: dict[str, Any], progress: _Progress) -> None:
    for key in _TIMING_KEYS:
        if key in marks:
            progress.timings[key] = marks[key]


def _blocked_cause(exc: BaseException) -> BlockedTarget | None:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, BlockedTarget):
            return current
        if isinstance(current, aiohttp.ClientConnectorError) and isinstance(current.os_error, BlockedTarget):
            return current.os_error
        current = current.__cause__ or current.__context__
    return None


def _translate(exc: BaseException, target: URL) -> _Failed:
    if isinstance(exc, _Failed):
        return exc
    blocked = _blocked_cause(exc)
    if blocked is not None:
        if blocked.host is not None:
            return _Failed(f"blocked: {blocked.host} {blocked.reason}", blocked=True)
        return _Failed(f"blocked: {blocked.reason}", blocked=True)
    if isinstance(exc, TimeoutError):
        raise exc  # reported by fetch() with the configured timeout
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return _Failed(f"TLS certificate error: {exc.certificate_error}")
    if isinstance(exc, aiohttp.ClientSSLError):
        return _Failed(f"TLS error: {exc}")
    if isinstance(exc, aiohttp.ClientConnectorError):
        if isinstance(exc.os_error, ResolutionError):
            return _Failed(str(exc.os_error))
        return _Failed(f"connection failed: {exc.os_error or exc}")
    if isinstance(exc, aiohttp.ClientResponseError):
        return _Failed(f"invalid response: {exc.message}")
    if isinstance(exc, aiohttp.ClientPayloadError):
        return _Failed(f"invalid response body: {exc}")
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return _Failed("server closed the connection without a response")
    if isinstance(exc, aiohttp.ClientError):
        return _Failed(f"{type(exc).__name__}: {exc}")
    if isinstance(exc, OSError):
        return _Failed(f"connection failed: {exc}")
    return _Failed(f"invalid request to {target}: {exc}")
