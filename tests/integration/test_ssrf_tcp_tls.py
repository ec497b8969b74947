"""The SSRF guard on tcp and tls monitors: refused before any packet leaves, with http's reasons.

As in ``test_ssrf_scheduler``: monitors are planted straight into the database (no API
vetting), a real scheduler resolves through a fake DNS server and allows only 127.0.0.2/32
(where the origin listens). The canary listens on 127.0.0.1 and ::1 on the origin's port, so a
target a broken guard dialled on loopback lands on it, and a tripwire on the scheduler's
sockets sees anything dialled outside loopback (10.0.0.5, the metadata address). Allowed
controls (a name and a literal of the origin) show the refusals come from the guard. The api
refuses the same hosts when a monitor is created, with the field that holds them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import pytest
from support import ApiClient, ProcessFactory, wait_for
from support.canary import (
    ORIGIN_ALLOW,
    Stage,
    Tripwire,
    check_counts,
    guarded_scheduler,
    stage_fixture,  # noqa: F401  (the stage fixture)
)
from support.dns import DNSServer, dns_fixture  # noqa: F401  (the dns fixture)

from monitor.checks import REGISTRY

pytestmark = pytest.mark.timeout(90)

MonitorFactory = Callable[..., Awaitable[asyncpg.Record]]  # the conftest fixture
CHECKS_PER_MONITOR = 2
LOOPBACK_V4 = "loopback 127.0.0.0/8"
PRIVATE_10 = "private-use 10.0.0.0/8"

ZONE = {
    "allowed.test": [("A", "127.0.0.2")],
    "private.test": [("A", "10.0.0.5")],
    "loopback.test": [("A", "127.0.0.1")],
    "alias.test": [("CNAME", "db.internal.test")],
    "db.internal.test": [("A", "10.0.0.5")],
    "mixed-private.test": [("A", "127.0.0.2"), ("A", "10.0.0.5")],
    "all-loopback.test": [("A", "127.0.0.1"), ("AAAA", "::1"), ("A", "127.0.0.2")],
    "metadata.google.internal": [("A", "169.254.169.254")],
}

# (host, the error every check stores; None: an allowed control). The port is the stage's.
HOSTS: list[tuple[str, str | None]] = [
    ("allowed.test", None),
    ("127.0.0.2", None),
    ("10.0.0.5", f"blocked: 10.0.0.5 ({PRIVATE_10})"),
    ("127.0.0.1", f"blocked: 127.0.0.1 ({LOOPBACK_V4})"),
    ("::1", "blocked: ::1 (loopback ::1/128)"),
    ("::ffff:127.0.0.1", f"blocked: ::ffff:127.0.0.1 (IPv4-mapped 127.0.0.1, {LOOPBACK_V4})"),
    ("169.254.169.254", "blocked: 169.254.169.254 (link-local 169.254.0.0/16)"),
    ("private.test", f"blocked: private.test resolves to 10.0.0.5 ({PRIVATE_10})"),
    ("loopback.test", f"blocked: loopback.test resolves to 127.0.0.1 ({LOOPBACK_V4})"),
    ("alias.test", f"blocked: alias.test resolves to 10.0.0.5 ({PRIVATE_10})"),
    ("mixed-private.test", f"blocked: mixed-private.test resolves to 10.0.0.5 ({PRIVATE_10})"),
    ("all-loopback.test", None),  # every answer loopback: dialled on the allowed one only
    (
        "metadata.google.internal",
        "blocked: metadata.google.internal resolves to 169.254.169.254 (link-local 169.254.0.0/16)",
    ),
]
# The origin speaks plain HTTP: a tls check of it gets past the guard and fails the handshake.
TLS_CONTROL = "TLS error: the server did not answer in TLS (a plain-text service?)"


async def plant(monitor_factory: MonitorFactory, kind: str, **settings: Any) -> int:
    """A monitor of ``kind`` written straight to the database (no API vetting)."""
    check = REGISTRY.get(kind)
    assert check.Settings is not None
    parsed = check.Settings.model_validate(settings)
    row = await monitor_factory(
        name=f"{kind} {settings['host']}",
        type=kind,
        url=check.target(parsed),
        settings=parsed.model_dump(mode="json"),
        timeout_seconds=3.0,
    )
    return int(row["id"])


async def test_denied_hosts_are_refused_before_dialling(
    db: asyncpg.Connection,
    monitor_factory: MonitorFactory,
    procs: ProcessFactory,
    dns: DNSServer,
    stage: Stage,
) -> None:
    dns.zone.update(ZONE)
    want: dict[str, str | None] = {}  # by monitor name
    ids: list[int] = []
    async with guarded_scheduler(procs, dns.nameserver) as (_proc, wire):
        for host, error in HOSTS:
            for kind in ("tcp", "tls"):
                ids.append(await plant(monitor_factory, kind, host=host, port=stage.port))
                want[f"{kind} {host}"] = TLS_CONTROL if kind == "tls" and error is None else error

        async def all_checked() -> bool:
            return min((await check_counts(db, ids)).values()) >= CHECKS_PER_MONITOR

        await wait_for(all_checked, timeout=30, message=f"{CHECKS_PER_MONITOR} checks of every monitor")
    rows = await db.fetch(
        "SELECT c.ok, c.error, m.name FROM checks c JOIN monitors m ON m.id = c.monitor_id"
        " WHERE c.monitor_id = ANY($1::bigint[])",
        ids,
    )
    wrong = sorted(
        {
            f"{r['name']}: want {want[r['name']]!r}, got ok={r['ok']} error={r['error']!r}"
            for r in rows
            if (r["ok"], r["error"]) != (want[r["name"]] is None, want[r["name"]])
        }
    )
    assert not wrong, "checks stored wrongly:\n" + "\n".join(wrong)
    assert stage.canary.count == 0, f"the canary was reached: {stage.canary.describe()}"
    assert not wire.hits, f"the scheduler opened sockets outside loopback: {wire.describe()}"
    # Every name was asked of the DNS server: refused on its answers, not before.
    asked = {name for name, kind in dns.queries if kind == "A"}
    assert {host for host, _ in HOSTS if host.endswith((".test", ".internal"))} <= asked


async def test_api_refuses_denied_hosts(
    db: asyncpg.Connection,
    procs: ProcessFactory,
    dns: DNSServer,
    api_client: Callable[[str], ApiClient],
) -> None:
    dns.zone.update(ZONE)
    proc = await procs.start(
        "api", env={"MONITOR_DNS_SERVERS": dns.nameserver, "MONITOR_ALLOW_CIDRS": ORIGIN_ALLOW}
    )
    api = api_client(proc.base_url)
    refused = [
        ("tcp", "10.0.0.5", f"10.0.0.5 ({PRIVATE_10})"),
        ("tls", "private.test", f"private.test resolves to 10.0.0.5 ({PRIVATE_10})"),
        ("tcp", "metadata.google.internal", "resolves to 169.254.169.254 (link-local 169.254.0.0/16)"),
        ("tls", "::1", "::1 (loopback ::1/128)"),
    ]
    with Tripwire(proc.pid) as wire:
        wrong = []
        for kind, host, message in refused:
            body = {"type": kind, "name": kind, "host": host, "port": 25}
            response = await api.post("/api/v1/monitors", json=body)
            error = response.json.get("error", {}) if response.is_json else {}
            got = (response.status, error.get("code"), error.get("field"))
            if got != (400, "target_blocked", "host") or message not in error.get("message", ""):
                wrong.append(f"{kind} {host}: want 400 target_blocked host {message!r}, got {response!r}")
        assert not wrong, "refusals wrong:\n" + "\n".join(wrong)
        tcp = await api.create_monitor(type="tcp", name="smtp", host="allowed.test", port=25, expect="220")
        tls = await api.create_monitor(type="tls", name="cert", host="127.0.0.2", server_name="allowed.test")
    assert (tcp["url"], tls["url"]) == ("tcp://allowed.test:25", "tls://127.0.0.2:443")
    assert await db.fetchval("SELECT count(*) FROM monitors") == 2
    assert not wire.hits, f"the api opened sockets outside loopback: {wire.describe()}"
