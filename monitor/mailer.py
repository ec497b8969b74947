"""The operator's own mail: invitations and password resets, through the SMTP server of
``MONITOR_SMTP_*`` with the email channel's client (``channels/smtp.py``: TLS verified against
the host name, ``MONITOR_CA_FILE`` trusted too, AUTH only over TLS, failures classified).

The server is the operator's, named in the settings, not a user's, so it is not held to the
SSRF policy of checks and channels (an SMTP relay on the LAN is the usual case); it is still
dialled through the same vetted resolution, with every address allowed. A letter carries a
link whose token sits in the URL's fragment (``#``), which browsers never send to a server, so
no access log, proxy log or Referer ever holds it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime

from monitor.channels import smtp
from monitor.channels.base import DeliveryError
from monitor.config import Settings
from monitor.net.policy import AddressPolicy
from monitor.net.resolver import VettedResolver

__all__ = ["DeliveryError", "Letter", "Mailer"]

SECURITY_PORTS = {"starttls": 587, "tls": 465, "none": 25}
EVERYWHERE = ("0.0.0.0/0", "::/0")


@dataclass(frozen=True)
class Letter:
    to: str
    subject: str
    text: str = ""  # never logged: it holds the link


class Mailer:
    """Sends letters through the configured server; one per process, closed with it."""

    def __init__(self, settings: Settings) -> None:
        if not settings.smtp_host or not settings.smtp_from:
            raise ValueError("MONITOR_SMTP_HOST and MONITOR_SMTP_FROM are both needed to send mail")
        self._server = smtp.Server(
            host=settings.smtp_host,
            port=settings.smtp_port or SECURITY_PORTS[settings.smtp_security],
            security=settings.smtp_security,
            username=settings.smtp_username,
            password=settings.smtp_password.get_secret_value() if settings.smtp_password else None,
        )
        self._from = settings.smtp_from
        self._ca_file = settings.ca_file
        self._resolver = VettedResolver(AddressPolicy(EVERYWHERE), settings.dns_servers)

    @classmethod
    def of(cls, settings: Settings) -> Mailer | None:
        """The mailer of the settings; None when no server is set."""
        return cls(settings) if settings.smtp_host else None

    def message(self, letter: Letter, *, now: datetime | None = None) -> EmailMessage:
        message = EmailMessage()
        message["Subject"] = letter.subject
        message["From"] = self._from
        message["To"] = letter.to
        message["Date"] = format_datetime((now or datetime.now(UTC)).astimezone(UTC))
        message["Message-ID"] = f"<{uuid.uuid4().hex}@{self._from.rsplit('@', 1)[1]}>"
        message["Auto-Submitted"] = "auto-generated"
        message.set_content(letter.text)
        return message

    async def send(self, letter: Letter) -> None:
        """Submit ``letter``; a DeliveryError (whose text names no secret) when it was not taken."""
        try:
            refused = await smtp.send(
                self._resolver, self._server, self.message(letter), ca_file=self._ca_file
            )
        except DeliveryError:
            raise
        except Exception as exc:  # aiosmtplib's and ssl's errors: classified as the channel does
            try:
                raise smtp.classify_error(exc) from None
            except TypeError:
                raise exc from None
        if refused:
            raise DeliveryError("the SMTP server refused the recipient", permanent=True)

    async def close(self) -> None:
        await self._resolver.close()
