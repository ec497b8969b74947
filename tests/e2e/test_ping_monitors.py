"""Ping monitors through the real api, scheduler and alerter (issue 14, point 4): the scheduler
pings a network namespace host of its own (``support.netns``) over a veth pair, and the fake
Telegram hears what changed.

Every process may reach the namespace's /30 only (``MONITOR_ALLOW_CIDRS``), so the api refuses a
ping monitor of any other private address with http's reasons. ``ns-host`` (interval 1 s,
confirm_after 2), chat ``1401``::

    answering          -> up; every check row has its round trips (details), latency = avg RTT
    drops every echo   -> DOWN, cause "no reply from <address> (3 of 3 packets lost)" (a check
                          under way then may first lose two of three: "66.7 % packet loss")
    answering again    -> UP; the incident spans the failing checks

The namespace's ICMP counters show the echoes were the scheduler's: as many requests arrived as
the check rows say were sent.
"""

from __future__ import annotations

import html
from collections.abc import Callable

import asyncpg
import pytest
from support import ApiClient, FakeTelegram, ProcessFactory, wait_for
from support.alerts import said_to
from support.netns import NetnsHost, netns_host_fixture  # noqa: F401  (the netns_host fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

DEADLINE = 30.0
CHAT = "1401"
NAME = "ns-host"


async def test_ping_monitor_goes_down_when_the_host_drops_ping_and_up_again(
    db: asyncpg.Connection,
    netns_host: NetnsHost,
    fake_telegram: FakeTelegram,
    procs: ProcessFactory,
    api_client: Callable[[str], ApiClient],
) -> None:
    allow = {"MONITOR_ALLOW_CIDRS": netns_host.cidr}
    api = api_client((await procs.start("api", env=allow)).base_url)

    # A private address outside the allow-list, as a literal: refused at creation, as http's.
    refused = await api.post("/api/v1/monitors", json={"type": "ping", "name": "private", "host": "10.0.0.5"})
    assert refused.status == 400, refused
    assert refused.json["error"]["field"] == "host", refused
    assert refused.json["error"]["message"] == (
        "host: 10.0.0.5 (private-use 10.0.0.0/8); the operator can allow it with "
        "MONITOR_ALLOW_CIDRS=10.0.0.5/32 (docs/security.md)"
    ), refused

    monitor = await api.create_monitor(
        type="ping",
        name=NAME,
        host=netns_host.address,
        interval_seconds=1,
        timeout_seconds=1,
        confirm_after=2,
        telegram_chat_id=CHAT,
    )
    monitor_id = monitor["id"]
    assert monitor["url"] == f"ping://{netns_host.address}", monitor
    assert (monitor["host"], monitor["count"], monitor["max_loss_percent"]) == (netns_host.address, 3, 50.0)

    await procs.start("scheduler", env=allow)
    await procs.start("alerter", env=fake_telegram.env())

    async def up() -> bool:
        return bool((await api.monitor(monitor_id))["status"] == "up")

    async def checks() -> list[asyncpg.Record]:
        return await db.fetch(
            "SELECT time, ok, latency_ms, error, details FROM checks WHERE monitor_id = $1 ORDER BY time",
            monitor_id,
        )

    # -- answering: up, with round trips ------------------------------------------------------
    await wait_for(up, timeout=DEADLINE, message="the monitor up")
    rows = await checks()
    assert rows and all(r["ok"] and r["error"] is None for r in rows), rows
    for row in rows:
        figures = row["details"]
        assert figures["address"] == netns_host.address
        assert (figures["sent"], figures["received"], figures["loss_percent"]) == (3, 3, 0.0), figures
        assert 0 < figures["rtt_min_ms"] <= figures["rtt_avg_ms"] <= figures["rtt_max_ms"], figures
        assert row["latency_ms"] == pytest.approx(figures["rtt_avg_ms"]), row

    # -- dropping every echo: DOWN with the cause ---------------------------------------------
    netns_host.ignore_ping()
    cause = f"no reply from {netns_host.address} (3 of 3 packets lost)"
    await fake_telegram.wait_messages(1, chat_id=CHAT, timeout=DEADLINE)
    assert said_to(fake_telegram, CHAT) == [(NAME, "DOWN")]
    down = html.unescape(fake_telegram.messages_to(CHAT)[0].text or "")
    assert cause in down, down
    failed = [r for r in await checks() if not r["ok"]]
    # A check under way when the host stopped answering may have had its first reply.
    partial = f"66.7 % packet loss from {netns_host.address} (above 50 %)"
    assert len(failed) >= 2 and failed[-1]["error"] == cause, failed
    assert {r["error"] for r in failed} <= {cause, partial}, failed
    for row in failed:
        lost = row["error"] == cause
        assert row["details"]["received"] == (0 if lost else 1), row
        assert (row["latency_ms"] is None) is lost, row

    # -- answering again: UP -----------------------------------------------------------------
    netns_host.ignore_ping(False)
    await fake_telegram.wait_messages(2, chat_id=CHAT, timeout=DEADLINE)
    assert said_to(fake_telegram, CHAT) == [(NAME, "DOWN"), (NAME, "UP")]
    incident = await db.fetchrow(
        "SELECT started_at, ended_at FROM incidents WHERE monitor_id = $1", monitor_id
    )
    rows = await checks()
    first_failure = min(r["time"] for r in rows if not r["ok"])
    recovered = min(r["time"] for r in rows if r["ok"] and r["time"] > first_failure)
    assert (incident["started_at"], incident["ended_at"]) == (first_failure, recovered), incident

    # Every echo the rows say was sent reached the namespace, and nothing else did.
    await procs.stop_all()
    sent = sum(r["details"]["sent"] for r in await checks())
    assert netns_host.icmp()["echo_requests"] == sent
    assert not procs.tracebacks()
