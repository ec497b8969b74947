"""Email through the real processes, to a real local SMTP server (aiosmtpd): STARTTLS with a
certificate from a private CA the alerter trusts through ``MONITOR_CA_FILE``, AUTH, a test
message, an outage and its recovery once each, in order and threaded; and an SMTP host the
SSRF policy denies is refused by the api and, should it become denied later, never dialled."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from support import ApiClient, FakeSmtp, ProcessFactory, TargetServer, wait_for
from support.alerts import watched_monitor

from monitor.secrets import MASK

pytestmark = pytest.mark.e2e


@pytest.fixture
async def smtp() -> AsyncIterator[FakeSmtp]:
    async with FakeSmtp(require_starttls=True) as server:
        yield server


def config(smtp: FakeSmtp, **overrides: Any) -> dict[str, Any]:
    return {
        "host": "127.0.0.1",
        "port": smtp.port,
        "security": "starttls",
        "username": smtp.user,
        "password": smtp.password,
        "from_address": "alerts@monitor.example",
        "to": ["ops@example.com", "dev@example.com"],
        "subject_prefix": "[e2e]",
        **overrides,
    }


async def test_email_outage_and_recovery_arrive_once_each_threaded(
    db: asyncpg.Connection,
    procs: ProcessFactory,
    api_client: Callable[[str], ApiClient],
    target: TargetServer,
    smtp: FakeSmtp,
    tmp_path: Path,
) -> None:
    ca_file = smtp.write_ca(tmp_path / "smtp-ca.pem")
    api_proc = await procs.start("api")
    await procs.start("scheduler")
    await procs.start("alerter", env={"MONITOR_CA_FILE": str(ca_file)})
    api = api_client(api_proc.base_url)

    refused = await api.post(
        "/api/v1/channels",
        json={"kind": "email", "name": "x", "config": config(smtp, security="none")},
    )
    assert refused.status == 422 and "clear text" in refused.text and smtp.password not in refused.text
    injected = await api.post(
        "/api/v1/channels",
        json={"kind": "email", "name": "x", "config": config(smtp, to=["a@b.example\r\nBcc: c@d.example"])},
    )
    assert injected.status == 422 and injected.json["error"]["field"] == "config.to", injected
    created = await api.post(
        "/api/v1/channels", json={"kind": "email", "name": "Ops <team>", "config": config(smtp)}
    )
    assert created.status == 201, created
    channel_id = created.json["id"]

    def masked(answer: dict[str, Any]) -> None:
        assert answer["config"]["password"] == MASK and answer["config"]["username"] == "monitor", answer
        assert answer["config"]["port"] == smtp.port and smtp.password not in str(answer)

    masked(created.json)
    masked((await api.get(f"/api/v1/channels/{channel_id}")).json)
    masked(next(c for c in (await api.get("/api/v1/channels")).json["items"] if c["id"] == channel_id))
    patched = await api.patch(
        f"/api/v1/channels/{channel_id}", json={"config": {**config(smtp), "password": MASK}}
    )
    assert patched.status == 200, patched
    masked(patched.json)
    stored = await db.fetchval("SELECT config::text FROM channels WHERE id = $1", channel_id)
    assert smtp.password not in stored

    # The test message, through the real path (outbox, relay, stream, alerter): the password
    # kept by the PATCH above still opens the account.
    queued = await api.post(f"/api/v1/channels/{channel_id}/test")
    assert queued.status == 202, queued
    (test,) = await smtp.wait_messages(1, timeout=20)
    assert test.subject == "[e2e] [TEST] Ops <team>"

    await watched_monitor(api, db, target.url("/"), [channel_id], name="shop & <co>")
    # The server refuses the outage's first attempt for a while (451): retried, not lost or doubled.
    smtp.fail(451, stage="DATA")
    target.set(500)
    await smtp.wait_messages(2, timeout=30)
    target.set(200)
    await smtp.wait_messages(3, timeout=30)
    await wait_for(
        lambda: db.fetchval("SELECT count(*) = 3 FROM deliveries WHERE status = 'sent'"), timeout=10
    )

    test, down, up = smtp.messages
    assert down.subject == "[e2e] [DOWN] shop & <co>", smtp.describe()
    assert (up.subject or "").startswith("[e2e] [UP] shop & <co> (after "), smtp.describe()
    for message in (test, down, up):
        assert message.tls and not message.implicit_tls and message.user == "monitor"
        assert message.mail_from == "alerts@monitor.example"
        assert message.rcpt_tos == ["ops@example.com", "dev@example.com"]
        assert message.header("Auto-Submitted") == "auto-generated" and message.header("Date")
    assert down.message_id and down.message_id.endswith("@monitor.example>")
    assert up.in_reply_to == down.message_id and up.references == [down.message_id]
    assert len({test.message_id, down.message_id, up.message_id}) == 3
    assert down.text is not None and "shop & <co> is DOWN" in down.text
    assert "Cause: unexpected status 500" in down.text
    assert down.html is not None and "shop &amp; &lt;co&gt; is DOWN" in down.html
    assert up.text is not None and "is UP again" in up.text
    # Every login was the configured account's, over TLS (the fake refuses AUTH before it).
    assert smtp.auth_attempts and all(ok for _, _, ok in smtp.auth_attempts)
    assert all(smtp.password not in p.log_text() for p in procs.processes)
    assert not procs.tracebacks()


async def test_smtp_hosts_the_policy_denies_are_never_dialled(
    db: asyncpg.Connection,
    procs: ProcessFactory,
    api_client: Callable[[str], ApiClient],
    smtp: FakeSmtp,
    tmp_path: Path,
) -> None:
    """The api refuses a denied host (``target_blocked``, ``config.host``). One that is denied
    by the time of sending (planted here: what a changed DNS answer does to a vetted name) is
    refused by the alerter at once (dead-lettered: the setting is at fault); a name that does
    not resolve is retried, then dead-lettered with its reason. Nothing is sent."""
    ca_file = smtp.write_ca(tmp_path / "smtp-ca.pem")
    api_proc = await procs.start("api")
    await procs.start(
        "alerter",
        env={
            "MONITOR_CA_FILE": str(ca_file),
            "MONITOR_ALERT_MAX_ATTEMPTS": "2",
            "MONITOR_ALERT_BACKOFF_BASE_SECONDS": "0.2",
            "MONITOR_ALERT_BACKOFF_MAX_SECONDS": "0.5",
        },
    )
    await procs.start("scheduler")
    api = api_client(api_proc.base_url)
    refused = await api.post(
        "/api/v1/channels", json={"kind": "email", "name": "x", "config": config(smtp, host="10.0.0.1")}
    )
    assert refused.status == 400, refused
    assert (refused.json["error"]["code"], refused.json["error"]["field"]) == (
        "target_blocked",
        "config.host",
    )

    ids = {}
    # Only 127.0.0.0/8 is allowed to the tests: ::1 and 10.0.0.1 are denied.
    for name, host, planted in (("private", "127.0.0.1", "10.0.0.1"), ("v6-loopback", "127.0.0.1", "::1"),
                                ("unknown", "nowhere.test", None)):  # fmt: skip
        created = await api.post(
            "/api/v1/channels", json={"kind": "email", "name": name, "config": config(smtp, host=host)}
        )
        assert created.status == 201, created
        ids[name] = created.json["id"]
        if planted is not None:
            await db.execute(
                "UPDATE channels SET config = jsonb_set(config, '{host}', to_jsonb($2::text)) WHERE id = $1",
                ids[name],
                planted,
            )
        assert (await api.post(f"/api/v1/channels/{ids[name]}/test")).status == 202

    async def dead() -> dict[str, str] | None:
        rows = await db.fetch("SELECT channel, status, last_error FROM deliveries")
        if len(rows) < 3:
            return None
        assert all(r["status"] == "dead" for r in rows), rows
        return {r["channel"]: r["last_error"] for r in rows}

    errors = await wait_for(dead, timeout=40)
    assert "SMTP server blocked: 10.0.0.1 (private-use 10.0.0.0/8)" in errors[f"email:{ids['private']}"]
    assert "SMTP server blocked: ::1 (loopback ::1/128)" in errors[f"email:{ids['v6-loopback']}"]
    assert "nowhere.test" in errors[f"email:{ids['unknown']}"]
    attempts = dict(await db.fetch("SELECT channel, attempts FROM deliveries"))
    assert attempts[f"email:{ids['private']}"] == 1 and attempts[f"email:{ids['unknown']}"] == 2
    assert smtp.messages == [] and smtp.auth_attempts == []
    assert not procs.tracebacks()
