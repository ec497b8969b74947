"""An allowed HTTPS target works through the guard with the certificate verified by host name.

The scheduler resolves ``secure.test`` through the fake DNS server to the allowed address
127.0.0.2 and dials that address, while TLS still carries the name: SNI and the Host header say
``secure.test`` and the certificate is checked against it. The test CA reaches the scheduler
the way an operator's private CA does, through ``MONITOR_CA_FILE`` (added to the system's
trust store); production code has no test hook. The same server by IP address, or under a
name its certificate does not carry, fails verification.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import asyncpg
import pytest
import trustme
from support import ProcessFactory, wait_for
from support.canary import ORIGIN_HOST, Origin, check_counts, checks_of, guarded_scheduler
from support.dns import DNSServer, dns_fixture  # noqa: F401  (the dns fixture)

pytestmark = pytest.mark.timeout(60)

MonitorFactory = Callable[..., Awaitable[asyncpg.Record]]  # the conftest fixture


@pytest.fixture
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
async def secure_origin(ca: trustme.CA) -> AsyncIterator[Origin]:
    """An HTTPS origin on 127.0.0.2 whose certificate names only ``secure.test``."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("secure.test").configure_cert(context)
    server = await Origin(ssl_context=context).start()
    try:
        yield server
    finally:
        await server.close()


async def test_allowed_https_target_is_verified_against_its_name(
    db: asyncpg.Connection,
    monitor_factory: MonitorFactory,
    procs: ProcessFactory,
    dns: DNSServer,
    secure_origin: Origin,
    ca: trustme.CA,
    tmp_path: Path,
) -> None:
    ca_file = tmp_path / "test-ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    dns.zone["secure.test"] = [("A", ORIGIN_HOST)]
    dns.zone["other.test"] = [("A", ORIGIN_HOST)]  # same server, a name the certificate lacks
    env = {"MONITOR_CA_FILE": str(ca_file)}
    async with guarded_scheduler(procs, dns.nameserver, env=env) as (_proc, wire):
        by_name = await monitor_factory(url=secure_origin.url("/health", host="secure.test"))
        by_ip = await monitor_factory(url=secure_origin.url("/by-ip"))
        wrong_name = await monitor_factory(url=secure_origin.url("/wrong", host="other.test"))
        ids = [by_name["id"], by_ip["id"], wrong_name["id"]]

        async def two_checks_each() -> bool:
            return min((await check_counts(db, ids)).values()) >= 2

        await wait_for(two_checks_each, timeout=30, message="2 checks of each HTTPS monitor")
    assert not wire.hits, f"the scheduler opened sockets outside loopback: {wire.describe()}"

    rows = await checks_of(db, by_name["id"])
    assert [(r["ok"], r["status_code"], r["error"]) for r in rows] == [(True, 200, None)] * len(rows)
    health = secure_origin.for_path("/health")
    assert len(health) == len(rows)
    # Host carries the name (and the port, which is not 443); the socket went to the vetted IP.
    assert {(r.host, r.local) for r in health} == {(f"secure.test:{secure_origin.port}", ORIGIN_HOST)}
    assert "secure.test" in secure_origin.sni

    mismatch = {
        by_ip["id"]: "IP address mismatch, certificate is not valid for '127.0.0.2'",
        wrong_name["id"]: "Hostname mismatch, certificate is not valid for 'other.test'",
    }
    for monitor_id, reason in mismatch.items():
        rows = await checks_of(db, monitor_id)
        want = f"TLS certificate error: {reason}"
        for row in rows:
            assert (row["ok"], row["status_code"]) == (False, None), row
            assert row["error"].startswith(want), row["error"]
    # Verification failed in the handshake: no request reached the server under those URLs.
    assert not secure_origin.for_path("/by-ip") and not secure_origin.for_path("/wrong")
