"""Email channel: settings, rendering, threading headers, and how SMTP answers are classified,
against a real local SMTP server (aiosmtpd) for what a server can do wrong."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import aiosmtplib
import pytest
from pydantic import ValidationError
from support import FakeSmtp
from support.dns import DNSServer, dns_fixture  # noqa: F401  (the ``dns`` fixture)

from monitor.channels import REGISTRY, email
from monitor.channels import smtp as transport
from monitor.channels.base import DeliveryError, SendContext
from monitor.events import Event
from monitor.net.policy import AddressPolicy
from monitor.net.resolver import VettedResolver

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
DOWN_ID = "0b9e3f0e-1111-4c1e-9d7a-000000000001"
SMTP = aiosmtplib


def event(kind: str = "down", **overrides: Any) -> Event:
    data: dict[str, Any] = {
        "event_id": "0b9e3f0e-1111-4c1e-9d7a-000000000001",
        "kind": kind,
        "monitor_id": 7,
        "monitor_name": "<shop> & co",
        "monitor_url": "https://shop.example/?a=1&b=<2>",
        "telegram_chat_id": None,
        "incident_id": 3,
        "at": "2026-01-01T11:59:00Z",
        "started_at": "2026-01-01T11:59:00Z",
        "ended_at": None,
        "duration_seconds": None,
        "cause": {"status_code": 500, "error": None, "latency_ms": 12.0},
        "seq": 1,
    }
    if kind == "up":
        data.update(
            event_id="0b9e3f0e-1111-4c1e-9d7a-000000000002",
            at="2026-01-01T12:04:00Z",
            ended_at="2026-01-01T12:04:00Z",
            duration_seconds=300.0,
            after_event_id="0b9e3f0e-1111-4c1e-9d7a-000000000001",
            seq=2,
        )
    if kind == "test":
        data.update(monitor_id=None, monitor_url="", incident_id=0, started_at=None, cause={}, seq=None)
    data.update(overrides)
    return Event(**data)


def settings(**overrides: Any) -> email.EmailSettings:
    values: dict[str, Any] = {
        "host": "smtp.example.com",
        "username": "monitor",
        "password": "s3cret-pass",
        "from_address": "alerts@example.com",
        "to": ["ops@example.com", "dev@example.com"],
        **overrides,
    }
    return email.EmailSettings.model_validate(values)


# -- settings ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({}, {"port": 587, "security": "starttls", "host": "smtp.example.com"}),
        ({"security": "tls"}, {"port": 465}),
        ({"security": "none", "username": None, "password": None}, {"port": 25}),
        ({"port": 2525}, {"port": 2525}),
        ({"host": "SMTP.Example.COM."}, {"host": "smtp.example.com"}),
        ({"host": "bücher.example"}, {"host": "xn--bcher-kva.example"}),
        ({"host": "[2001:db8::1]"}, {"host": "2001:db8::1"}),
        ({"host": "192.0.2.10"}, {"host": "192.0.2.10"}),
        ({"from_address": "Alerts@Example.COM"}, {"from_address": "Alerts@example.com"}),
        ({"to": ["a@x.example", "A@X.example", "b@x.example"]}, {"to": ["a@x.example", "b@x.example"]}),
        ({"username": None, "password": None}, {"username": None, "password": None}),
        ({"subject_prefix": "[prod]"}, {"subject_prefix": "[prod]"}),
    ],
)
def test_settings_accepted(given: dict[str, Any], expected: dict[str, Any]) -> None:
    got = settings(**given)
    for name, value in expected.items():
        assert getattr(got, name) == value, name


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ({"host": "smtp.example.com:587"}, "port is its own field"),
        ({"host": "smtp://smtp.example.com"}, "host name or an IP address"),
        ({"host": "a b.example"}, "without spaces"),
        ({"host": "0x7f.1"}, "non-canonical"),
        ({"host": ""}, "host name or an IP address"),
        ({"port": 0}, "greater than or equal to 1"),
        ({"security": "ssl"}, "'starttls', 'tls' or 'none'"),
        ({"security": "none"}, "clear text"),
        ({"password": None}, "go together"),
        ({"username": None}, "go together"),
        ({"password": ""}, "1 to 1024"),
        ({"from_address": "not an address"}, "not an e-mail address"),
        ({"from_address": "Alerts <alerts@example.com>"}, "not an e-mail address"),
        ({"to": []}, "at least 1"),
        ({"to": [f"u{i}@example.com" for i in range(21)]}, "at most 20"),
        ({"to": ["ops@example.com\r\nBcc: everyone@example.com"]}, "control characters"),
        ({"to": ["ops@example.com\nX: y"]}, "control characters"),
        ({"to": ["öps@example.com"]}, "ASCII"),
        ({"to": ["x" * 65 + "@example.com"]}, "too long"),
        ({"subject_prefix": "[a]\r\nBcc: x@y.z"}, "control characters"),
        ({"username": "me\r\nRCPT TO:<x@y.z>"}, "control characters"),
        ({"extra": 1}, "Extra inputs"),
    ],
)
def test_settings_refused(given: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValidationError) as caught:
        settings(**given)
    assert problem in str(caught.value)
    assert "s3cret-pass" not in str(caught.value)


def test_password_is_a_secret_of_the_kind() -> None:
    kind = REGISTRY["email"]
    assert kind.secrets == {"password"}
    assert "s3cret-pass" not in repr(settings())
    schema = kind.config.model_json_schema()
    assert schema["properties"]["password"]["anyOf"][0]["writeOnly"] is True


# -- rendering -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "subject", "in_text", "reply_to"),
    [
        ("down", "[DOWN] <shop> & co", ["<shop> & co is DOWN", "HTTP 500", "11:59:00 UTC"], None),
        ("up", "[UP] <shop> & co (after 5m)", ["is UP again", "5m (since 2026-01-01 11:59"], DOWN_ID),
        ("test", "[TEST] <shop> & co", ["channel <shop> & co works"], None),
    ],
)
def test_render(kind: str, subject: str, in_text: list[str], reply_to: str | None) -> None:
    mail = email.render(event(kind))
    assert mail.subject == subject
    for text in in_text:
        assert text in mail.text
    assert mail.reply_to_key == reply_to
    assert mail.message_key == event(kind).event_id
    # Every user-supplied string is escaped in the HTML part.
    assert "<shop>" not in mail.html and "&lt;shop&gt; &amp; co" in mail.html
    assert "<2>" not in mail.html


def test_down_html_links_only_web_urls() -> None:
    html = email.render(event()).html
    assert '<a href="https://shop.example/?a=1&amp;b=&lt;2&gt;">' in html
    hostile = email.render(event(monitor_url='javascript:alert("x")')).html
    assert "<a href" not in hostile and "javascript:alert(&quot;x&quot;)" in hostile


def test_error_cause_wins_over_status() -> None:
    mail = email.render(event(cause={"status_code": None, "error": "connection refused <x>"}))
    assert "connection refused <x>" in mail.text and "connection refused &lt;x&gt;" in mail.html


def test_subject_stays_one_short_line() -> None:
    mail = email.render(event(monitor_name="a\u2028b" + "x" * 500))
    assert len(mail.subject) <= len("[DOWN] ") + email.MAX_SUBJECT_NAME
    message = email.build_message(email.render(event(monitor_name="a\r\nBcc: x@y.z")), settings(), now=NOW)
    assert "\n" not in str(message["Subject"]) and message["Bcc"] is None


@pytest.mark.parametrize("count", [1, 2, 5])
def test_compose_one_event_per_message(count: int) -> None:
    events = [event(event_id=f"id-{i}", monitor_id=i) for i in range(count)]
    mail, covered = email.compose(events, max_age=3600, now=NOW)
    assert covered == 1 and mail.message_key == "id-0"


def test_compose_sums_up_stale_events() -> None:
    old = [
        event(event_id="old-1", at="2025-12-31T08:00:00Z", started_at="2025-12-31T08:00:00Z"),
        event("up", event_id="old-2", at="2025-12-31T08:05:00Z"),
        event(event_id="old-3", monitor_id=8, monitor_name="api", at="2025-12-31T09:00:00Z"),
    ]
    fresh = event(event_id="fresh", monitor_id=9)
    mail, covered = email.compose([*old, fresh], max_age=3600, now=NOW)
    assert covered == 3
    assert mail.subject == "[SUMMARY] 3 delayed alerts" and mail.reply_to_key is None
    assert "1 down, 1 up; last UP at 2025-12-31 08:05:00 UTC" in mail.text
    assert "api" in mail.text and "&lt;shop&gt;" in mail.html
    assert email.compose([fresh], max_age=3600, now=NOW)[0].message_key == "fresh"
    with pytest.raises(ValueError):
        email.compose([])


# -- the message -------------------------------------------------------------------------


def test_message_threads_recovery_under_outage() -> None:
    config = settings(subject_prefix="[prod]")
    down = email.build_message(email.render(event()), config, now=NOW)
    up = email.build_message(email.render(event("up")), config, now=NOW + timedelta(minutes=5))
    assert down["Message-ID"] == "<0b9e3f0e-1111-4c1e-9d7a-000000000001@example.com>"
    assert down["In-Reply-To"] is None and down["References"] is None
    assert up["In-Reply-To"] == down["Message-ID"] and up["References"] == down["Message-ID"]
    assert up["Message-ID"] != down["Message-ID"]
    assert down["Subject"] == "[prod] [DOWN] <shop> & co"
    assert down["From"] == "alerts@example.com"
    assert down["To"] == "ops@example.com, dev@example.com"
    assert down["Date"] == "Thu, 01 Jan 2026 12:00:00 +0000"
    assert down["Auto-Submitted"] == "auto-generated"
    assert [p.get_content_type() for p in down.iter_parts()] == ["text/plain", "text/html"]
    assert "s3cret-pass" not in down.as_string()


def test_up_without_its_outage_id_does_not_thread() -> None:
    up = email.build_message(email.render(event("up", after_event_id=None)), settings(), now=NOW)
    assert up["In-Reply-To"] is None


def test_server_repr_hides_the_password() -> None:
    assert "s3cret" not in repr(transport.Server("h.example", 587, "starttls", "me", "s3cret"))


def test_limits_one_message_per_two_seconds_per_destination() -> None:
    (bucket,) = email.limits("email:5")
    assert (bucket.key, bucket.count, bucket.per) == ("email:5", 1, 2.0)


# -- classification ------------------------------------------------------------------------


def _cert_error() -> ssl.SSLCertVerificationError:
    exc = ssl.SSLCertVerificationError(1, "certificate verify failed")
    exc.verify_message = "Hostname mismatch, certificate is not valid for 'mail.test'."
    return exc


def _connect_error_from(cause: BaseException) -> aiosmtplib.SMTPConnectError:
    try:
        raise aiosmtplib.SMTPConnectError("Error connecting to x on port None") from cause
    except aiosmtplib.SMTPConnectError as exc:
        return exc


def _refused(code: int) -> aiosmtplib.SMTPRecipientRefused:
    return aiosmtplib.SMTPRecipientRefused(code, "5.1.1 Mailbox unavailable", "a@b.c")


def _wrong_version() -> ssl.SSLError:
    exc = ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER] wrong version number")
    exc.reason = "WRONG_VERSION_NUMBER"
    return exc


@pytest.mark.parametrize(
    ("exc", "permanent", "says"),
    [
        (SMTP.SMTPAuthenticationError(535, "5.7.8 Invalid credentials"), True, "authentication failed: 535"),
        (aiosmtplib.SMTPAuthenticationError(454, "4.7.0 Temporary authentication failure"), False, "454"),
        (aiosmtplib.SMTPSenderRefused(550, "5.7.1 not allowed", "a@b.c"), True, "sender refused: 550"),
        (aiosmtplib.SMTPSenderRefused(421, "4.7.0 closing", "a@b.c"), False, "421"),
        (aiosmtplib.SMTPSenderRefused(451, "4.3.0 local error", "a@b.c"), False, "451"),
        (aiosmtplib.SMTPDataError(554, "5.7.1 Message rejected"), True, "message refused: 554"),
        (aiosmtplib.SMTPDataError(452, "4.3.1 Insufficient storage"), False, "452"),
        (aiosmtplib.SMTPConnectResponseError(421, "4.7.0 Too many connections"), False, "greeting: 421"),
        (aiosmtplib.SMTPConnectResponseError(554, "5.7.1 No SMTP service here"), True, "greeting: 554"),
        (SMTP.SMTPRecipientsRefused([_refused(550)]), True, "every recipient: 550"),
        (SMTP.SMTPRecipientsRefused([_refused(550), _refused(450)]), False, "every recipient"),
        (aiosmtplib.SMTPServerDisconnected("Connection lost"), False, "connection failed: Connection lost"),
        (aiosmtplib.SMTPReadTimeoutError("Timed out waiting for server response"), False, "timed out"),
        (aiosmtplib.SMTPConnectTimeoutError("Timed out connecting"), False, "timed out"),
        (TimeoutError(), False, "timed out"),
        (ConnectionResetError(104, "Connection reset by peer"), False, "connection failed"),
        (_connect_error_from(ConnectionRefusedError(111, "refused")), False, "failed: [Errno 111] refused"),
        (_cert_error(), True, "certificate error: Hostname mismatch"),
        (_connect_error_from(_cert_error()), True, "certificate error"),
        (_connect_error_from(_wrong_version()), True, "did not answer in TLS"),
        (ssl.SSLError(1, "[SSL: SSLV3_ALERT_HANDSHAKE_FAILURE]"), False, "TLS error"),
        (aiosmtplib.SMTPException("SMTP STARTTLS extension not supported by server."), True, "STARTTLS"),
        (aiosmtplib.SMTPException("The SMTP AUTH extension is not supported by this server."), True, "AUTH"),
        (aiosmtplib.SMTPNotSupported("SMTPUTF8 is not supported by this server"), True, "SMTPUTF8"),
    ],
)  # fmt: skip
def test_classify_error(exc: BaseException, permanent: bool, says: str) -> None:
    got = transport.classify_error(exc)
    assert got.permanent is permanent, got
    assert says in str(got)
    assert not got.throttled


def test_classify_refuses_what_is_not_smtp() -> None:
    with pytest.raises(TypeError):
        transport.classify_error(ValueError("a bug"))


# -- against a real SMTP server -----------------------------------------------------------


@pytest.fixture
async def smtp() -> AsyncIterator[FakeSmtp]:
    async with FakeSmtp() as server:
        yield server


@pytest.fixture
def ca_file(smtp: FakeSmtp, tmp_path: Path) -> str:
    return str(smtp.write_ca(tmp_path / "ca.pem"))


def context(ca_file: str | None, *, nameservers: tuple[str, ...] = ()) -> SendContext:
    resolver = VettedResolver(AddressPolicy(["127.0.0.0/8"]), nameservers)
    return SendContext(
        http=cast(Any, None),
        web=cast(Any, None),
        settings=cast(Any, SimpleNamespace(ca_file=ca_file)),
        resolver=resolver,
    )


def channel(smtp: FakeSmtp, **overrides: Any) -> dict[str, Any]:
    return {
        "id": 1,
        "kind": "email",
        "name": "Ops",
        "host": "127.0.0.1",
        "port": smtp.port,
        "security": "starttls",
        "username": smtp.user,
        "password": smtp.password,
        "from_address": "alerts@example.com",
        "to": ["ops@example.com"],
        **overrides,
    }


async def test_starttls_auth_and_threading(smtp: FakeSmtp, ca_file: str) -> None:
    ctx = context(ca_file)
    await email.deliver(ctx, channel(smtp), email.render(event()))
    await email.deliver(ctx, channel(smtp), email.render(event("up")))
    down, up = smtp.messages
    assert down.tls and not down.implicit_tls and down.user == "monitor"
    assert down.rcpt_tos == ["ops@example.com"] and down.mail_from == "alerts@example.com"
    assert down.subject == "[DOWN] <shop> & co" and up.subject == "[UP] <shop> & co (after 5m)"
    assert up.in_reply_to == down.message_id and up.references == [down.message_id]
    assert down.text is not None and "HTTP 500" in down.text
    assert down.html is not None and "&lt;shop&gt;" in down.html


async def test_implicit_tls(smtp: FakeSmtp, ca_file: str) -> None:
    await email.deliver(
        context(ca_file), channel(smtp, security="tls", port=smtp.tls_port), email.render(event())
    )
    (message,) = smtp.messages
    assert message.implicit_tls and message.user == "monitor"


async def test_localhost_is_sent_to_when_loopback_is_allowed(smtp: FakeSmtp, ca_file: str) -> None:
    # localhost as /etc/hosts says (127.0.0.1, maybe ::1 too): every answer is loopback, so the
    # allowed one is dialled; the certificate names localhost.
    await email.deliver(context(ca_file), channel(smtp, host="localhost"), email.render(event()))
    (message,) = smtp.messages
    assert message.tls and message.user == "monitor"


async def test_plain_smtp_without_auth() -> None:
    async with FakeSmtp(user=None) as server:
        await email.deliver(
            context(None),
            channel(server, security="none", username=None, password=None),
            email.render(event("test")),
        )
        (message,) = server.messages
        assert not message.tls and message.subject == "[TEST] <shop> & co"


async def test_untrusted_certificate_is_permanent(smtp: FakeSmtp) -> None:
    with pytest.raises(DeliveryError) as caught:
        await email.deliver(context(None), channel(smtp), email.render(event()))
    assert caught.value.permanent and "certificate" in str(caught.value)
    with pytest.raises(DeliveryError) as caught:
        await email.deliver(
            context(None), channel(smtp, security="tls", port=smtp.tls_port), email.render(event())
        )
    assert caught.value.permanent and "certificate" in str(caught.value)
    assert smtp.messages == [] and smtp.auth_attempts == []


async def test_certificate_is_checked_against_the_configured_name(
    smtp: FakeSmtp, ca_file: str, dns: DNSServer
) -> None:
    """The vetted IP is dialled, but TLS verifies the name the user configured: a certificate
    for 127.0.0.1 and localhost does not pass for mail.test, though mail.test is 127.0.0.1."""
    dns.zone["mail.test"] = [("A", "127.0.0.1")]
    ctx = context(ca_file, nameservers=(dns.nameserver,))
    with pytest.raises(DeliveryError) as caught:
        await email.deliver(ctx, channel(smtp, host="mail.test"), email.render(event()))
    assert caught.value.permanent and "mail.test" in str(caught.value)
    assert dns.protocol.lookups("mail.test") == 1 and smtp.auth_attempts == []


@pytest.mark.parametrize(
    ("host", "permanent", "says"),
    [
        ("10.0.0.1", True, "blocked: 10.0.0.1"),
        ("::1", True, "blocked: ::1 (loopback ::1/128)"),  # only 127.0.0.0/8 is allowed
        ("v6.test", True, "blocked: v6.test resolves to ::1"),
        ("nowhere.test", False, "cannot resolve nowhere.test"),
        ("private.test", True, "resolves to 192.168.1.5"),
    ],
)
async def test_guard_refuses_hosts_the_policy_denies(
    smtp: FakeSmtp, ca_file: str, dns: DNSServer, host: str, permanent: bool, says: str
) -> None:
    dns.zone["private.test"] = [("A", "192.168.1.5")]
    dns.zone["v6.test"] = [("AAAA", "::1")]
    ctx = context(ca_file, nameservers=(dns.nameserver,))
    with pytest.raises(DeliveryError) as caught:
        await email.deliver(ctx, channel(smtp, host=host), email.render(event()))
    assert caught.value.permanent is permanent and says in str(caught.value)
    assert smtp.messages == []


@pytest.mark.parametrize(
    ("code", "stage", "permanent"),
    [
        (550, "RCPT", True),
        (450, "RCPT", False),
        (421, "MAIL", False),
        (554, "DATA", True),
        (451, "DATA", False),
        (421, "CONNECT", False),
    ],
)
async def test_server_replies(smtp: FakeSmtp, ca_file: str, code: int, stage: str, permanent: bool) -> None:
    smtp.fail(code, stage=stage)
    with pytest.raises(DeliveryError) as caught:
        await email.deliver(context(ca_file), channel(smtp), email.render(event()))
    assert caught.value.permanent is permanent and str(code) in str(caught.value)
    await email.deliver(context(ca_file), channel(smtp), email.render(event()))
    assert len(smtp.messages) == 1


async def test_wrong_password_is_permanent_and_not_quoted(smtp: FakeSmtp, ca_file: str) -> None:
    with pytest.raises(DeliveryError) as caught:
        await email.deliver(context(ca_file), channel(smtp, password="wrong-pass"), email.render(event()))
    assert caught.value.permanent and "535" in str(caught.value) and "wrong-pass" not in str(caught.value)


async def test_no_starttls_means_no_mail(ca_file: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that does not offer STARTTLS gets nothing, not a fallback to plain text."""
    async with FakeSmtp(user=None) as server:
        make = server._protocol

        def without_starttls(*, implicit: bool) -> Any:
            conn = make(implicit=implicit)
            conn.tls_context = None  # aiosmtpd offers STARTTLS only with a context
            return conn

        monkeypatch.setattr(server, "_protocol", without_starttls)
        with pytest.raises(DeliveryError) as caught:
            await email.deliver(
                context(ca_file), channel(server, username=None, password=None), email.render(event())
            )
        assert caught.value.permanent and "STARTTLS" in str(caught.value)
        assert server.messages == []


async def test_connection_refused_is_retried(ca_file: str) -> None:
    async with FakeSmtp() as server:
        port = server.port
    with pytest.raises(DeliveryError) as caught:
        await email.deliver(context(ca_file), {**channel(server), "port": port}, email.render(event()))
    assert not caught.value.permanent and "refused" in str(caught.value)


async def test_a_hang_times_out_and_is_retried(
    smtp: FakeSmtp, ca_file: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transport, "COMMAND_TIMEOUT", 0.5)
    smtp.hang(stage="MAIL")
    with pytest.raises(DeliveryError) as caught:
        await email.deliver(context(ca_file), channel(smtp), email.render(event()))
    assert not caught.value.permanent and "timed out" in str(caught.value)
    smtp.release()


async def test_no_resolver_waits() -> None:
    ctx = SendContext(http=cast(Any, None), web=cast(Any, None), settings=cast(Any, None))
    with pytest.raises(DeliveryError) as caught:
        await email.deliver(ctx, {"host": "x.example", "from_address": "a@b.co", "to": ["c@d.co"]}, None)
    assert not caught.value.permanent


async def test_invalid_stored_settings_are_permanent() -> None:
    with pytest.raises(DeliveryError) as caught:
        await email.deliver(context(None), {"host": "x.example", "to": []}, email.render(event()))
    assert caught.value.permanent and "settings invalid" in str(caught.value)


# -- the other kinds of events ----------------------------------------------------------------

CHECKER = {"monitor_id": None, "monitor_name": "", "monitor_url": "", "incident_id": 0, "cause": {}}


@pytest.mark.parametrize(
    ("kind", "overrides", "subject", "in_text", "colour"),
    [
        (
            "remind",
            {"details": {"reminder": 2, "reminder_max": 5}, "after_event_id": DOWN_ID},
            "[STILL DOWN] <shop> & co (reminder 2 of 5)",
            ["<shop> & co is still DOWN: HTTP 500", "Reminder 2 of 5", "Latest cause: HTTP 500"],
            "#c0392b",
        ),
        (
            "acknowledged",
            {"details": {"acknowledged_by": "Ada <ops>", "note": "on it"}, "after_event_id": DOWN_ID},
            "[ACKNOWLEDGED] <shop> & co (by Ada <ops>)",
            ["<shop> & co acknowledged by Ada <ops>: on it", "Reminders of this outage stop"],
            "#2874a6",
        ),
        (
            "degraded",
            {"details": {"reason": "certificate expires in 3 days (2026-12-03)"}},
            "[DEGRADED] <shop> & co",
            ["is DEGRADED: certificate expires in 3 days (2026-12-03)", "Since:  2026-01-01 11:59:00 UTC"],
            "#d68910",
        ),
        (
            "degraded_end",
            {"duration_seconds": 120.0},
            "[NOT DEGRADED] <shop> & co (after 2m)",
            ["is no longer degraded", "Degraded for: 2m (since 2026-01-01 11:59:00 UTC)"],
            "#27ae60",
        ),
        (
            "flapping",
            {"details": {"changes": 6, "window_minutes": 20}},
            "[FLAPPING] <shop> & co",
            ["is FLAPPING: 6 changes in 20 min; alerts paused until it is stable for 20 min"],
            "#d68910",
        ),
        (
            "flapping_end",
            {"details": {"status": "down"}},
            "[STABLE] <shop> & co",
            ["stopped flapping; now DOWN"],
            "#c0392b",
        ),
        (
            "maintenance_start",
            {"details": {"window": "Nightly <ops>", "until": "2026-01-01T14:00:00Z"}},
            "[MAINTENANCE] <shop> & co",
            ["Maintenance for <shop> & co: Nightly <ops> until 2026-01-01 14:00:00 UTC"],
            "#2874a6",
        ),
        (
            "maintenance_end",
            {"details": {"window": "Nightly <ops>"}},
            "[MAINTENANCE OVER] <shop> & co",
            ["Maintenance for <shop> & co ended: Nightly <ops>"],
            "#27ae60",
        ),
        (
            "connectivity_lost",
            {**CHECKER, "details": {"reason": "no route <x>"}},
            "[NETWORK] The checker's network is down",
            ["Reason: no route <x>", "no monitor is marked down meanwhile"],
            "#d68910",
        ),
        (
            "connectivity_restored",
            {**CHECKER, "duration_seconds": 300.0, "started_at": None},
            "[NETWORK] The checker's network is back (after 5m)",
            ["Cut off for: 5m"],
            "#27ae60",
        ),
        ("brand_new", {}, "[BRAND_NEW] <shop> & co", ["<shop> & co: brand_new"], "#2874a6"),
    ],
)
def test_other_kinds(
    kind: str, overrides: dict[str, Any], subject: str, in_text: list[str], colour: str
) -> None:
    mail = email.render(event(kind, **overrides))
    assert mail.subject == subject
    for text in in_text:
        assert text in mail.text, (text, mail.text)
    assert f"color:{colour}" in mail.html
    assert "<shop>" not in mail.html and "<ops>" not in mail.html and "<x>" not in mail.html
    # A reminder threads under its outage, like a recovery.
    assert mail.reply_to_key == overrides.get("after_event_id")


def test_a_sentence_the_first_line_says_is_not_repeated() -> None:
    mail = email.render(event("flapping", details={"changes": 6, "window_minutes": 20}))
    assert mail.text.count("alerts paused") == 1 and mail.html.count("alerts paused") == 1
    held = email.render(event(details={"note": "Alert held while maintenance window 'Nightly' was open"}))
    assert "\n\nAlert held while maintenance window 'Nightly' was open\n\n" in held.text
    assert "<p>Alert held while maintenance window &#x27;Nightly&#x27; was open</p>" in held.html
