"""The SSRF guard on dns monitors: a nameserver a monitor names is a target like an http
check's host, refused before any packet leaves; the operator's resolvers and answers that
point into private space are not refused (nothing is dialled at them).

A real scheduler resolves through a fake DNS server (``MONITOR_DNS_SERVERS``), allows only
127.0.0.2/32, and a tripwire watches its sockets. A second fake server on 127.0.0.1 plays a
loopback nameserver a monitor names: it must hear nothing unless ``MONITOR_ALLOW_CIDRS``
allows 127.0.0.1. The api refuses the same nameservers when a monitor is created.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import asyncpg
import pytest
from support import ApiClient, ProcessFactory, wait_for
from support.canary import ORIGIN_ALLOW, Tripwire, check_counts, guarded_scheduler
from support.dns import DNSServer, dns_fixture, start_dns  # noqa: F401  (the dns fixture)

from monitor.checks.dns import DnsCheck, DnsSettings

pytestmark = pytest.mark.timeout(90)

MonitorFactory = Callable[..., Awaitable[asyncpg.Record]]  # the conftest fixture
CHECKS_PER_MONITOR = 2
LOOPBACK = "loopback 127.0.0.0/8"
PRIVATE = "private-use 10.0.0.0/8"


@pytest.fixture
async def loopback_dns() -> AsyncIterator[DNSServer]:
    """A nameserver on 127.0.0.1 that answers example.test differently from the operator's."""
    server = await start_dns({"example.test": [("A", "192.0.2.99")]})
    try:
        yield server
    finally:
        server.close()


async def plant(monitor_factory: MonitorFactory, name: str, **settings: Any) -> int:
    """A dns monitor written straight to the database (no API vetting), checked every second."""
    parsed = DnsSettings.model_validate(settings)
    row = await monitor_factory(
        name=name,
        type="dns",
        url=DnsCheck().target(parsed),
        settings=parsed.model_dump(mode="json"),
        timeout_seconds=3.0,
    )
    return int(row["id"])


async def checked(db: asyncpg.Connection, ids: dict[str, int]) -> dict[str, list[asyncpg.Record]]:
    async def enough() -> bool:
        return min((await check_counts(db, list(ids.values()))).values()) >= CHECKS_PER_MONITOR

    await wait_for(enough, timeout=30, message=lambda: f"{CHECKS_PER_MONITOR} checks of every monitor")
    return {
        case: await db.fetch(
            "SELECT ok, error, details FROM checks WHERE monitor_id = $1 ORDER BY time", monitor_id
        )
        for case, monitor_id in ids.items()
    }


def wrong_rows(rows: dict[str, list[asyncpg.Record]], want: dict[str, str | None]) -> list[str]:
    wrong = []
    for case, error in want.items():
        for row in rows[case]:
            if (row["ok"], row["error"]) != (error is None, error):
                wrong.append(f"{case}: want error={error!r}, got ok={row['ok']} error={row['error']!r}")
                break
    return wrong


async def test_denied_nameservers_are_refused_before_a_packet_leaves(
    db: asyncpg.Connection,
    monitor_factory: MonitorFactory,
    procs: ProcessFactory,
    dns: DNSServer,
    loopback_dns: DNSServer,
) -> None:
    dns.zone.update({"example.test": [("A", "192.0.2.10")], "internal.test": [("A", "10.0.0.5")]})
    port = loopback_dns.port
    cases: dict[str, tuple[dict[str, Any], str | None]] = {
        "operator's resolver (control)": ({"domain": "example.test"}, None),
        "answer in private space": ({"domain": "internal.test"}, None),
        "private nameserver": ({"nameservers": ["10.0.0.53"]}, f"blocked: 10.0.0.53 ({PRIVATE})"),
        "metadata nameserver": (
            {"nameservers": ["169.254.169.254"]},
            "blocked: 169.254.169.254 (link-local 169.254.0.0/16)",
        ),
        "ULA nameserver": (
            {"nameservers": ["[fd00::53]:53"]},
            "blocked: fd00::53 (unique-local (ULA) fc00::/7)",
        ),
        "CGNAT nameserver": (
            {"nameservers": ["100.100.2.136"]},
            "blocked: 100.100.2.136 (shared address space (CGNAT) 100.64.0.0/10)",
        ),
        "loopback nameserver": ({"nameservers": [f"127.0.0.1:{port}"]}, f"blocked: 127.0.0.1 ({LOOPBACK})"),
        "loopback6 nameserver": ({"nameservers": [f"[::1]:{port}"]}, "blocked: ::1 (loopback ::1/128)"),
        "mapped loopback nameserver": (
            {"nameservers": [f"[::ffff:127.0.0.1]:{port}"]},
            f"blocked: ::ffff:127.0.0.1 (IPv4-mapped 127.0.0.1, {LOOPBACK})",
        ),
        # A public server first: refused as a whole, so not even the public one is asked.
        "public then private": ({"nameservers": ["9.9.9.9", "10.0.0.53"]}, f"blocked: 10.0.0.53 ({PRIVATE})"),
    }
    async with guarded_scheduler(procs, dns.nameserver) as (_proc, wire):
        ids = {
            case: await plant(monitor_factory, case, **{"domain": "example.test", **settings})
            for case, (settings, _error) in cases.items()
        }
        rows = await checked(db, ids)
    assert not (wrong := wrong_rows(rows, {case: error for case, (_s, error) in cases.items()})), "\n".join(
        wrong
    )
    assert rows["operator's resolver (control)"][0]["details"] == {
        "record_type": "A",
        "nameserver": "system",
        "answers": ["192.0.2.10"],
    }
    assert rows["answer in private space"][0]["details"]["answers"] == ["10.0.0.5"]
    assert loopback_dns.queries == [], "a denied loopback nameserver was asked"
    assert not wire.hits, f"the scheduler sent packets outside loopback: {wire.describe()}"
    assert {name for name, _kind in dns.queries} == {"example.test", "internal.test"}


async def test_loopback_nameserver_is_asked_when_the_operator_allows_it(
    db: asyncpg.Connection,
    monitor_factory: MonitorFactory,
    procs: ProcessFactory,
    dns: DNSServer,
    loopback_dns: DNSServer,
) -> None:
    dns.zone.update({"example.test": [("A", "192.0.2.10")]})
    async with guarded_scheduler(procs, dns.nameserver, allow="127.0.0.1/32") as (_proc, wire):
        ids = {
            "allowed loopback": await plant(
                monitor_factory, "allowed", domain="example.test", nameservers=[loopback_dns.nameserver]
            ),
            "private still denied": await plant(
                monitor_factory, "private", domain="example.test", nameservers=["10.0.0.53"]
            ),
        }
        rows = await checked(db, ids)
    assert not (
        wrong := wrong_rows(
            rows, {"allowed loopback": None, "private still denied": f"blocked: 10.0.0.53 ({PRIVATE})"}
        )
    ), "\n".join(wrong)
    details = rows["allowed loopback"][0]["details"]
    assert (details["nameserver"], details["answers"]) == (loopback_dns.nameserver, ["192.0.2.99"])
    assert ("example.test", "A") in loopback_dns.queries
    assert ("example.test", "A") not in dns.queries  # the named server, not the operator's
    assert not wire.hits, f"the scheduler sent packets outside loopback: {wire.describe()}"


async def test_api_refuses_denied_nameservers(
    db: asyncpg.Connection,
    procs: ProcessFactory,
    dns: DNSServer,
    api_client: Callable[[str], ApiClient],
) -> None:
    proc = await procs.start(
        "api", env={"MONITOR_DNS_SERVERS": dns.nameserver, "MONITOR_ALLOW_CIDRS": ORIGIN_ALLOW}
    )
    api = api_client(proc.base_url)
    refused = [
        (["10.0.0.53"], 400, "target_blocked", f"10.0.0.53 ({PRIVATE})"),
        (["9.9.9.9", "127.0.0.1:5353"], 400, "target_blocked", f"127.0.0.1 ({LOOPBACK})"),
        (["169.254.169.254"], 400, "target_blocked", "169.254.169.254 (link-local 169.254.0.0/16)"),
        (["dns.internal.test"], 422, "invalid", "is not an IP address"),
    ]
    with Tripwire(proc.pid) as wire:
        wrong = []
        for servers, status, code, message in refused:
            body = {"type": "dns", "name": "dns", "domain": "example.test", "nameservers": servers}
            response = await api.post("/api/v1/monitors", json=body)
            error = response.json.get("error", {}) if response.is_json else {}
            got = (response.status, error.get("code"), error.get("field"))
            if got != (status, code, "nameservers") or message not in error.get("message", ""):
                wrong.append(f"{servers}: want {status} {code} {message!r}, got {response!r}")
        assert not wrong, "refusals wrong:\n" + "\n".join(wrong)
        allowed = await api.create_monitor(
            type="dns", name="dns", domain="example.test", nameservers=["127.0.0.2:5353", "9.9.9.9"]
        )
    assert allowed["url"] == "dns://127.0.0.2:5353,9.9.9.9/example.test?type=A"
    assert await db.fetchval("SELECT count(*) FROM monitors") == 1
    assert not wire.hits, f"the api opened sockets outside loopback: {wire.describe()}"
    assert dns.queries == []  # literals are judged as themselves: no lookup
