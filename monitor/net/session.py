"""The check client's shared state: one ``HttpSession`` per process, created by ``make_session``.

What every fetch shares (resolver, TLS context, limits, parsed targets, parsed peer certificates,
the bound on fetches in flight) lives here; ``client.fetch`` does the work.
"""

from __future__ import annotations

import ssl
from typing import Protocol

from monitor.aio import Slots

from .certificate import CertificateMemo
from .http1 import Limits
from .resolver import VettedResolver
from .target import Target

HTTP1 = ["http/1.1"]
H2 = ["h2"]


class Settles(Protocol):
    """An exchange in flight (``http1.Exchange``, ``http2.H2Exchange``), ended by ``finish``."""

    def finish(self, error: str | None) -> None: ...


class HttpSession:
    """The check client of a process. Holds no connection between fetches (each check dials
    afresh); ``close`` aborts the ones in flight. Closing the session does not close the
    resolver: its owner does that.

    ``limit`` bounds fetches in flight. ``max_targets`` bounds the parsed-URL memo
    (``target.Target``, a few hundred bytes each); past it, the newest entry makes room, so a
    rotation over more URLs than fit still finds most of them. ``max_certificates`` bounds the
    memo of parsed peer certificates (``certificate.CertificateMemo``) the same way.
    """

    def __init__(
        self,
        resolver: VettedResolver,
        *,
        limit: int,
        limits: Limits,
        ssl_context: ssl.SSLContext,
        max_targets: int,
        max_certificates: int = 4096,
    ) -> None:
        self.resolver = resolver
        self.limits = limits
        self.ssl_context = ssl_context
        # For monitors with tls_verify off (only where the operator allows it): encrypted, but
        # the certificate is not checked, and each result says so.
        self.insecure_ssl_context = insecure_context()
        self._h2_contexts: dict[bool, ssl.SSLContext] = {}
        self.closed = False
        self.slots = Slots(limit)  # fetches in flight
        self._targets: dict[str, Target] = {}
        self._max_targets = max_targets
        self.certificates = CertificateMemo(max_certificates)
        self._open: set[Settles] = set()

    async def close(self) -> None:
        self.closed = True
        for exchange in list(self._open):
            exchange.finish("session closed")
        self._open.clear()
        self._targets.clear()
        self.certificates.clear()

    def target(self, url: str) -> Target:
        """The parsed target for ``url``, from the memo when it is there. Raises InvalidTarget."""
        target = self._targets.get(url)
        if target is None:
            target = Target.parse(url)
            if len(self._targets) >= self._max_targets:
                self._targets.popitem()
            self._targets[url] = target
        return target

    def track(self, exchange: Settles) -> None:
        self._open.add(exchange)

    def forget(self, exchange: Settles) -> None:
        self._open.discard(exchange)

    def h2_context(self, verified: bool) -> ssl.SSLContext:
        """The TLS context that offers ALPN ``h2`` only, for a server that answers nothing
        else: the same trust as ``ssl_context`` (or none, as ``insecure_ssl_context``). Made
        on first use, as most processes never meet such a server."""
        context = self._h2_contexts.get(verified)
        if context is None:
            context = self._h2_contexts[verified] = (
                same_trust(self.ssl_context, H2) if verified else insecure_context(H2)
            )
        return context


def tls_context(ca_file: str | None = None, alpn: list[str] = HTTP1) -> ssl.SSLContext:
    """The system's trust store with host name checks, plus the operator's CA file if given
    (added to the system's roots, not instead of them), offering only ALPN http/1.1: the
    check speaks HTTP/1.1 wherever the server does. Offering h2 as well would not keep 1.1
    first: servers choose by their own order (nginx, Apache, Go's), and nginx answers a
    client that offers "http/1.1, h2" in h2. A server that can only answer in HTTP/2 says so
    in the handshake or in its first bytes, and the client asks again with ``h2_context``."""
    context = ssl.create_default_context()
    if ca_file:
        context.load_verify_locations(cafile=ca_file)
    context.set_alpn_protocols(alpn)
    return context


def insecure_context(alpn: list[str] = HTTP1) -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(alpn)
    return context


def same_trust(context: ssl.SSLContext, alpn: list[str]) -> ssl.SSLContext:
    """A context that trusts what ``context`` trusts (the CAs it loaded: the system's roots,
    the operator's file, a test CA; and the system's directory of roots), with its checks and
    versions, offering ``alpn``. An SSLContext cannot be copied, nor its ALPN set per
    connection. About 50 ms (the system's roots, parsed again), once a process."""
    copy = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    copy.load_verify_locations(cadata=b"".join(context.get_ca_certs(binary_form=True)))
    copy.set_default_verify_paths()
    copy.check_hostname = context.check_hostname
    copy.verify_mode = context.verify_mode
    copy.verify_flags = context.verify_flags
    copy.minimum_version = context.minimum_version
    copy.maximum_version = context.maximum_version
    copy.options = context.options
    copy.set_alpn_protocols(alpn)
    return copy


def make_session(
    resolver: VettedResolver,
    *,
    limit: int = 100,
    max_head_bytes: int = 256 * 1024,
    max_headers: int = 1000,
    ssl_context: ssl.SSLContext | None = None,
    max_targets: int = 8192,
    max_certificates: int = 4096,
) -> HttpSession:
    """The one HTTP session of a process; close it on shutdown.

    ``ssl_context`` defaults to :func:`tls_context` (the system trust store with host name
    checks); pass one only to trust another CA (tests, a private CA).
    """
    return HttpSession(
        resolver,
        limit=limit,
        limits=Limits(max_head_bytes=max_head_bytes, max_headers=max_headers),
        # One context for all checks: building one per request costs milliseconds of CPU each.
        ssl_context=ssl_context if ssl_context is not None else tls_context(),
        max_targets=max_targets,
        max_certificates=max_certificates,
    )
