"""SMTP submission to a user's server, through the SSRF guard: the transport of the email kind.

The host is resolved and judged by the alerter's ``VettedResolver`` (the policy of checks,
``MONITOR_ALLOW_CIDRS``), a vetted address is dialled here, and aiosmtplib gets that socket:
TLS (implicit, or STARTTLS, which is then required) verifies the certificate against the host
name as configured, with the operator's ``MONITOR_CA_FILE`` trusted besides the system's roots.
:func:`classify_error` says whether a failure may heal by retrying.
"""

from __future__ import annotations

import asyncio
import re
import socket
import ssl
from dataclasses import dataclass, field
from email.message import EmailMessage

import aiosmtplib

from monitor.channels.base import DeliveryError
from monitor.net.client import clip_error
from monitor.net.policy import BlockedTarget, InvalidTarget, IPAddress
from monitor.net.resolver import ResolutionError, VettedResolver

CONNECT_TIMEOUT = 10.0  # per address
COMMAND_TIMEOUT = 20.0  # per SMTP command (the DATA answer included)
QUIT_TIMEOUT = 3.0


@dataclass(frozen=True)
class Server:
    """Where and how to submit: ``security`` is "starttls", "tls" or "none"."""

    host: str
    port: int
    security: str
    username: str | None = None
    password: str | None = field(default=None, repr=False)


def tls_context(ca_file: str | None) -> ssl.SSLContext:
    """The system's roots (plus the operator's CA file) with host name checks; no ALPN (the
    checks' context offers http/1.1, which is not what an SMTP server speaks)."""
    context = ssl.create_default_context()
    if ca_file:
        context.load_verify_locations(cafile=ca_file)
    return context


def _local_hostname() -> str:
    name = socket.gethostname()
    return name if re.fullmatch(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})", name) else "localhost"


async def _vet(resolver: VettedResolver, host: str) -> list[IPAddress]:
    try:
        return await resolver.vet(host)
    except BlockedTarget as exc:
        # The user's setting points where the alerter may not go: retrying cannot help.
        where = f"{host} {exc.reason}" if exc.host else exc.reason
        raise DeliveryError(f"SMTP server blocked: {where}", permanent=True) from None
    except InvalidTarget as exc:
        raise DeliveryError(f"SMTP server blocked: {host} {exc}", permanent=True) from None
    except ResolutionError as exc:
        raise DeliveryError(f"SMTP server: {exc}", permanent=False) from None
    except OSError as exc:
        raise DeliveryError(f"SMTP server: cannot resolve {host}: {exc}", permanent=False) from None


async def _dial(addresses: list[IPAddress], port: int) -> socket.socket:
    """A socket connected to the first vetted address that answers, in order."""
    loop = asyncio.get_running_loop()
    failures: list[str] = []
    for address in addresses:
        sock = socket.socket(socket.AF_INET6 if address.version == 6 else socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT):
                await loop.sock_connect(sock, (str(address), port))
        except TimeoutError:
            sock.close()
            failures.append(f"{address} port {port}: timed out after {CONNECT_TIMEOUT:g}s")
            continue
        except OSError as exc:
            sock.close()
            reason = "refused" if isinstance(exc, ConnectionRefusedError) else (exc.strerror or str(exc))
            failures.append(f"{address} port {port}: {reason}")
            continue
        except BaseException:
            sock.close()
            raise
        return sock
    raise DeliveryError(f"SMTP connection failed: {'; '.join(failures)}", permanent=False)


def _find(exc: BaseException, kind: type[BaseException]) -> BaseException | None:
    seen: BaseException | None = exc
    for _ in range(5):
        if seen is None:
            return None
        if isinstance(seen, kind):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


_STAGES: tuple[tuple[type[aiosmtplib.SMTPResponseException], str], ...] = (
    (aiosmtplib.SMTPAuthenticationError, "authentication failed"),
    (aiosmtplib.SMTPConnectResponseError, "greeting"),
    (aiosmtplib.SMTPHeloError, "EHLO refused"),
    (aiosmtplib.SMTPSenderRefused, "sender refused"),
    (aiosmtplib.SMTPRecipientRefused, "recipient refused"),
    (aiosmtplib.SMTPDataError, "message refused"),
)


def classify_error(exc: BaseException) -> DeliveryError:
    """What an SMTP failure means for retrying: a 4xx reply, a lost connection or a timeout
    may heal; a 5xx reply (550 mailbox unavailable, 535 authentication failed), a certificate
    that does not verify, or a server without STARTTLS or AUTH will not."""
    if isinstance(exc, aiosmtplib.SMTPRecipientsRefused):
        refused = exc.recipients
        permanent = bool(refused) and all(r.code >= 500 for r in refused)
        first = f"{refused[0].code} {refused[0].message}" if refused else "no reply"
        return DeliveryError(clip_error(f"SMTP refused every recipient: {first}"), permanent=permanent)
    if isinstance(exc, aiosmtplib.SMTPResponseException):
        stage = next((name for cls, name in _STAGES if isinstance(exc, cls)), "error")
        return DeliveryError(
            clip_error(f"SMTP {stage}: {exc.code} {exc.message}"), permanent=500 <= exc.code < 600
        )
    verify = _find(exc, ssl.SSLCertVerificationError)
    if isinstance(verify, ssl.SSLCertVerificationError):
        return DeliveryError(
            clip_error(f"SMTP TLS certificate error: {verify.verify_message or verify}"), permanent=True
        )
    tls = _find(exc, ssl.SSLError)
    if isinstance(tls, ssl.SSLError):
        reason = getattr(tls, "reason", None)
        if reason == "WRONG_VERSION_NUMBER":
            return DeliveryError(
                'SMTP TLS error: the server did not answer in TLS (security "tls" is implicit TLS, '
                'port 465; port 587 takes "starttls")',
                permanent=True,
            )
        return DeliveryError(clip_error(f"SMTP TLS error: {reason or tls}"), permanent=False)
    if isinstance(exc, TimeoutError):  # aiosmtplib's timeouts are TimeoutErrors too
        return DeliveryError(clip_error(f"SMTP timed out: {exc}".rstrip(": ")), permanent=False)
    if isinstance(exc, OSError):  # aiosmtplib's disconnects and connect errors are ConnectionErrors
        cause = exc.__cause__ if isinstance(exc, aiosmtplib.SMTPConnectError) and exc.__cause__ else exc
        return DeliveryError(clip_error(f"SMTP connection failed: {cause}"), permanent=False)
    if isinstance(exc, aiosmtplib.SMTPException):
        # The server lacks what the settings need (STARTTLS, AUTH, a shared AUTH mechanism).
        return DeliveryError(clip_error(f"SMTP: {exc}"), permanent=True)
    raise TypeError(f"not an SMTP failure: {type(exc).__name__}")


async def send(
    resolver: VettedResolver, server: Server, message: EmailMessage, *, ca_file: str | None
) -> dict[str, aiosmtplib.SMTPResponse]:
    """Submit ``message`` (to its From and To); the recipients the server refused while taking
    it for the others. Raises DeliveryError for a host the policy denies or none that answers,
    and aiosmtplib's or ssl's errors otherwise (:func:`classify_error` reads them)."""
    addresses = await _vet(resolver, server.host)
    context = await asyncio.to_thread(tls_context, ca_file) if server.security != "none" else None
    sock = await _dial(addresses, server.port)
    try:
        client = aiosmtplib.SMTP(
            hostname=server.host,  # with ``sock``: only the name TLS verifies (and SNI)
            sock=sock,
            use_tls=server.security == "tls",
            start_tls=server.security == "starttls",
            tls_context=context,
            timeout=COMMAND_TIMEOUT,
            local_hostname=_local_hostname(),
            username=server.username,
            password=server.password,
        )
    except BaseException:
        sock.close()
        raise
    # From here the socket is the transport's: asyncio closes it with the connection, also when
    # connecting fails (closing it here too would pull it from under a TLS transport).
    await client.connect()
    try:
        refused, _ = await client.send_message(message)
    finally:
        await _quit(client)
    return refused


async def _quit(client: aiosmtplib.SMTP) -> None:
    if not client.is_connected:
        return
    try:
        async with asyncio.timeout(QUIT_TIMEOUT):
            await client.quit()
    except (aiosmtplib.SMTPException, OSError, TimeoutError):
        client.close()
