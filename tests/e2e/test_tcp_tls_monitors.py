"""TCP port and TLS certificate monitors through the real api, scheduler and alerter (issue 14,
points 1 and 3), against local servers (``support.banner``) and the fake Telegram.

Monitors are created through ``POST /api/v1/monitors`` (``type`` tcp or tls), checked every
second, each with a chat of its own; results are read back through ``GET
/api/v1/monitors/{id}/checks``.

``smtp`` (tcp, expect "220", confirm_after 2), chat ``1501``::

    banner server up       -> up; every check has the answer and the connect time
    server stopped         -> DOWN, cause "connection failed: refused by 127.0.0.1 port N"
    server listening again -> UP; the incident spans the failing checks

``redis`` (tcp, send "PING\\r\\n", expect "PONG"), chat ``1502``: up, the answer recorded, nothing said.

TLS servers whose leaves (a throwaway CA the scheduler trusts through ``MONITOR_CA_FILE``)
expire in 90 days, 3 days and expired yesterday; cert_warn_days is the default 14::

    tls-valid   (server_name localhost), chat 1503 -> nothing said; certificate, chain, weakest key
    tls-short   chat 1504 -> DEGRADED, "certificate expires in N days (<date>)"
    tls-expired chat 1505 -> DOWN, "TLS certificate error: certificate has expired", with the
                             expired certificate still recorded (days_left < 0)
"""

from __future__ import annotations

import asyncio
import datetime as dt
import html
import re
from dataclasses import dataclass
from typing import Any

import asyncpg
import pytest
import redis.asyncio as aioredis
from support import ApiClient, FakeTelegram, ProcessFactory, parse_time, rfc3339, wait_for
from support.alerts import alert_state, said_to
from support.banner import BannerServer, BannerServerFactory, banner_server_fixture  # noqa: F401
from support.certs import LocalCA, local_ca_fixture, scheduler_env  # noqa: F401  (the local_ca fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(150)]

DEADLINE = 30.0
SMTP_CHAT, REDIS_CHAT, VALID_CHAT, SHORT_CHAT, EXPIRED_CHAT = "1501", "1502", "1503", "1504", "1505"
EVERY_SECOND = {"interval_seconds": 1, "timeout_seconds": 1, "confirm_after": 2}


@dataclass
class World:
    api: ApiClient
    telegram: FakeTelegram

    async def checks(self, monitor_id: int) -> list[dict[str, Any]]:
        """The monitor's checks as the api lists them, oldest first."""
        response = await self.api.get(f"/api/v1/monitors/{monitor_id}/checks", params={"limit": 1000})
        assert response.status == 200, response
        return list(reversed(response.json["items"]))

    async def status(self, monitor_id: int) -> str:
        return str((await self.api.monitor(monitor_id))["status"])

    async def until_status(self, monitor_id: int, want: str) -> None:
        async def reached() -> bool:
            return await self.status(monitor_id) == want

        await wait_for(reached, timeout=DEADLINE, message=f"monitor {monitor_id} {want}")

    async def told(self, chat: str, *expected: tuple[str, str]) -> None:
        def so_far() -> bool:
            got = said_to(self.telegram, chat)
            assert got == list(expected[: len(got)]), f"chat {chat} was told {got}, expected {list(expected)}"
            return len(got) == len(expected)

        await wait_for(
            so_far, timeout=DEADLINE, message=lambda: f"chat {chat}: {said_to(self.telegram, chat)}"
        )

    def text(self, chat: str, index: int) -> str:
        return html.unescape(self.telegram.messages_to(chat)[index].text or "")


# -- tcp ----------------------------------------------------------------------------------


async def banner_down_and_up(world: World, monitor_id: int, server: BannerServer) -> None:
    name = "smtp"
    await world.until_status(monitor_id, "up")
    for check in await world.checks(monitor_id):
        assert (check["ok"], check["error"]) == (True, None), check
        assert check["details"] == {"answer": "220 mail.test ESMTP ready\\r\\n"}, check
        assert check["latency_ms"] == pytest.approx(check["timings"]["connect_ms"], abs=0.001), check
        assert check["timings"]["ttfb_ms"] is not None, check

    await server.stop()
    cause = f"connection failed: refused by 127.0.0.1 port {server.port}"
    await world.told(SMTP_CHAT, (name, "DOWN"))
    assert cause in world.text(SMTP_CHAT, 0), world.text(SMTP_CHAT, 0)
    failed = [c for c in await world.checks(monitor_id) if not c["ok"]]
    assert len(failed) >= 2 and {c["error"] for c in failed} == {cause}, failed

    await server.start()  # the same port
    await world.told(SMTP_CHAT, (name, "DOWN"), (name, "UP"))
    incidents = await world.api.get(f"/api/v1/monitors/{monitor_id}/incidents")
    assert incidents.status == 200, incidents
    [incident] = incidents.json["items"]
    checks = await world.checks(monitor_id)
    first_failure = min(parse_time(c["time"]) for c in checks if not c["ok"])
    recovered = min(
        parse_time(c["time"]) for c in checks if c["ok"] and parse_time(c["time"]) > first_failure
    )
    assert (incident["started_at"], incident["ended_at"]) == (rfc3339(first_failure), rfc3339(recovered))
    assert incident["error"] == cause


async def redis_answers(world: World, monitor_id: int, server: BannerServer) -> None:
    async def three_checks() -> bool:
        return sum(c["ok"] for c in await world.checks(monitor_id)) >= 3

    await wait_for(three_checks, timeout=DEADLINE, message="three good redis checks")
    checks = await world.checks(monitor_id)
    assert all(c["ok"] and c["details"] == {"answer": "+PONG\\r\\n"} for c in checks), checks
    assert server.lines[:3] == [b"PING\r\n"] * 3


# -- tls ----------------------------------------------------------------------------------


async def valid_certificate(
    world: World, monitor_id: int, server: BannerServer, not_after: dt.datetime
) -> None:
    async def three_checks() -> bool:
        return sum(c["ok"] for c in await world.checks(monitor_id)) >= 3

    await wait_for(three_checks, timeout=DEADLINE, message="three good tls checks")
    assert await world.status(monitor_id) == "up"
    for check in await world.checks(monitor_id):
        assert (check["ok"], check["error"]) == (True, None), check
        details = check["details"]
        cert = details["certificate"]
        assert cert["not_after"] == rfc3339(not_after), cert
        assert 89.99 <= cert["days_left"] <= 90, cert
        assert (cert["subject"], cert["issuer"], cert["key"]) == ("127.0.0.1", "Monitor Test CA", "EC P-256")
        assert cert["sans"] == ["127.0.0.1", "localhost"], cert
        assert [c["subject"] for c in details["chain"]] == ["127.0.0.1", "Monitor Test CA"], details
        assert (details["weakest_key"], details["verified"]) == ("EC P-256", True), details
        timings = check["timings"]
        assert check["latency_ms"] == pytest.approx(timings["connect_ms"] + timings["tls_ms"], abs=0.001)
    assert set(server.sni) == {"localhost"}  # the server_name, not the address dialled


async def short_certificate(world: World, monitor_id: int, not_after: dt.datetime) -> None:
    name = "tls-short"
    await world.told(SHORT_CHAT, (name, "DEGRADED"))
    checks = await world.checks(monitor_id)
    assert checks and all(c["ok"] for c in checks), checks
    assert all(2.99 <= c["details"]["certificate"]["days_left"] <= 3 for c in checks), checks
    text = world.text(SHORT_CHAT, 0)
    expiry = f"{not_after:%Y-%m-%d}"
    assert re.search(rf"certificate expires in [23] days \({expiry}\)", text), text


async def expired_certificate(world: World, monitor_id: int) -> None:
    name = "tls-expired"
    cause = "TLS certificate error: certificate has expired"
    await world.told(EXPIRED_CHAT, (name, "DOWN"))
    assert cause in world.text(EXPIRED_CHAT, 0), world.text(EXPIRED_CHAT, 0)
    checks = await world.checks(monitor_id)
    assert checks and all((c["ok"], c["error"]) == (False, cause) for c in checks), checks
    for check in checks:
        details = check["details"]
        assert -1.01 <= details["certificate"]["days_left"] <= -1, details
        assert details["verified"] is False, details


# -- the test -----------------------------------------------------------------------------


async def test_tcp_and_tls_monitors(
    db: asyncpg.Connection,
    redis_client: aioredis.Redis,
    banner_server: BannerServerFactory,
    local_ca: LocalCA,
    fake_telegram: FakeTelegram,
    procs: ProcessFactory,
    api: ApiClient,
) -> None:
    smtp_server = await banner_server(banner=b"220 mail.test ESMTP ready\r\n")
    redis_server = await banner_server(replies={b"PING": b"+PONG\r\n"})
    tls_servers: dict[str, tuple[BannerServer, dt.datetime]] = {}
    for label, days in (("valid", 90), ("short", 3), ("expired", -1)):
        leaf, not_after = local_ca.issue(days=days)
        tls_servers[label] = (await banner_server(ssl_context=local_ca.server_context(leaf)), not_after)

    async def create(**fields: Any) -> int:
        return int((await api.create_monitor(**EVERY_SECOND, **fields))["id"])

    smtp = await create(
        type="tcp",
        name="smtp",
        host="127.0.0.1",
        port=smtp_server.port,
        expect="220",
        telegram_chat_id=SMTP_CHAT,
    )
    redis = await create(
        type="tcp",
        name="redis",
        host="127.0.0.1",
        port=redis_server.port,
        send="PING\r\n",
        expect="PONG",
        telegram_chat_id=REDIS_CHAT,
    )
    tls = {
        label: await create(
            type="tls",
            name=f"tls-{label}",
            host="127.0.0.1",
            port=server.port,
            telegram_chat_id=chat,
            **({"server_name": "localhost"} if label == "valid" else {}),
        )
        for (label, (server, _)), chat in zip(
            tls_servers.items(), (VALID_CHAT, SHORT_CHAT, EXPIRED_CHAT), strict=True
        )
    }
    shown = await api.monitor(smtp)
    assert (shown["type"], shown["url"], shown["host"], shown["expect"]) == (
        "tcp",
        f"tcp://127.0.0.1:{smtp_server.port}",
        "127.0.0.1",
        "220",
    ), shown
    assert (await api.monitor(tls["valid"]))["url"] == f"tls://127.0.0.1:{tls_servers['valid'][0].port}"

    await procs.start("scheduler", env=scheduler_env(local_ca))
    await procs.start("alerter", env=fake_telegram.env())
    world = World(api, fake_telegram)
    await asyncio.gather(
        banner_down_and_up(world, smtp, smtp_server),
        redis_answers(world, redis, redis_server),
        valid_certificate(world, tls["valid"], *tls_servers["valid"]),
        short_certificate(world, tls["short"], tls_servers["short"][1]),
        expired_certificate(world, tls["expired"]),
    )

    # Everything written was delivered, so the chats heard all they will: exactly this.
    async def settled() -> bool:
        state = await alert_state(db, redis_client)
        written = await db.fetchval("SELECT count(*) FROM outbox")
        return state.settled(sent=written)

    await wait_for(settled, timeout=DEADLINE, message="every alert delivered")
    assert said_to(fake_telegram, SMTP_CHAT) == [("smtp", "DOWN"), ("smtp", "UP")]
    assert said_to(fake_telegram, REDIS_CHAT) == []
    assert said_to(fake_telegram, VALID_CHAT) == []
    assert said_to(fake_telegram, SHORT_CHAT) == [("tls-short", "DEGRADED")]
    assert said_to(fake_telegram, EXPIRED_CHAT) == [("tls-expired", "DOWN")]
    assert not procs.tracebacks()
