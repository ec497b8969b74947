"""Email over SMTP: settings, a pure renderer (event to subject, plain text and HTML), and a
thin send through :mod:`monitor.channels.smtp`.

The SMTP host is the user's, so it is a target like a monitor's URL: resolved and judged by
the alerter's ``VettedResolver`` (the SSRF policy, ``MONITOR_ALLOW_CIDRS``), the vetted
address dialled, and the certificate checked against the host name as configured (with the
operator's ``MONITOR_CA_FILE``, as for checks). ``security``: ``starttls`` (port 587, STARTTLS
required, never a fallback to plain text), ``tls`` (implicit TLS, port 465) or ``none`` (plain
SMTP, refused with a username: AUTH in plain text gives the password away).

Threading: every message's ``Message-ID`` is ``<event id@from domain>``; a recovery's
``In-Reply-To`` and ``References`` name its outage's (the up event's ``after_event_id``), so
mail clients that thread by references show an outage and its recovery together.

Pacing: one message per 2 s per channel. Providers throttle bursts from one account:
Exchange Online takes 30 messages a minute per mailbox (its message rate limit for SMTP
submission), Amazon SES one a second in its sandbox; one in 2 s keeps within both.
"""

from __future__ import annotations

import asyncio
import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime
from ipaddress import IPv6Address
from typing import Any, Literal

import aiosmtplib
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from monitor import logging as mlog
from monitor.channels import smtp
from monitor.channels.base import Bucket, ChannelKind, DeliveryError, SendContext
from monitor.channels.notice import Level, notice, summarize
from monitor.channels.text import clip, format_duration, lead, plain, stale_count, when
from monitor.events import Event
from monitor.names import name_problem
from monitor.net.policy import InvalidTarget, literal_address, parse_target_url

log = mlog.get(__name__)

DEFAULT_PORTS = {"starttls": 587, "tls": 465, "none": 25}
MAX_RECIPIENTS = 20
MAX_PASSWORD = 1024
PER_DESTINATION_INTERVAL = 2.0
SEND_TIMEOUT = 60.0  # the whole exchange
MAX_SUBJECT_NAME = 150
# The colour of a message's first line, by the event's level.
COLOURS: dict[Level, str] = {
    "down": "#c0392b",
    "up": "#27ae60",
    "warn": "#d68910",
    "info": "#2874a6",
    "test": "#333",
}

# A bare address (no display name, no quoted local part, ASCII: SMTPUTF8 is not assumed).
_LOCAL = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
ADDRESS = re.compile(rf"({_LOCAL})@({_LABEL}(?:\.{_LABEL})*)")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def parse_address(value: Any) -> Any:
    """An e-mail address as the channel stores it: bare ``local@domain``, ASCII, no CR/LF
    (a header injection), at most 254 characters."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if _CONTROL.search(text):
        raise ValueError("may not contain control characters (CR, LF...)")
    if not text.isascii():
        raise ValueError("must be ASCII (write an international domain in its xn-- form)")
    match = ADDRESS.fullmatch(text)
    if match is None:
        raise ValueError(f"{clip(text, 80)!r} is not an e-mail address like alerts@example.com")
    if len(text) > 254 or len(match.group(1)) > 64:
        raise ValueError("too long for an e-mail address (local part 64, whole 254 characters)")
    return f"{match.group(1)}@{match.group(2).lower()}"


def parse_host(value: Any) -> Any:
    """The SMTP server: a host name (IDNA) or an IP address, nothing else (no port, no URL)."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not text or _CONTROL.search(text) or any(c.isspace() for c in text):
        raise ValueError("must be a host name or an IP address, without spaces")
    bare = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    if bare.count(":") == 1 and bare == text:
        raise ValueError("no port here (port is its own field): a host name or an IP address")
    try:
        if ":" in bare:
            address = literal_address(bare)
            if not isinstance(address, IPv6Address):
                raise InvalidTarget(f"invalid IPv6 address {bare!r}")
            return str(address)
        if any(c in bare for c in "/@?#[]\\"):
            raise InvalidTarget(
                "must be a host name or an IP address (no port, path or URL: port is its own field)"
            )
        return (parse_target_url(f"http://{bare}/").raw_host or "").rstrip(".")
    except InvalidTarget as exc:
        raise ValueError(str(exc)) from None


class EmailSettings(BaseModel):
    """An SMTP account and where its alerts go."""

    model_config = ConfigDict(extra="forbid")

    host: str = Field(description="SMTP server: a host name or an IP address (judged like a monitor's)")
    port: int | None = Field(
        None, ge=1, le=65535, description="default: 587 for starttls, 465 for tls, 25 for none"
    )
    security: Literal["starttls", "tls", "none"] = Field(
        "starttls",
        description="starttls (required, never a fallback to plain text), tls (implicit TLS), "
        "or none (plain SMTP, without a username only)",
    )
    username: str | None = Field(None, min_length=1, max_length=254)
    password: SecretStr | None = None
    from_address: str = Field(description="the sender, a bare address; its domain names the Message-IDs")
    to: list[str] = Field(min_length=1, max_length=MAX_RECIPIENTS, description="recipients (1 to 20)")
    subject_prefix: str | None = Field(None, min_length=1, max_length=40, description='e.g. "[prod]"')

    @field_validator("host", mode="before")
    @classmethod
    def _host(cls, value: Any) -> Any:
        return parse_host(value)

    @field_validator("from_address", mode="before")
    @classmethod
    def _from(cls, value: Any) -> Any:
        return parse_address(value)

    @field_validator("to", mode="before")
    @classmethod
    def _to(cls, value: Any) -> Any:
        if not isinstance(value, list):
            return value
        seen: dict[str, str] = {}
        for item in value:
            address = parse_address(item)
            if isinstance(address, str):
                seen.setdefault(address.lower(), address)
            else:
                return value  # let the type check say what is wrong
        return list(seen.values())

    @field_validator("password")
    @classmethod
    def _password(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not 1 <= len(value.get_secret_value()) <= MAX_PASSWORD:
            raise ValueError(f"must be 1 to {MAX_PASSWORD} characters")
        return value

    @field_validator("username", "subject_prefix")
    @classmethod
    def _text(cls, value: str | None) -> str | None:
        if value is not None:
            problem = name_problem(value)
            if problem is not None:
                raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _consistent(self) -> EmailSettings:
        if (self.username is None) != (self.password is None):
            raise ValueError("username and password go together: give both or neither")
        if self.username is not None and self.security == "none":
            raise ValueError(
                'security "none" sends the password in clear text: use "starttls" or "tls" with a username'
            )
        if self.port is None:
            self.port = DEFAULT_PORTS[self.security]
        return self


# -- rendering -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Mail:
    """One message, independent of the channel: ``send`` adds the addresses and headers.

    ``message_key``: the left part of the Message-ID (an event id); ``reply_to_key``: the one
    this message answers (a recovery's outage), or None.
    """

    subject: str
    text: str
    html: str
    message_key: str
    reply_to_key: str | None = None


def _one_line(text: str, size: int) -> str:
    return clip(_CONTROL.sub(" ", text), size)


def _link(url: str) -> str:
    escaped = html.escape(url)
    if url.startswith(("http://", "https://")):
        return f'<a href="{escaped}">{escaped}</a>'
    return escaped


def _html(title: str, rows: list[tuple[str, str]], colour: str, notes: Sequence[str] = ()) -> str:
    """A small HTML body; ``title``, the rows' values and the ``notes`` are already escaped."""
    cells = "".join(
        f'<tr><td style="padding:2px 12px 2px 0;color:#666">{label}</td><td>{value}</td></tr>'
        for label, value in rows
    )
    paragraphs = "".join(f"<p>{note}</p>" for note in notes)
    return (
        '<!DOCTYPE html><html><body style="font-family:sans-serif">'
        f'<p style="font-size:18px;color:{colour}"><b>{title}</b></p>'
        f"<table>{cells}</table>{paragraphs}"
        '<p style="color:#888;font-size:12px">Sent by monitor.</p></body></html>'
    )


def _text(title: str, rows: list[tuple[str, str]], notes: Sequence[str] = ()) -> str:
    width = max((len(label) for label, _ in rows), default=0) + 2
    table = "\n".join(f"{(label + ':').ljust(width)}{value}" for label, value in rows)
    parts = [title, table, "\n".join(notes), "-- \nSent by monitor.\n"]
    return "\n\n".join(part for part in parts if part)


def render(event: Event) -> Mail:
    """The message for one event: its gist as the first line, then a row per labelled line (and
    the monitor's URL), then the sentences; every user-supplied string escaped in the HTML
    part, and kept to one line in the subject."""
    said = notice(event)
    name = _one_line(event.monitor_name or plain(said.title), MAX_SUBJECT_NAME)
    subject = f"[{said.tag}] {name}" + (f" ({said.aside})" if said.aside else "")
    rows = [("URL", said.url)] if said.url else []
    notes: list[str] = []
    for line in said.lines:
        if line.label is None:
            if not line.in_gist:
                notes.append(plain(line.text))
        else:
            since = f" (since {when(line.since)})" if line.since is not None else ""
            rows.append((line.label, plain(line.text) + since))
    title = plain(said.gist)
    return Mail(
        subject=subject,
        text=_text(title, rows, notes),
        html=_html(
            html.escape(title), _html_rows(rows), COLOURS[said.level], [html.escape(n) for n in notes]
        ),
        message_key=event.event_id,
        reply_to_key=event.after_event_id,
    )


def _html_rows(rows: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The rows of the text part for the HTML part: every value escaped, the URL a link."""
    return [(label, _link(value) if label == "URL" else html.escape(value)) for label, value in rows]


def summary(events: list[Event], max_age: float) -> Mail:
    """Old alerts (from while alerts could not be sent) as one message: per monitor, what
    happened and how it ended, so a mailbox gets one note, not a burst of stale news."""
    rows = [
        (clip(seen.name, 120), f"{seen.counts()}; {seen.state(icons=False)}") for seen in summarize(events)
    ]
    title = (
        f"{len(events)} alerts older than {format_duration(max_age)}, from while alerts could not be "
        f"sent ({when(events[0].at)} to {when(events[-1].at)})"
    )
    return Mail(
        subject=f"[SUMMARY] {len(events)} delayed alerts",
        text=_text(title, rows),
        html=_html(html.escape(title), [(html.escape(k), html.escape(v)) for k, v in rows], "#333"),
        message_key=f"{events[0].event_id}-summary",
    )


def compose(
    events: list[Event], *, max_age: float | None = None, now: datetime | None = None
) -> tuple[Mail, int]:
    """One e-mail per event, so each has its own Message-ID and a recovery threads under its
    outage; old events at the front (older than ``max_age``) are one summary, however many."""
    # The old ones at the front, or the first alone: never several fresh events in one mail.
    first = lead(events[: stale_count(events, max_age, now) or 1], max_age, now, summary, render)
    assert first is not None
    return first


def message_id(key: str, from_address: str) -> str:
    return f"<{key}@{from_address.rsplit('@', 1)[1]}>"


def build_message(mail: Mail, settings: EmailSettings, *, now: datetime) -> EmailMessage:
    """The MIME message: plain text and HTML alternatives, threading headers, and the marks
    that keep auto-responders (vacation replies) quiet (RFC 3834)."""
    message = EmailMessage()
    subject = f"{settings.subject_prefix} {mail.subject}" if settings.subject_prefix else mail.subject
    message["Subject"] = _CONTROL.sub(" ", subject)
    message["From"] = settings.from_address
    message["To"] = ", ".join(settings.to)
    message["Date"] = format_datetime(now.astimezone(UTC))
    message["Message-ID"] = message_id(mail.message_key, settings.from_address)
    if mail.reply_to_key:
        parent = message_id(mail.reply_to_key, settings.from_address)
        message["In-Reply-To"] = parent
        message["References"] = parent
    message["Auto-Submitted"] = "auto-generated"
    message["X-Auto-Response-Suppress"] = "All"
    message.set_content(mail.text)
    message.add_alternative(mail.html, subtype="html")
    return message


# -- sending -------------------------------------------------------------------------------


def limits(destination: str) -> list[Bucket]:
    return [Bucket(destination, 1, PER_DESTINATION_INTERVAL)]


def _settings(channel: Mapping[str, Any]) -> EmailSettings:
    fields = {k: v for k, v in channel.items() if k in EmailSettings.model_fields}
    try:
        return EmailSettings.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        raise DeliveryError(f"email settings invalid: {where}: {first['msg']}", permanent=True) from None


async def deliver(ctx: SendContext, channel: Mapping[str, Any], mail: Any) -> None:
    """Send ``mail`` to the channel's recipients through its SMTP server."""
    settings = _settings(channel)
    if ctx.resolver is None:
        raise DeliveryError("email: the alerter has no resolver for SMTP hosts", permanent=False)
    assert settings.port is not None  # the model fills it in
    server = smtp.Server(
        settings.host,
        settings.port,
        settings.security,
        settings.username,
        settings.password.get_secret_value() if settings.password is not None else None,
    )
    message = build_message(mail, settings, now=datetime.now(UTC))
    try:
        async with asyncio.timeout(SEND_TIMEOUT):
            refused = await smtp.send(ctx.resolver, server, message, ca_file=ctx.settings.ca_file)
    except DeliveryError:
        raise
    except (aiosmtplib.SMTPException, OSError, TimeoutError) as exc:
        raise smtp.classify_error(exc) from None
    if refused:
        # Some recipients took it: sending again would give them a second copy.
        log.warning(
            "email.recipients_refused",
            channel_id=channel.get("id"),
            refused=len(refused),
            replies=sorted({f"{r.code} {clip(r.message, 80)}" for r in refused.values()}),
        )


KIND = ChannelKind(
    name="email",
    title="Email (SMTP)",
    config=EmailSettings,
    compose=compose,
    send=deliver,
    limits=limits,
    secrets=frozenset({"password"}),
    targets=("host",),
)
