"""The HTTP client every check uses: vetted resolution, exactly the vetted address dialled, capped reads.

``fetch`` turns everything the target can do wrong into a ``FetchResult`` with an ``error``
string, so a hostile or broken target can fail a check but never crash the caller.

It speaks HTTP/1.1 itself (``http1.Exchange``, over httptools' C parser) rather than through
aiohttp: a check is one request on a fresh connection, and aiohttp's pool, streams, tracing and
header objects cost twice the socket work itself, which alone broke the scheduler's CPU budget
(issue 4). Each hop resolves once (names through ``VettedResolver.vet``, literals judged by the
policy), then dials exactly a vetted address; TLS is started on that socket with the URL's name
for SNI and the certificate check.

Timings, in ms from the start of each hop (``time.perf_counter`` marks): ``dns_ms`` (names
only), ``connect_ms`` (TCP), ``tls_ms`` (the handshake, https only), ``ttfb_ms`` (first response
byte), ``total_ms`` (response complete).
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass

from yarl import URL

from monitor.aio import Deadline

from .http1 import REDIRECT_STATUSES, Exchange
from .policy import AddressPolicy, BlockedTarget, InvalidTarget
from .resolver import ResolutionError, VettedResolver
from .session import HttpSession, make_session
from .target import TOKEN, InvalidRequest, Target

__all__ = ["FetchResult", "HttpSession", "fetch", "make_session"]

# Credentials are meant for the origin the user configured, never for whoever it redirects to.
_ORIGIN_BOUND_HEADERS = frozenset({"authorization", "cookie", "proxy-authorization", "host"})
_TIMING_KEYS = ("dns_ms", "connect_ms", "tls_ms", "ttfb_ms", "total_ms")


@dataclass(slots=True)
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


class _Failed(Exception):
    def __init__(self, message: str, *, blocked: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.blocked = blocked


async def fetch(
    session: HttpSession,
    policy: AddressPolicy,
    url: str,
    *,
    method: str = "GET",
    timeout: float,  # noqa: ASYNC109 - the check's own budget, applied by Deadline below
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
    if session.closed:
        raise RuntimeError("fetch on a closed session")
    started = time.perf_counter()
    # Filled in as the fetch goes, so a failure or timeout mid-way reports the hop it stopped on.
    got = FetchResult(None, False, None, None, url, 0.0, dict.fromkeys(_TIMING_KEYS), False)
    error: str | None = None
    try:
        target = session.target(url)
    except InvalidTarget as exc:
        error = f"invalid target: {exc}"
    else:
        got.final_url = target.text
        loop = asyncio.get_running_loop()
        deadline = Deadline(loop, timeout)
        try:
            if not session.slots.try_acquire():
                await session.slots.acquire()
            try:
                got.body = await _follow(
                    loop,
                    session,
                    policy,
                    target,
                    got,
                    method=method.upper(),
                    follow_redirects=follow_redirects,
                    max_redirects=max_redirects,
                    headers=dict(headers) if headers else {},
                    max_body_bytes=max_body_bytes,
                )
            finally:
                session.slots.release()
        except _Failed as exc:
            error, got.blocked = exc.message, exc.blocked
        except asyncio.CancelledError:
            if not deadline.caused():
                raise
            error = f"timed out after {timeout:g}s"
        finally:
            deadline.cancel()
    if error is not None:
        got.error = _clip(error)
    else:
        got.ok_transport = True
    got.elapsed_ms = (time.perf_counter() - started) * 1000
    return got


def _clip(text: str, limit: int = 300) -> str:
    # Errors quote target-controlled bytes (Location, parser messages); they end up in the
    # database and in alert messages, so keep them short and printable.
    clean = "".join(ch if ch.isprintable() else "?" for ch in text)
    return clean if len(clean) <= limit else clean[: limit - 3] + "..."


async def _follow(
    loop: asyncio.AbstractEventLoop,
    session: HttpSession,
    policy: AddressPolicy,
    target: Target,
    got: FetchResult,
    *,
    method: str,
    follow_redirects: bool,
    max_redirects: int,
    headers: dict[str, str],
    max_body_bytes: int,
) -> bytes:
    if method != "GET" and not TOKEN.fullmatch(method):
        raise _Failed(f"invalid request to {target.text}: invalid method {method!r}")
    for hop in range(max_redirects + 1):
        if hop:
            got.final_url = target.text
            got.status = got.location = got.peer = None
            got.timings = dict.fromkeys(_TIMING_KEYS)
        try:
            body = await _hop(
                loop,
                session,
                policy,
                target,
                got,
                method=method,
                headers=headers,
                max_body_bytes=max_body_bytes,
                follow_redirects=follow_redirects,
            )
        except _Failed as exc:
            if hop and exc.blocked:  # name the hop: the monitor's own URL was allowed
                raise _Failed(f"{exc.message} after a redirect to {target.text}", blocked=True) from exc
            raise
        if not (follow_redirects and got.status in REDIRECT_STATUSES and got.location):
            return body
        next_target = _next_hop(target, got.location)
        if next_target.origin != target.origin:
            headers = {k: v for k, v in headers.items() if k.lower() not in _ORIGIN_BOUND_HEADERS}
        if got.status == 303 or (got.status in (301, 302) and method == "POST"):
            method = "GET" if method != "HEAD" else method
        target = next_target
    raise _Failed(f"too many redirects (more than {max_redirects})")


async def _hop(
    loop: asyncio.AbstractEventLoop,
    session: HttpSession,
    policy: AddressPolicy,
    target: Target,
    got: FetchResult,
    *,
    method: str,
    headers: dict[str, str],
    max_body_bytes: int,
    follow_redirects: bool,
) -> bytes:
    """One request to ``target``: judge, resolve, dial, send, read. Raises _Failed."""
    marks = got.timings
    started = time.perf_counter()
    if target.literal is not None:
        try:
            addresses = [target.dial_literal(policy)]
        except BlockedTarget as exc:
            raise _Failed(f"blocked: {exc.reason}", blocked=True) from exc
    else:
        addresses = await _resolve(session.resolver, target.host, marks)
    try:
        request = target.request(method, headers)
    except InvalidRequest as exc:
        raise _Failed(f"invalid request to {target.text}: {exc}") from exc
    exchange: Exchange | None = None
    error: OSError | None = None
    connecting = time.perf_counter()
    try:
        # In order, the first that connects. No happy eyeballs: the check reports the address
        # that answered, and its timeout bounds a blackholed one.
        for address in addresses:
            exchange = Exchange(
                loop,
                session.limits,
                max_body=max_body_bytes,
                head_only=method == "HEAD",
                skip_redirect_body=follow_redirects,
            )
            session.track(exchange)
            try:
                transport, _ = await loop.create_connection(exchange, address, target.port)
            except OSError as exc:
                session.forget(exchange)
                error = exc
                continue
            got.peer = address
            break
        else:
            raise _Failed(f"connection failed: {error}")
        connected = time.perf_counter()
        marks["connect_ms"] = (connected - connecting) * 1000
        if target.tls:
            exchange.transport = await _start_tls(loop, transport, exchange, session.ssl_context, target.host)
            marks["tls_ms"] = (time.perf_counter() - connected) * 1000
        exchange.transport.write(request)  # type: ignore[union-attr]  # set by connection_made
        failure = await exchange.done
    finally:
        if exchange is not None:
            session.forget(exchange)
            if not exchange.finished:  # cancelled: drop the socket with us
                exchange.finish("cancelled")
            got.status, got.location = exchange.status, exchange.location
            if exchange.first_byte:
                marks["ttfb_ms"] = (exchange.first_byte - started) * 1000
    if failure is not None:
        raise _Failed(failure)
    marks["total_ms"] = (time.perf_counter() - started) * 1000
    return exchange.body


async def _resolve(resolver: VettedResolver, host: str, marks: dict[str, float | None]) -> list[str]:
    """One fresh lookup whose every answer is judged (fail closed): the addresses to dial.
    Nothing else resolves the name, so what was judged is what is dialled."""
    started = time.perf_counter()
    try:
        return [str(address) for address in await resolver.vet(host)]
    except BlockedTarget as exc:
        raise _Failed(f"blocked: {exc.host or host} {exc.reason}", blocked=True) from exc
    except InvalidTarget as exc:
        raise _Failed(f"blocked: {host} {exc}", blocked=True) from exc
    except ResolutionError as exc:
        raise _Failed(str(exc)) from exc
    except OSError as exc:
        raise _Failed(f"cannot resolve {host}: {exc}") from exc
    finally:
        marks["dns_ms"] = (time.perf_counter() - started) * 1000


async def _start_tls(
    loop: asyncio.AbstractEventLoop,
    transport: asyncio.BaseTransport,
    exchange: Exchange,
    context: ssl.SSLContext,
    host: str,
) -> asyncio.Transport:
    # TLS on the socket already connected to the vetted address; the name is only for SNI and
    # the certificate check (an IP literal is checked against the certificate's IP addresses).
    try:
        tls = await loop.start_tls(transport, exchange, context, server_hostname=host)  # type: ignore[arg-type]
    except ssl.SSLCertVerificationError as exc:
        raise _Failed(f"TLS certificate error: {exc}") from exc
    except ssl.SSLError as exc:
        raise _Failed(f"TLS error: {exc}") from exc
    except OSError as exc:
        raise _Failed(f"connection failed: {exc}") from exc
    if tls is None:
        raise _Failed("TLS error: the connection closed during the handshake")
    return tls


def _next_hop(current: Target, location: str) -> Target:
    # Hops are parsed afresh, not through the session's memo: a Location is the target's to
    # choose, and must not crowd out the monitors' own URLs.
    try:
        return Target.parse(str(current.url.join(URL(location))))
    except (InvalidTarget, ValueError) as exc:
        raise _Failed(f"redirect to invalid target {location!r}: {exc}") from exc
