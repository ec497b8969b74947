"""One request on one fresh connection to a vetted address, in the protocol the server speaks.

``client.fetch`` resolves and vets a hop's addresses and builds its request; this module dials
one of them (in order, the first that connects: no happy eyeballs, so the check reports the
address that answered and its timeout bounds a blackholed one), starts TLS on that socket with
the URL's name for SNI and the certificate check, and runs the exchange: HTTP/1.1
(``http1.Exchange``) or, for a server that answers nothing else, HTTP/2 (``http2.H2Exchange``).

HTTP/1.1 is asked for first and only (ALPN ``http/1.1``): the servers that speak both choose by
their own order, and nginx would answer "http/1.1, h2" in h2. A server that speaks only HTTP/2
says so by refusing the handshake (``no_application_protocol``), by choosing h2 anyway, or by
answering the request with HTTP/2 frames (a server without ALPN, or one that ignores a list it
has nothing of); ``H2Only`` is raised then, and ``http2`` asks again on a new connection to
the same address, offering ``h2``. When that handshake chooses h2, the target remembers it
(``Target.h2_only``) and its next checks ask for h2 at once: one handshake a check, as for
HTTP/1.1. If the server then stops choosing h2, the check goes back to HTTP/1.1.

Timings are the connection's that answered: ``connect_ms`` and ``tls_ms`` its own, ``ttfb_ms``
and ``total_ms`` from the hop's start, less the refused HTTP/1.1 attempt where there was one
(what a browser that asked for h2 at once would see). The check's latency, its whole time,
includes that attempt: on the first check of a URL (about one more handshake, and ~50 ms to
build the h2 TLS context, once a process), and on every check of a server that chooses no
ALPN at all.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from .certificate import PeerCertificate
from .dial import TLS_SHUTDOWN_SECONDS, connect_error
from .http1 import HTTP2_ONLY, Exchange
from .session import HttpSession
from .target import Target

if TYPE_CHECKING:
    from .client import FetchResult
    from .http2 import H2Exchange

E = TypeVar("E", "Exchange", "H2Exchange")


class Failed(Exception):
    """The hop cannot go on; ``message`` is the check's error."""

    def __init__(self, message: str, *, blocked: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.blocked = blocked


class H2Only(Failed):
    """The server answers only in HTTP/2; ``message`` is the error if HTTP/2 cannot be spoken."""


@dataclass(slots=True)
class Request:
    """What to send, and how to read the answer; ``method``, ``body`` and the headers change
    along redirects."""

    method: str
    headers: dict[str, str]
    credentials: dict[str, str]  # sent to the first origin only
    body: bytes | None
    read_body: bool
    max_body: int
    ssl_context: ssl.SSLContext
    header_names: frozenset[bytes]


async def http1(
    loop: asyncio.AbstractEventLoop,
    session: HttpSession,
    target: Target,
    got: FetchResult,
    request: Request,
    addresses: list[str],
    data: bytes,
    *,
    follow_redirects: bool,
    first: bool,
    started: float,
) -> bytes:
    """The request ``data`` in HTTP/1.1; the body. Raises Failed, H2Only (https only)."""
    marks = got.timings
    exchange: Exchange | None = None
    tls: asyncio.Transport | None = None
    port, error = target.port, ""
    try:
        # _connect's loop, written out: this is every check's path, and a coroutine less on
        # it is a frame and three calls less a check (tests/unit/test_check_cost.py).
        connecting = time.perf_counter()
        for address in addresses:
            got.phase = f"connecting to {address} port {port}"
            exchange = Exchange(
                loop,
                session.limits,
                max_body=request.max_body,
                read_body=request.read_body,
                head_only=request.method == "HEAD",
                skip_redirect_body=follow_redirects,
                header_names=request.header_names,
            )
            session.track(exchange)
            try:
                transport, _ = await loop.create_connection(exchange, address, port)
            except OSError as exc:
                session.forget(exchange)
                exchange, error = None, connect_error(exc, address, port)
                continue
            except BaseException:  # cancelled: nothing is connected
                session.forget(exchange)
                exchange = None
                raise
            break
        else:
            raise Failed(f"connection failed: {error}")
        connected = _connected(got, address, connecting)
        if target.tls:
            got.phase = f"in the TLS handshake with {target.host}"
            tls = exchange.transport = await _start_tls(
                loop, transport, exchange, request.ssl_context, target.host
            )
            marks["tls_ms"] = (time.perf_counter() - connected) * 1000
            got.tls_verified = request.ssl_context.verify_mode != ssl.CERT_NONE
            protocol = _alpn(tls)
            if protocol not in (None, "http/1.1"):  # we offered only http/1.1
                message = f"the server answered in HTTP/2 only (TLS ALPN chose {protocol!r})"
                raise H2Only(message) if protocol == "h2" else Failed(message)
        got.phase = ""  # from here on, the exchange's state tells (below)
        exchange.transport.write(data)  # type: ignore[union-attr]  # set by connection_made
        if first and tls is not None:  # while the request travels
            got.certificate = _peer_certificate(session, tls)
        failure = await exchange.done
    finally:
        if exchange is not None:
            _settle(session, got, exchange, started)
    if failure is not None:
        if failure == HTTP2_ONLY and target.tls:
            raise H2Only(failure)
        raise Failed(failure)
    marks["total_ms"] = (time.perf_counter() - started) * 1000
    return exchange.body


async def http2(
    loop: asyncio.AbstractEventLoop,
    session: HttpSession,
    target: Target,
    got: FetchResult,
    request: Request,
    fields: list[tuple[str, str]],
    addresses: list[str],
    *,
    follow_redirects: bool,
    first: bool,
    started: float,
    known: bool,
) -> bytes | None:
    """The request in HTTP/2, on a connection that offers ALPN h2 only; the body. ``known``:
    asked because the target's last check found it h2-only, so None (the connection dropped)
    when the server no longer chooses h2. Otherwise the server has just shown it speaks
    HTTP/2 only, and a server without ALPN is spoken to in HTTP/2 all the same."""
    from .http2 import H2Exchange  # h2 is loaded when a server needs it, not before

    marks = got.timings
    verified = request.ssl_context.verify_mode != ssl.CERT_NONE
    context = session.h2_context(verified)
    if not known:
        # The timings are the HTTP/2 connection's, as a browser that asked for h2 at once
        # sees them: not the refused HTTP/1.1 attempt (whose first byte was the refusal).
        marks["ttfb_ms"] = None
        started = time.perf_counter() - (marks["dns_ms"] or 0.0) / 1000
    exchange: H2Exchange | None = None

    def make() -> H2Exchange:
        return H2Exchange(
            loop,
            session.limits,
            fields,
            request.body,
            max_body=request.max_body,
            read_body=request.read_body,
            head_only=request.method == "HEAD",
            skip_redirect_body=follow_redirects,
            header_names=request.header_names,
        )

    try:
        exchange, transport, connected = await _connect(loop, session, addresses, target.port, make, got)
        got.phase = f"in the TLS handshake with {target.host}"
        try:
            tls = await _start_tls(loop, transport, exchange, context, target.host)
        except H2Only as exc:
            raise Failed("TLS error: the server refused both ALPN protocols offered (http/1.1, h2)") from exc
        marks["tls_ms"] = (time.perf_counter() - connected) * 1000
        exchange.transport = tls
        got.tls_verified = verified
        protocol = _alpn(tls)
        if protocol != "h2":
            if known:
                target.h2_only = False
                exchange.finish("the server no longer chooses h2")
                return None
            if protocol is not None:
                raise Failed(f"TLS error: the server chose ALPN {protocol!r}, not h2")
        target.h2_only = protocol == "h2"
        got.phase = ""
        exchange.start(tls)
        if first:
            got.certificate = _peer_certificate(session, tls)
        failure = await exchange.done
    finally:
        if exchange is not None:
            _settle(session, got, exchange, started)
    if failure is not None:
        raise Failed(failure)
    got.http_version = "2"
    marks["total_ms"] = (time.perf_counter() - started) * 1000
    return exchange.body


async def _connect(
    loop: asyncio.AbstractEventLoop,
    session: HttpSession,
    addresses: list[str],
    port: int,
    make: Callable[[], E],
    got: FetchResult,
) -> tuple[E, asyncio.BaseTransport, float]:
    """The exchange connected to the first of ``addresses`` that takes it, its transport, and
    when it connected (``connect_ms`` is set); the exchange is tracked by the session until
    ``_settle``."""
    error = ""
    connecting = time.perf_counter()
    for address in addresses:
        got.phase = f"connecting to {address} port {port}"
        exchange = make()
        session.track(exchange)
        try:
            transport, _ = await loop.create_connection(exchange, address, port)
        except OSError as exc:
            session.forget(exchange)
            error = connect_error(exc, address, port)
            continue
        except BaseException:  # cancelled: nothing is connected
            session.forget(exchange)
            raise
        return exchange, transport, _connected(got, address, connecting)
    raise Failed(f"connection failed: {error}")


def _connected(got: FetchResult, address: str, connecting: float) -> float:
    """Record the address that took the connection and ``connect_ms``; when it connected."""
    got.peer = address
    connected = time.perf_counter()
    got.timings["connect_ms"] = (connected - connecting) * 1000
    return connected


def _settle(session: HttpSession, got: FetchResult, exchange: Exchange | H2Exchange, started: float) -> None:
    """What the exchange saw, into ``got``; a cancelled one says where it was and drops its socket."""
    session.forget(exchange)
    if not exchange.finished:
        if not got.phase:
            got.phase = exchange.reading_phase()
        exchange.finish("cancelled")
    got.status, got.location = exchange.status, exchange.location
    got.content_type, got.truncated = exchange.content_type, exchange.truncated
    if exchange.headers:
        got.headers = {
            k.decode("latin-1"): tuple(v.decode("latin-1") for v in values)
            for k, values in exchange.headers.items()
        }
    if exchange.first_byte:
        got.timings["ttfb_ms"] = (exchange.first_byte - started) * 1000


async def _start_tls(
    loop: asyncio.AbstractEventLoop,
    transport: asyncio.BaseTransport,
    exchange: asyncio.Protocol,
    context: ssl.SSLContext,
    host: str,
) -> asyncio.Transport:
    # TLS on the socket already connected to the vetted address; the name is only for SNI and
    # the certificate check (an IP literal is checked against the certificate's IP addresses).
    try:
        tls = await loop.start_tls(
            transport,  # type: ignore[arg-type]
            exchange,
            context,
            server_hostname=host,
            ssl_shutdown_timeout=TLS_SHUTDOWN_SECONDS,
        )
    except ssl.SSLCertVerificationError as exc:
        raise Failed(f"TLS certificate error: {exc.verify_message or exc}") from exc
    except ssl.SSLError as exc:
        reason = exc.reason or ""
        if "NO_APPLICATION_PROTOCOL" in reason:
            raise H2Only("the server answered in HTTP/2 only (its TLS does not offer http/1.1)") from exc
        if reason == "WRONG_VERSION_NUMBER":
            raise Failed("TLS error: the server did not answer in TLS (plain HTTP? try http://)") from exc
        raise Failed(f"TLS error: {exc}") from exc
    except OSError as exc:
        raise Failed(f"connection failed: {exc}") from exc
    if tls is None:
        raise Failed("TLS error: the connection closed during the handshake")
    return tls


def _alpn(tls: asyncio.Transport) -> str | None:
    tls_object = tls.get_extra_info("ssl_object")
    return tls_object.selected_alpn_protocol() if tls_object is not None else None


def _peer_certificate(session: HttpSession, transport: asyncio.BaseTransport) -> PeerCertificate | None:
    # The DER of the leaf, verified or not (getpeercert()'s dict is empty when unverified).
    tls_object = transport.get_extra_info("ssl_object")
    der = tls_object.getpeercert(binary_form=True) if tls_object is not None else None
    return session.certificates.get(der) if der else None
