"""DNS monitors through the real api, scheduler and alerter (issue 14, point 2), against local
fake DNS servers whose answers the test changes, and the fake Telegram.

The scheduler's own resolver (``MONITOR_DNS_SERVERS``) is one fake server; a second one on
127.0.0.1, which the operator allows (``MONITOR_ALLOW_CIDRS``), is the nameserver the MX
monitor names. Three monitors, checked every second, confirm_after 2, a chat each::

    dns-unchanged  shop.test A, expect unchanged                       chat 1401
    dns-equals     shop.test A, expect equals [192.0.2.10]             chat 1402
    dns-mx         shop.test MX at the named server, expect contains   chat 1403
                   [10 mail.shop.test]

    A hijacked (203.0.113.66)          -> DOWN for unchanged and equals, naming the change
    A restored                         -> UP for both
    A moved (192.0.2.30)               -> DOWN for both; the user saves the unchanged monitor
                                          (PATCH): the new answers are accepted -> UP; the
                                          equals monitor, pinned, stays down
    MX loses mail.shop.test            -> DOWN "expected 10 mail.shop.test among the answers"
    MX restored                        -> UP
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest
import redis.asyncio as aioredis
from support import ApiClient, FakeTelegram, ProcessFactory, wait_for
from support.alerts import alert_state, said_to
from support.dns import DNSServer, dns_fixture, start_dns  # noqa: F401  (the dns fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(150)]

DEADLINE = 30.0
UNCHANGED_CHAT, EQUALS_CHAT, MX_CHAT = "1401", "1402", "1403"
HOME = [("A", "192.0.2.10")]
MAIL = [("MX", "10 mail.shop.test"), ("MX", "20 backup.shop.test")]


@pytest.fixture
async def named_dns() -> AsyncIterator[DNSServer]:
    """The nameserver the MX monitor names, on 127.0.0.1."""
    server = await start_dns({"shop.test": list(MAIL)})
    try:
        yield server
    finally:
        server.close()


async def told(fake: FakeTelegram, chat: str, *expected: tuple[str, str]) -> None:
    """Wait until ``chat`` was told exactly ``expected`` (failing at once on anything else)."""

    def so_far() -> bool:
        got = said_to(fake, chat)
        assert got == list(expected[: len(got)]), f"chat {chat} was told {got}, expected {list(expected)}"
        return len(got) == len(expected)

    await wait_for(so_far, timeout=DEADLINE, message=lambda: f"chat {chat} was told {said_to(fake, chat)}")


def last_text(fake: FakeTelegram, chat: str) -> str:
    return fake.messages_to(chat)[-1].text or ""


async def all_up(db: asyncpg.Connection, ids: list[int]) -> None:
    await wait_for(
        lambda: db.fetchval(
            "SELECT count(*) = $2 FROM monitor_state WHERE status = 'up' AND monitor_id = ANY($1::bigint[])",
            ids,
            len(ids),
        ),
        timeout=DEADLINE,
        message=f"monitors {ids} up",
    )


async def test_dns_monitors_alert_on_changed_answers(
    db: asyncpg.Connection,
    redis_client: aioredis.Redis,
    dns: DNSServer,
    named_dns: DNSServer,
    fake_telegram: FakeTelegram,
    procs: ProcessFactory,
    api_client: Any,
) -> None:
    dns.zone["shop.test"] = list(HOME)
    env = {"MONITOR_DNS_SERVERS": dns.nameserver, "MONITOR_ALLOW_CIDRS": "127.0.0.1/32"}
    api: ApiClient = api_client((await procs.start("api", env=env)).base_url)
    common = {
        "type": "dns",
        "domain": "shop.test",
        "interval_seconds": 1,
        "timeout_seconds": 1,
        "confirm_after": 2,
    }
    unchanged = await api.create_monitor(
        name="dns-unchanged", expect="unchanged", telegram_chat_id=UNCHANGED_CHAT, **common
    )
    equals = await api.create_monitor(
        name="dns-equals", expect="equals", values=["192.0.2.10"], telegram_chat_id=EQUALS_CHAT, **common
    )
    mx = await api.create_monitor(
        name="dns-mx", record_type="mx", nameservers=[named_dns.nameserver], expect="contains",
        values=["10 MAIL.shop.test."], telegram_chat_id=MX_CHAT, **common,
    )  # fmt: skip
    assert (unchanged["url"], mx["url"]) == (
        "dns:shop.test?type=A",
        f"dns://{named_dns.nameserver}/shop.test?type=MX",
    )
    assert (mx["record_type"], mx["values"]) == ("MX", ["10 mail.shop.test"])
    await procs.start("scheduler", env=env)
    await procs.start("alerter", env=fake_telegram.env())
    await all_up(db, [unchanged["id"], equals["id"], mx["id"]])

    # Hijacked: both A monitors go down, and each alert names what changed.
    dns.zone["shop.test"] = [("A", "203.0.113.66")]
    await told(fake_telegram, UNCHANGED_CHAT, ("dns-unchanged", "DOWN"))
    await told(fake_telegram, EQUALS_CHAT, ("dns-equals", "DOWN"))
    assert "answer changed: now [203.0.113.66], was [192.0.2.10]" in last_text(fake_telegram, UNCHANGED_CHAT)
    assert (
        "answers differ from the expected ones: missing [192.0.2.10]; unexpected [203.0.113.66]"
        in last_text(fake_telegram, EQUALS_CHAT)
    )
    dns.zone["shop.test"] = list(HOME)
    await told(fake_telegram, UNCHANGED_CHAT, ("dns-unchanged", "DOWN"), ("dns-unchanged", "UP"))
    await told(fake_telegram, EQUALS_CHAT, ("dns-equals", "DOWN"), ("dns-equals", "UP"))

    # Moved on purpose: down until the user accepts the new answers by saving the monitor.
    dns.zone["shop.test"] = [("A", "192.0.2.30")]
    await told(fake_telegram, UNCHANGED_CHAT, *[("dns-unchanged", k) for k in ("DOWN", "UP", "DOWN")])
    assert "answer changed: now [192.0.2.30], was [192.0.2.10]" in last_text(fake_telegram, UNCHANGED_CHAT)
    response = await api.patch(f"/api/v1/monitors/{unchanged['id']}", json={"expect": "unchanged"})
    assert response.status == 200, response
    await told(fake_telegram, UNCHANGED_CHAT, *[("dns-unchanged", k) for k in ("DOWN", "UP", "DOWN", "UP")])
    await told(fake_telegram, EQUALS_CHAT, *[("dns-equals", k) for k in ("DOWN", "UP", "DOWN")])

    # The MX monitor asks the named server only, and wants its mail exchanger among the answers.
    named_dns.zone["shop.test"] = [("MX", "10 mx.elsewhere.test")]
    await told(fake_telegram, MX_CHAT, ("dns-mx", "DOWN"))
    assert "expected 10 mail.shop.test among the answers, got [10 mx.elsewhere.test]" in last_text(
        fake_telegram, MX_CHAT
    )
    named_dns.zone["shop.test"] = list(MAIL)
    await told(fake_telegram, MX_CHAT, ("dns-mx", "DOWN"), ("dns-mx", "UP"))
    assert ("shop.test", "MX") not in dns.queries, "the MX monitor asked the operator's resolver"

    async def settled() -> bool:
        state = await alert_state(db, redis_client)
        return state.settled(sent=await db.fetchval("SELECT count(*) FROM outbox"))

    await wait_for(settled, timeout=DEADLINE, message="every alert delivered")
    assert said_to(fake_telegram, UNCHANGED_CHAT) == [
        ("dns-unchanged", k) for k in ("DOWN", "UP", "DOWN", "UP")
    ]
    assert said_to(fake_telegram, EQUALS_CHAT) == [("dns-equals", k) for k in ("DOWN", "UP", "DOWN")]
    assert said_to(fake_telegram, MX_CHAT) == [("dns-mx", "DOWN"), ("dns-mx", "UP")]
    rows = await db.fetch(
        "SELECT ok, error, details, latency_ms FROM checks WHERE monitor_id = $1 ORDER BY time", mx["id"]
    )
    assert rows[0]["details"] == {
        "record_type": "MX",
        "nameserver": named_dns.nameserver,
        "answers": ["10 mail.shop.test", "20 backup.shop.test"],
    }
    assert all(r["latency_ms"] is not None for r in rows)
    assert any(r["error"] and r["error"].startswith("expected 10 mail.shop.test") for r in rows)
    assert not procs.tracebacks()
