"""The fake SMTP server speaks real SMTP: STARTTLS, implicit TLS, AUTH, scripted faults.

Driven with aiosmtplib, the client the email channel uses.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from email.message import EmailMessage
from email.utils import make_msgid
from typing import Any

import aiosmtplib
import pytest

from .fake_smtp import FakeSmtp
from .waiting import wait_for


@pytest.fixture
async def smtp() -> AsyncIterator[FakeSmtp]:
    async with FakeSmtp() as server:
        yield server


def mail(subject: str = "api is down", *, reply_to_id: str | None = None) -> EmailMessage:
    message = EmailMessage()
    message["From"] = "monitor@example.test"
    message["To"] = "ops@example.test"
    message["Subject"] = subject
    message["Message-ID"] = make_msgid(domain="monitor.test")
    if reply_to_id:
        message["In-Reply-To"] = reply_to_id
        message["References"] = reply_to_id
    message.set_content(f"{subject}\n")
    message.add_alternative(f"<p>{subject}</p>", subtype="html")
    return message


async def send(smtp: FakeSmtp, message: EmailMessage | None = None, **options: Any) -> Any:
    """Submission on the STARTTLS port as the configured user, unless ``options`` say otherwise."""
    settings: dict[str, Any] = {
        "hostname": "127.0.0.1",
        "port": smtp.port,
        "start_tls": True,
        "tls_context": smtp.client_tls_context(),
        "username": smtp.user,
        "password": smtp.password,
        "timeout": 5,
        **options,
    }
    return await aiosmtplib.send(message or mail(), **settings)


async def test_starttls_auth_and_what_is_recorded(smtp: FakeSmtp) -> None:
    down = mail()
    await send(smtp, down)
    up = mail("api is up", reply_to_id=down["Message-ID"])
    await send(smtp, up, recipients=["ops@example.test", "oncall@example.test"])

    first, second = await smtp.wait_messages(2, timeout=5)
    assert (first.mail_from, first.rcpt_tos) == ("monitor@example.test", ["ops@example.test"])
    assert (first.tls, first.implicit_tls, first.user) == (True, False, "monitor")
    assert first.subject == "api is down" and first.message_id == down["Message-ID"]
    assert first.text == "api is down\n" and first.html == "<p>api is down</p>\n"
    assert second.in_reply_to == down["Message-ID"] and second.references == [down["Message-ID"]]
    assert smtp.messages_to("oncall@example.test") == [second]
    assert [(m, ok) for m, _, ok in smtp.auth_attempts] == [("PLAIN", True), ("PLAIN", True)]


async def test_implicit_tls(smtp: FakeSmtp) -> None:
    await send(smtp, port=smtp.tls_port, start_tls=False, use_tls=True)
    [message] = smtp.messages
    assert message.tls and message.implicit_tls and message.user == "monitor"
    # The certificate is for localhost and 127.0.0.1 only, from the fake's own CA.
    with pytest.raises(aiosmtplib.SMTPConnectError):
        await send(
            smtp, port=smtp.tls_port, start_tls=False, use_tls=True, tls_context=ssl.create_default_context()
        )


async def test_auth_login_and_wrong_credentials(smtp: FakeSmtp) -> None:
    client = aiosmtplib.SMTP(
        hostname="127.0.0.1", port=smtp.port, start_tls=True, tls_context=smtp.client_tls_context(), timeout=5
    )
    async with client:
        await client.ehlo()
        await client.auth_login("monitor", smtp.password)
        await client.send_message(mail())
    with pytest.raises(aiosmtplib.SMTPAuthenticationError) as refused:
        await send(smtp, password="wrong")
    assert refused.value.code == 535
    # aiosmtplib tries each mechanism the server offers before giving up.
    assert smtp.auth_attempts[0] == ("LOGIN", "monitor", True)
    assert {m for m, _, _ in smtp.auth_attempts[1:]} == {"PLAIN", "LOGIN"}
    assert all(login == "monitor" and not ok for _, login, ok in smtp.auth_attempts[1:])
    assert len(smtp.messages) == 1


async def test_no_auth_without_tls_and_no_mail_without_auth(smtp: FakeSmtp) -> None:
    # AUTH is only offered over TLS, as on a real submission port.
    with pytest.raises(aiosmtplib.SMTPException, match="AUTH"):
        await send(smtp, start_tls=False)
    with pytest.raises(aiosmtplib.SMTPSenderRefused) as refused:
        await send(smtp, username=None, password=None)
    assert refused.value.code == 530
    assert smtp.messages == []


async def test_require_starttls() -> None:
    async with FakeSmtp(user=None, require_starttls=True) as smtp:
        with pytest.raises(aiosmtplib.SMTPResponseException) as refused:
            await send(smtp, start_tls=False, username=None, password=None)
        assert refused.value.code == 530
        await send(smtp, username=None, password=None)
        assert smtp.messages[0].user is None and smtp.messages[0].tls


@pytest.mark.parametrize(
    ("code", "stage", "error"),
    [
        (421, "CONNECT", aiosmtplib.SMTPConnectResponseError),
        (421, "MAIL", aiosmtplib.SMTPResponseException),
        (451, "MAIL", aiosmtplib.SMTPSenderRefused),
        (550, "RCPT", aiosmtplib.SMTPRecipientsRefused),
        (554, "DATA", aiosmtplib.SMTPDataError),
    ],
)
async def test_scripted_replies(smtp: FakeSmtp, code: int, stage: str, error: type[Exception]) -> None:
    smtp.fail(code, stage=stage)
    with pytest.raises(error) as refused:
        await send(smtp)
    failure = refused.value
    if isinstance(failure, aiosmtplib.SMTPRecipientsRefused):
        failure = failure.recipients[0]
    assert getattr(failure, "code", None) == code, failure
    assert smtp.messages == []
    await send(smtp)  # only the next session
    assert len(smtp.messages) == 1


async def test_permanent_refusal_until_reset(smtp: FakeSmtp) -> None:
    smtp.fail(550, stage="RCPT", times=None)
    for _ in range(2):
        with pytest.raises(aiosmtplib.SMTPRecipientsRefused):
            await send(smtp)
    smtp.reset()
    await send(smtp)
    assert len(smtp.messages) == 1


async def test_hang_at_data_and_at_connect(smtp: FakeSmtp) -> None:
    smtp.hang(stage="DATA", times=1)
    with pytest.raises(aiosmtplib.SMTPTimeoutError):
        await send(smtp, timeout=0.5)
    await wait_for(lambda: smtp.held == 0, timeout=5)  # the client left: nothing recorded
    assert smtp.messages == []

    smtp.hang(stage="DATA")
    pending = asyncio.ensure_future(send(smtp))
    await wait_for(lambda: smtp.held == 1, timeout=5)
    smtp.release()
    await pending
    assert len(smtp.messages) == 1

    smtp.hang(stage="CONNECT", times=1)
    with pytest.raises(aiosmtplib.SMTPTimeoutError):
        await send(smtp, timeout=0.5)
    smtp.release()
    await send(smtp)
    assert len(smtp.messages) == 2


async def test_wait_messages_names_what_it_saw(smtp: FakeSmtp) -> None:
    with pytest.raises(AssertionError, match="no messages"):
        await smtp.wait_messages(1, timeout=0.2)
