"""A guarded connection for the check types that are not HTTP (tcp, tls): vet, dial, maybe TLS.

The same guard as ``client.fetch``: the host is resolved once through the vetted resolver
(``vetting.vet_host``, so a refusal reads exactly as an http check's: ``blocked: db.internal
resolves to 10.0.0.5 (private-use 10.0.0.0/8)``), and only an address it returned is dialled,
in order, the first that connects (no happy eyeballs: the check reports the address that
answered, and its timeout bounds a blackholed one). TLS is started on that socket with the
host's name (or the monitor's ``server_name``) for SNI and the certificate check.

``bounded`` runs a check's work within the session's bound on connections in flight and the
monitor's timeout; a timeout names the phase it cut (``timed out after 5s in the TLS handshake
with mail.example.com``), which ``Progress.phase`` tracks as the work goes. Timings are those
of ``client``: ``dns_ms`` (names only), ``connect_ms`` (TCP) and ``tls_ms`` (the handshake)
are durations; ``ttfb_ms`` is the first byte of the answer, from the start.

What the peer said is kept by a ``Wire`` protocol, at most ``max_bytes`` (default 64 KiB: a
banner is a line, and a hostile server must not make a check hold more), and the peer's
certificate chain is read from the TLS object (``peer_chain``).
"""

from __future__ import annotations

import _ssl  # the DER encoding constant of the private chain API (Python < 3.13)
import asyncio
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from monitor.aio import Deadline

from .policy import InvalidTarget, literal_address
from .session import HttpSession
from .vetting import Refused, vet_host

__all__ = ["DialError", "Progress", "Wire", "bounded", "connect_error", "dial", "peer_chain"]

DEFAULT_MAX_BYTES = 64 * 1024
# A check hangs up once it has its answer: wait briefly for the peer's close_notify, not
# asyncio's 30 s, so a server that never sends one cannot pile up our sockets.
TLS_SHUTDOWN_SECONDS = 2.0
TIMING_KEYS = ("dns_ms", "connect_ms", "tls_ms", "ttfb_ms")
_DER = getattr(_ssl, "ENCODING_DER", 2)

T = TypeVar("T")


class DialError(Exception):
    """The check cannot go on; ``message`` is its cause as an operator reads it. ``blocked``:
    refused by the guard (nothing was dialled); ``certificate``: the TLS handshake rejected the
    peer's certificate; ``timed_out``: the monitor's timeout cut the work."""

    def __init__(
        self, message: str, *, blocked: bool = False, certificate: bool = False, timed_out: bool = False
    ) -> None:
        super().__init__(message)
        self.message = message
        self.blocked = blocked
        self.certificate = certificate
        self.timed_out = timed_out


class Wire(asyncio.Protocol):
    """One connection's received bytes (at most ``max_bytes``; past them reading stops and
    ``full`` is set) and a way to wait for more (``more``)."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.transport: asyncio.Transport | None = None
        self.received = bytearray()
        self.first_byte: float | None = None  # perf_counter of the first byte
        self.closed = False  # the peer closed (or the connection was lost)
        self.full = False
        self._max = max_bytes
        self._waiter: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a stream transport

    def data_received(self, data: bytes) -> None:
        if self.first_byte is None:
            self.first_byte = time.perf_counter()
        room = self._max - len(self.received)
        if room > 0:
            self.received += data[:room]
        if len(self.received) >= self._max and not self.full:
            self.full = True
            if self.transport is not None:
                self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.closed = True
        self._wake()
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._wake()

    async def more(self) -> None:
        """Wait until more bytes arrive, the peer closes, or the cap is reached."""
        if self.closed or self.full:
            return
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def close(self, *, polite: bool = True) -> None:
        """Hang up: politely (TLS close_notify, FIN after what is queued) or at once."""
        if self.transport is None or self.transport.is_closing():
            if self.transport is not None and not polite:
                self.transport.abort()
            return
        if polite:
            self.transport.close()
        else:
            self.transport.abort()


@dataclass(slots=True)
class Progress:
    """Where a dial is, filled in as it goes, so a failure or a timeout mid-way can say so:
    ``phase`` (for a timeout's message), ``peer`` (the address that answered), the timings,
    the TLS object once the handshake is done, and the ``wire`` once connected."""

    phase: str = ""
    peer: str | None = None
    timings: dict[str, float | None] = field(default_factory=lambda: dict.fromkeys(TIMING_KEYS))
    tls: ssl.SSLObject | None = None
    wire: Wire | None = None
    started: float = field(default_factory=time.perf_counter)

    @property
    def handshake_ms(self) -> float | None:
        """TCP connect plus TLS handshake (ms), or None before the connection was up."""
        connect = self.timings.get("connect_ms")
        if connect is None:
            return None
        return connect + (self.timings.get("tls_ms") or 0.0)

    @property
    def latency_ms(self) -> float:
        """A dialling check's latency: connect plus handshake, or, when the connection never
        came up, how long it tried."""
        handshake = self.handshake_ms
        return round(handshake if handshake is not None else (time.perf_counter() - self.started) * 1000, 3)


async def dial(
    session: HttpSession,
    host: str,
    port: int,
    progress: Progress,
    *,
    context: ssl.SSLContext | None = None,
    server_name: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Wire:
    """Connect to a vetted address of ``host`` and, with ``context``, complete a TLS handshake
    (SNI and the certificate check: ``server_name`` or ``host``). Raises DialError; the caller
    closes the returned wire (``Wire.close``)."""
    loop = asyncio.get_running_loop()
    marks = progress.timings
    addresses = await _vet(session, host, marks, progress)
    wire = progress.wire = Wire(max_bytes)
    error = ""
    connecting = time.perf_counter()
    for address in addresses:
        progress.phase = f"connecting to {address} port {port}"
        try:
            await loop.create_connection(lambda: wire, address, port)
        except OSError as exc:
            error = connect_error(exc, address, port)
            continue
        progress.peer = address
        break
    else:
        raise DialError(f"connection failed: {error}")
    connected = time.perf_counter()
    marks["connect_ms"] = (connected - connecting) * 1000
    if context is not None:
        name = server_name or host
        progress.phase = f"in the TLS handshake with {name}"
        try:
            tls = await _start_tls(loop, wire, context, name)
        except BaseException:
            wire.close(polite=False)
            raise
        wire.transport = tls
        progress.tls = tls.get_extra_info("ssl_object")
        marks["tls_ms"] = (time.perf_counter() - connected) * 1000
    progress.phase = ""
    return wire


async def _vet(
    session: HttpSession, host: str, marks: dict[str, float | None], progress: Progress
) -> list[str]:
    try:
        named = literal_address(host) is None
    except InvalidTarget:
        named = True  # vet_host says why it is refused
    progress.phase = f"resolving {host}"
    started = time.perf_counter()
    try:
        return await vet_host(session.resolver, host)
    except Refused as exc:
        raise DialError(exc.message, blocked=exc.blocked) from exc
    finally:
        if named:
            marks["dns_ms"] = (time.perf_counter() - started) * 1000


async def _start_tls(
    loop: asyncio.AbstractEventLoop, wire: Wire, context: ssl.SSLContext, name: str
) -> asyncio.Transport:
    # On the socket already connected to the vetted address; the name is only for SNI and the
    # certificate check (an IP literal is checked against the certificate's IP addresses).
    assert wire.transport is not None
    try:
        tls = await loop.start_tls(
            wire.transport, wire, context, server_hostname=name, ssl_shutdown_timeout=TLS_SHUTDOWN_SECONDS
        )
    except ssl.SSLCertVerificationError as exc:
        raise DialError(f"TLS certificate error: {exc.verify_message or exc}", certificate=True) from exc
    except ssl.SSLError as exc:
        reason = exc.reason or ""
        if reason == "WRONG_VERSION_NUMBER":
            raise DialError("TLS error: the server did not answer in TLS (a plain-text service?)") from exc
        if "NO_APPLICATION_PROTOCOL" in reason:
            # The session's context offers ALPN http/1.1; a server that insists on another refuses.
            raise DialError("TLS error: the server refused the ALPN protocol offered (http/1.1)") from exc
        raise DialError(f"TLS error: {exc}") from exc
    except OSError as exc:
        raise DialError(f"connection lost in the TLS handshake: {exc.strerror or exc}") from exc
    if tls is None:
        raise DialError("TLS error: the connection closed during the handshake")
    return tls


def connect_error(exc: OSError, address: str, port: int) -> str:
    """Why a connect failed, as a check's cause says it (Python's own text, "Connect call
    failed ('10.1.2.3', 80)", says less)."""
    if isinstance(exc, ConnectionRefusedError):
        return f"refused by {address} port {port}"
    return f"{address} port {port}: {exc.strerror or exc}"


async def bounded(
    session: HttpSession,
    timeout: float,  # noqa: ASYNC109 - the check's own budget, applied by Deadline below
    progress: Progress,
    work: Callable[[], Awaitable[T]],
) -> T:
    """``work()`` within the session's bound on checks in flight and ``timeout`` seconds (the
    wait for a slot included, as for http); a timeout raises DialError naming the phase."""
    if session.closed:
        raise RuntimeError("dial on a closed session")
    deadline = Deadline(asyncio.get_running_loop(), timeout)
    try:
        if not session.slots.try_acquire():
            progress.phase = "waiting for a free check slot"
            await session.slots.acquire()
        try:
            return await work()
        finally:
            session.slots.release()
    except asyncio.CancelledError:
        if not deadline.caused():
            raise
        message = f"timed out after {timeout:g}s {progress.phase}".rstrip()
        raise DialError(message, timed_out=True) from None
    finally:
        deadline.cancel()


def peer_chain(tls: ssl.SSLObject | None, *, verified: bool) -> list[bytes]:
    """The DER certificates of the peer, leaf first: the chain verification built (up to the
    trust anchor) when ``verified``, else the chain as the peer sent it. Python exposes both
    publicly from 3.13 (private ``_sslobj`` methods on 3.10-3.12); where neither is there, the
    leaf alone."""
    if tls is None:
        return []
    names = ("get_verified_chain", "get_unverified_chain") if verified else ("get_unverified_chain",)
    for name in names:
        getter = getattr(tls, name, None) or getattr(getattr(tls, "_sslobj", None), name, None)
        if getter is None:
            continue
        try:
            chain: list[Any] | None = getter()
        except (ssl.SSLError, ValueError, AttributeError):
            continue
        if chain:
            return [item if isinstance(item, bytes) else item.public_bytes(_DER) for item in chain]
    leaf = tls.getpeercert(binary_form=True)
    return [leaf] if leaf else []
