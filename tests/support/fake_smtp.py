"""A real SMTP server (aiosmtpd) on the test's event loop, recording the mail it accepts.

Two listeners on 127.0.0.1: :attr:`FakeSmtp.port` speaks plain SMTP and offers STARTTLS (and,
with ``require_starttls=True``, refuses mail before it, 530), :attr:`FakeSmtp.tls_port` is
implicit TLS (port 465 style). Both present a certificate for ``localhost``/``127.0.0.1``
from a throwaway ``trustme`` CA (:attr:`FakeSmtp.ca`; :meth:`client_tls_context` or
:meth:`write_ca` for the client). With a ``user``, AUTH PLAIN and LOGIN are offered over TLS
only (as real submission servers do), mail is refused before AUTH (530), and other
credentials get 535. Faults are scripted per SMTP stage: a reply (421 also closes the
connection, as servers do), or a hang until :meth:`release`.

Simplified: no DSN, no size or recipient limits beyond aiosmtpd's, one mailbox for every
address (recipients are recorded, never checked).
"""

from __future__ import annotations

import asyncio
import email
import email.policy
import ssl
import time
import warnings
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path
from typing import Any, cast

import trustme
from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, Session

from .waiting import DEFAULT_TIMEOUT, wait_for

STAGES = ("CONNECT", "MAIL", "RCPT", "DATA")
_REPLIES = {
    421: "421 4.7.0 Service not available, closing transmission channel",
    450: "450 4.2.1 Mailbox temporarily unavailable",
    451: "451 4.3.0 Local error in processing",
    452: "452 4.3.1 Insufficient system storage",
    550: "550 5.1.1 Mailbox unavailable",
    552: "552 5.3.4 Message size exceeds fixed limit",
    554: "554 5.7.1 Message rejected",
}


@dataclass
class SmtpMessage:
    """One message the server accepted (answered 250 to its DATA)."""

    mail_from: str
    rcpt_tos: list[str]
    data: bytes
    message: EmailMessage
    received_at: float  # time.time()
    tls: bool  # sent over STARTTLS or implicit TLS
    implicit_tls: bool
    user: str | None  # the AUTH login, if any

    def header(self, name: str) -> str | None:
        value = self.message[name]
        return None if value is None else str(value)

    @property
    def subject(self) -> str | None:
        return self.header("Subject")

    @property
    def message_id(self) -> str | None:
        return self.header("Message-ID")

    @property
    def in_reply_to(self) -> str | None:
        return self.header("In-Reply-To")

    @property
    def references(self) -> list[str]:
        return (self.header("References") or "").split()

    def _part(self, subtype: str) -> str | None:
        part = self.message.get_body((subtype,))
        return None if part is None else cast(EmailMessage, part).get_content()

    @property
    def text(self) -> str | None:
        return self._part("plain")

    @property
    def html(self) -> str | None:
        return self._part("html")


@dataclass
class _Fault:
    stage: str
    reply: str | None  # None: hang until released
    remaining: int | None  # None: until reset()


class _Silent(asyncio.Protocol):
    """A connection refused at CONNECT: a 421 greeting then close, or no greeting at all."""

    def __init__(self, reply: str | None, released: asyncio.Event) -> None:
        self._reply, self._released = reply, released
        self.transport: asyncio.Transport | None = None
        self._waiter: asyncio.Task[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        if self._reply is not None:
            self.transport.write(self._reply.encode() + b"\r\n")
            self.transport.close()
        else:
            self._waiter = asyncio.get_running_loop().create_task(self._close_when_released())

    async def _close_when_released(self) -> None:
        await self._released.wait()
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        if self._waiter is not None:
            self._waiter.cancel()


class FakeSmtp:
    def __init__(
        self,
        *,
        user: str | None = "monitor",
        password: str = "s3cret-pass",
        require_starttls: bool = False,
        ca: trustme.CA | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        self.user, self.password = user, password
        self.require_starttls = require_starttls
        self.ca = ca or trustme.CA()
        self.host = host
        self.messages: list[SmtpMessage] = []
        self.auth_attempts: list[tuple[str, str, bool]] = []  # (mechanism, login, accepted)
        self.port: int | None = None
        self.tls_port: int | None = None
        self._faults: list[_Fault] = []
        self._release = asyncio.Event()
        self._held = 0
        self._servers: list[asyncio.Server] = []
        self._connections: list[SMTP | _Silent] = []
        self._server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.ca.issue_cert("localhost", "127.0.0.1").configure_cert(self._server_tls)

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> FakeSmtp:
        loop = asyncio.get_running_loop()
        plain = await loop.create_server(lambda: self._protocol(implicit=False), self.host, 0)
        tls = await loop.create_server(
            lambda: self._protocol(implicit=True), self.host, 0, ssl=self._server_tls
        )
        self._servers = [plain, tls]
        self.port = plain.sockets[0].getsockname()[1]
        self.tls_port = tls.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        for server in self._servers:
            server.close()
        # Held sessions end with their connection (their handlers are cancelled), unrecorded.
        for conn in self._connections:
            if conn.transport is not None:
                conn.transport.close()
        for server in self._servers:
            await server.wait_closed()
        # Let connection_lost (and the handler tasks it cancels) run before the loop goes.
        for _ in range(3):
            await asyncio.sleep(0)
        self.release()
        self._servers, self._connections = [], []

    async def __aenter__(self) -> FakeSmtp:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def client_tls_context(self) -> ssl.SSLContext:
        """A client context that trusts this server's certificate (and verifies the host name)."""
        context = ssl.create_default_context()
        self.ca.configure_trust(context)
        return context

    def write_ca(self, path: Path) -> Path:
        """The CA certificate as PEM at ``path``, for a process (e.g. ``SSL_CERT_FILE``)."""
        self.ca.cert_pem.write_to_path(str(path))
        return path

    # -- scripting ---------------------------------------------------------------------

    def fail(
        self, code: int, *, stage: str = "MAIL", times: int | None = 1, reply: str | None = None
    ) -> None:
        """Answer ``stage`` (CONNECT, MAIL, RCPT or DATA) with ``code`` for the next ``times``
        sessions (None: until :meth:`reset`): 4xx is temporary, 5xx permanent; 421 closes the
        connection. ``reply`` replaces the standard text ("550 5.1.1 ...")."""
        assert stage in STAGES, stage
        self._faults.append(_Fault(stage, reply or _REPLIES.get(code, f"{code} Scripted error"), times))

    def hang(self, *, stage: str = "DATA", times: int | None = None) -> None:
        """Give no answer at ``stage`` until :meth:`release` (CONNECT: no greeting; DATA: the
        message was sent, the 250 never comes). A message held at DATA is recorded only if its
        client is still there when released."""
        assert stage in STAGES, stage
        self._faults.append(_Fault(stage, None, times))

    def release(self) -> None:
        self._faults = [f for f in self._faults if f.reply is not None]
        self._release.set()
        self._release = asyncio.Event()

    def reset(self) -> None:
        """Forget the scripts (received messages stay)."""
        self.release()
        self._faults.clear()

    @property
    def held(self) -> int:
        """How many sessions are waiting for an answer now."""
        return self._held

    # -- what was received -------------------------------------------------------------

    def messages_to(self, address: str) -> list[SmtpMessage]:
        return [m for m in self.messages if address in m.rcpt_tos]

    async def wait_messages(
        self,
        count: int,
        *,
        to: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,  # noqa: ASYNC109
    ) -> list[SmtpMessage]:
        """Wait until at least ``count`` messages were accepted (for recipient ``to``, if given)."""

        def enough() -> list[SmtpMessage]:
            got = self.messages if to is None else self.messages_to(to)
            return got if len(got) >= count else []

        return await wait_for(
            enough, timeout=timeout, message=lambda: f"{count} e-mail(s); received: {self.describe()}"
        )

    def describe(self) -> str:
        if not self.messages:
            return f"no messages (auth attempts: {self.auth_attempts})"
        return "; ".join(f"{m.mail_from} -> {m.rcpt_tos} {m.subject!r}" for m in self.messages)

    # -- the server --------------------------------------------------------------------

    def _protocol(self, *, implicit: bool) -> SMTP | _Silent:
        fault = self._take("CONNECT")
        if fault is not None:
            conn: SMTP | _Silent = _Silent(fault.reply, self._release)
        else:
            options: dict[str, Any] = {
                "hostname": "localhost",
                "enable_SMTPUTF8": True,
                "auth_required": self.user is not None,
                "authenticator": self._authenticate,
                "loop": asyncio.get_running_loop(),
            }
            if implicit:
                # The session is already TLS, which aiosmtpd only knows of STARTTLS: AUTH must not
                # wait for a STARTTLS that will never come. (Its warning is about plain text.)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    conn = SMTP(_Handler(self, implicit=True), auth_require_tls=False, **options)
            else:
                conn = SMTP(
                    _Handler(self, implicit=False),
                    tls_context=self._server_tls,
                    require_starttls=self.require_starttls,
                    **options,
                )
        self._connections.append(conn)
        return conn

    def _take(self, stage: str) -> _Fault | None:
        for fault in self._faults:
            if fault.stage == stage:
                if fault.remaining is not None:
                    fault.remaining -= 1
                    if fault.remaining <= 0:
                        self._faults.remove(fault)
                return fault
        return None

    async def _fault(self, server: SMTP, stage: str) -> str | None:
        """The scripted reply at ``stage``, after any scripted hang; None: carry on."""
        fault = self._take(stage)
        if fault is not None and fault.reply is None:
            self._held += 1
            try:
                await self._release.wait()
            finally:
                self._held -= 1
            fault = self._take(stage)
        if fault is None:
            return None
        assert fault.reply is not None
        if fault.reply.startswith("421") and server.transport is not None:
            # Servers close the connection after a 421; let the reply go out first.
            asyncio.get_running_loop().call_soon(server.transport.close)
        return fault.reply

    def _authenticate(
        self, server: SMTP, session: Session, envelope: Envelope, mechanism: str, auth_data: Any
    ) -> AuthResult:
        login = password = ""
        if isinstance(auth_data, LoginPassword):
            login = auth_data.login.decode("utf-8", "replace")
            password = auth_data.password.decode("utf-8", "replace")
        ok = self.user is not None and (login, password) == (self.user, self.password)
        self.auth_attempts.append((mechanism, login, ok))
        return AuthResult(success=ok, handled=False, auth_data=login if ok else None)


class _Handler:
    """aiosmtpd's hooks: scripted faults at each stage, and the record of accepted mail."""

    def __init__(self, fake: FakeSmtp, *, implicit: bool) -> None:
        self.fake, self.implicit = fake, implicit

    async def handle_MAIL(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, options: list[str]
    ) -> str:
        reply = await self.fake._fault(server, "MAIL")
        if reply is not None:
            return reply
        envelope.mail_from = address
        envelope.mail_options.extend(options)
        return "250 OK"

    async def handle_RCPT(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, options: list[str]
    ) -> str:
        reply = await self.fake._fault(server, "RCPT")
        if reply is not None:
            return reply
        envelope.rcpt_tos.append(address)
        envelope.rcpt_options.extend(options)
        return "250 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        reply = await self.fake._fault(server, "DATA")
        if reply is not None:
            return reply
        data = envelope.original_content or b""
        # Line ends as a mail store keeps them (LF), so text parts compare as written.
        message = email.message_from_bytes(data.replace(b"\r\n", b"\n"), policy=email.policy.default)
        self.fake.messages.append(
            SmtpMessage(
                mail_from=envelope.mail_from or "",
                rcpt_tos=list(envelope.rcpt_tos),
                data=data,
                message=cast(EmailMessage, message),
                received_at=time.time(),
                tls=self.implicit or session.ssl is not None,
                implicit_tls=self.implicit,
                user=session.auth_data if session.authenticated else None,
            )
        )
        return "250 2.0.0 Message accepted for delivery"
