"""The SSRF guard through a real scheduler process: hostile targets are refused before dialling.

Each test plants monitors straight into the database (no API vetting), points the scheduler
at a fake DNS server, allows only 127.0.0.2/32 (where the origin runs) and then reads the
stored checks. The canary listens on 127.0.0.1 and ::1 on the origin's port: any target that
a broken guard would dial on loopback lands on it, and it must see zero connections. For the
few targets outside loopback (10.0.0.5, the metadata addresses) the tripwire on the
scheduler's sockets must see nothing either. Every scenario table also has allowed controls,
so a refusal is shown to come from the guard and not from a target that was never reachable.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import asyncpg
import pytest
from support import ProcessFactory, wait_for
from support.canary import (
    Stage,
    Tripwire,
    check_counts,
    checks_of,
    guarded_scheduler,
    stage_fixture,  # noqa: F401  (the stage fixture)
)
from support.dns import DNSServer, Zone, dns_fixture  # noqa: F401  (the dns fixture)
from yarl import URL

pytestmark = pytest.mark.timeout(60)

# Public addresses appear only as DNS data next to a denied one: the whole name is refused,
# so nothing is dialled. Loopback answers come first, so even a guard that let everything
# through would reach the canary before any public address.
PUBLIC_V4 = "93.184.215.14"
PUBLIC_V6 = "2606:2800:21f:cb07:6820:80da:af6b:8b2c"
CHECKS_PER_MONITOR = 2

MonitorFactory = Callable[..., Awaitable[asyncpg.Record]]  # the conftest fixture


@dataclass(frozen=True)
class Case:
    """One monitor: its URL (``{port}`` is the stage's port) and the error every check must
    store, or None for an allowed control that must be ok."""

    id: str
    url: str
    error: str | None
    follow_redirects: bool = False


async def run_cases(
    db: asyncpg.Connection,
    monitor_factory: MonitorFactory,
    stage: Stage,
    cases: list[Case],
    *,
    checks: int = CHECKS_PER_MONITOR,
) -> dict[str, int]:
    """Plant one monitor per case, wait for ``checks`` checks of each, and compare every stored
    check with its case. Fails with one line per wrong case. Returns the monitor id by case."""
    ids: dict[str, int] = {}
    for case in cases:
        row = await monitor_factory(
            name=case.id,
            url=case.url.format(port=stage.port),
            follow_redirects=case.follow_redirects,
            timeout_seconds=3.0,
        )
        ids[case.id] = row["id"]

    async def all_checked() -> bool:
        counts = await check_counts(db, list(ids.values()))
        return min(counts.values()) >= checks

    await wait_for(all_checked, timeout=30, message=lambda: f"{checks} checks of every monitor")
    wrong = []
    for case in cases:
        for row in await checks_of(db, ids[case.id]):
            want_ok = case.error is None
            if row["ok"] != want_ok or row["error"] != case.error:
                got = f"ok={row['ok']} status={row['status_code']} error={row['error']!r}"
                wrong.append(f"{case.id}: want error={case.error!r}, got {got}")
                break
    assert not wrong, "checks stored wrongly:\n" + "\n".join(wrong)
    return ids


def assert_nothing_reached(stage: Stage, wire: Tripwire) -> None:
    assert stage.canary.count == 0, f"the canary was reached: {stage.canary.describe()}"
    assert not wire.hits, f"the scheduler opened sockets outside loopback: {wire.describe()}"


def resolves(name: str, address: str, reason: str) -> str:
    return f"blocked: {name} resolves to {address} ({reason})"


LOOPBACK_V4 = "loopback 127.0.0.0/8"
LOOPBACK_V6 = "loopback ::1/128"
PRIVATE_10 = "private-use 10.0.0.0/8"

DNS_ZONE: Zone = {
    "allowed.test": [("A", "127.0.0.2")],
    "loopback.test": [("A", "127.0.0.1")],
    "loopback6.test": [("AAAA", "::1")],
    "mapped.test": [("AAAA", "::ffff:127.0.0.1")],
    "zero.test": [("A", "0.0.0.0")],
    "private.test": [("A", "10.0.0.5")],
    "mixed-public.test": [("A", "127.0.0.1"), ("A", PUBLIC_V4)],
    "mixed-public6.test": [("A", "127.0.0.1"), ("AAAA", PUBLIC_V6)],
    "mixed-private.test": [("A", "127.0.0.2"), ("A", "10.0.0.5")],
    "mixed-public-private.test": [("A", PUBLIC_V4), ("A", "10.0.0.5")],
    # Every answer loopback, one of them allowed: dialled there, the denied ones never.
    "all-loopback.test": [("A", "127.0.0.1"), ("A", "127.0.0.2")],
    "all-loopback6.test": [("AAAA", "::1"), ("A", "127.0.0.2")],
    "www.cname.test": [("CNAME", "inner.cname.test")],
    "inner.cname.test": [("A", "127.0.0.1")],
    "alias.test": [("CNAME", "db.internal.test")],
    "db.internal.test": [("A", "10.0.0.5")],
    "metadata.google.internal": [("A", "169.254.169.254")],
    "metadata6.test": [("AAAA", "fd00:ec2::254")],
    "metadata-alibaba.test": [("A", "100.100.100.200")],
}

DNS_CASES = [
    Case("allowed name (control)", "http://allowed.test:{port}/ok", None),
    Case("A loopback", "http://loopback.test:{port}/", resolves("loopback.test", "127.0.0.1", LOOPBACK_V4)),
    Case("AAAA loopback", "http://loopback6.test:{port}/", resolves("loopback6.test", "::1", LOOPBACK_V6)),
    Case(
        "AAAA IPv4-mapped loopback",
        "http://mapped.test:{port}/",
        resolves("mapped.test", "::ffff:127.0.0.1", f"IPv4-mapped 127.0.0.1, {LOOPBACK_V4}"),
    ),
    Case("A 0.0.0.0", "http://zero.test:{port}/", resolves("zero.test", "0.0.0.0", "this-network 0.0.0.0/8")),
    Case("A private", "http://private.test:{port}/", resolves("private.test", "10.0.0.5", PRIVATE_10)),
    Case(
        "mixed: loopback and public A",
        "http://mixed-public.test:{port}/",
        resolves("mixed-public.test", "127.0.0.1", LOOPBACK_V4),
    ),
    Case(
        "mixed: loopback A and public AAAA",
        "http://mixed-public6.test:{port}/",
        resolves("mixed-public6.test", "127.0.0.1", LOOPBACK_V4),
    ),
    Case(
        "mixed: allowed and private A",
        "http://mixed-private.test:{port}/",
        resolves("mixed-private.test", "10.0.0.5", PRIVATE_10),
    ),
    Case(
        "mixed: public and private A",
        "http://mixed-public-private.test:{port}/",
        resolves("mixed-public-private.test", "10.0.0.5", PRIVATE_10),
    ),
    Case("all loopback, one allowed (control)", "http://all-loopback.test:{port}/ok", None),
    Case("all loopback in both families, one allowed (control)", "http://all-loopback6.test:{port}/ok", None),
    Case(
        "CNAME to a loopback name",
        "http://www.cname.test:{port}/",
        resolves("www.cname.test", "127.0.0.1", LOOPBACK_V4),
    ),
    Case(
        "CNAME to a private name",
        "http://alias.test:{port}/",
        resolves("alias.test", "10.0.0.5", PRIVATE_10),
    ),
    Case(
        "metadata.google.internal",
        "http://metadata.google.internal/computeMetadata/v1/",
        resolves("metadata.google.internal", "169.254.169.254", "link-local 169.254.0.0/16"),
    ),
    Case(
        "AWS metadata over IPv6 by name",
        "http://metadata6.test/latest/meta-data/",
        resolves("metadata6.test", "fd00:ec2::254", "unique-local (ULA) fc00::/7"),
    ),
    Case(
        "Alibaba metadata by name",
        "http://metadata-alibaba.test/latest/meta-data/",
        resolves("metadata-alibaba.test", "100.100.100.200", "shared address space (CGNAT) 100.64.0.0/10"),
    ),
]


async def test_denied_dns_answers_are_refused_before_dialling(
    db: asyncpg.Connection,
    monitor_factory: MonitorFactory,
    procs: ProcessFactory,
    dns: DNSServer,
    stage: Stage,
) -> None:
    dns.zone.update(DNS_ZONE)
    async with guarded_scheduler(procs, dns.nameserver) as (_proc, wire):
        await run_cases(db, monitor_factory, stage, DNS_CASES)
    assert_nothing_reached(stage, wire)
    # Every name was asked of our DNS server (A and AAAA), and the mixed answers that
    # include the allowed address did not reach the origin either: only the controls did
    # (the all-loopback ones on their allowed address; the canary saw nothing).
    names = {URL(c.url.format(port=1)).raw_host for c in DNS_CASES}
    assert names <= {name for name, kind in dns.queries if kind == "A"}
    assert names <= {name for name, kind in dns.queries if kind == "AAAA"}
    hosts = {r.host for r in stage.origin.requests}
    controls = ("allowed.test", "all-loopback.test", "all-loopback6.test")
    assert hosts == {f"{name}:{stage.port}" for name in controls}, hosts


def non_canonical_reason(host: str) -> str:
    return f"non-canonical numeric host {host!r}: only a dotted quad like 192.0.2.1 is accepted"


def non_canonical(host: str) -> str:
    return f"invalid target: {non_canonical_reason(host)}"


LITERAL_CASES = [
    Case("allowed literal (control)", "http://127.0.0.2:{port}/ok", None),
    Case("127.0.0.1", "http://127.0.0.1:{port}/", f"blocked: 127.0.0.1 ({LOOPBACK_V4})"),
    Case("127.0.0.1 trailing dot", "http://127.0.0.1.:{port}/", f"blocked: 127.0.0.1 ({LOOPBACK_V4})"),
    Case("[::1]", "http://[::1]:{port}/", f"blocked: ::1 ({LOOPBACK_V6})"),
    Case("[0:0:0:0:0:0:0:1]", "http://[0:0:0:0:0:0:0:1]:{port}/", f"blocked: ::1 ({LOOPBACK_V6})"),
    Case(
        "[::ffff:127.0.0.1]",
        "http://[::ffff:127.0.0.1]:{port}/",
        f"blocked: ::ffff:127.0.0.1 (IPv4-mapped 127.0.0.1, {LOOPBACK_V4})",
    ),
    Case(
        "[::ffff:7f00:1]",
        "http://[::ffff:7f00:1]:{port}/",
        f"blocked: ::ffff:127.0.0.1 (IPv4-mapped 127.0.0.1, {LOOPBACK_V4})",
    ),
    Case("0.0.0.0", "http://0.0.0.0:{port}/", "blocked: 0.0.0.0 (this-network 0.0.0.0/8)"),
    Case("[::]", "http://[::]:{port}/", "blocked: :: (unspecified ::/128)"),
    Case("localhost", "http://localhost:{port}/", resolves("localhost", "127.0.0.1", LOOPBACK_V4)),
    Case("LOCALHOST.", "http://LOCALHOST.:{port}/", resolves("localhost", "127.0.0.1", LOOPBACK_V4)),
    Case(
        "api.localhost",
        "http://api.localhost:{port}/",
        resolves("api.localhost", "127.0.0.1", LOOPBACK_V4),
    ),
    # Every numeric encoding of 127.0.0.1 that inet_aton or a browser would accept.
    *(
        Case(host, f"http://{host}:{{port}}/", non_canonical(host.lower().rstrip(".")))
        for host in (
            "2130706433",
            "0x7f000001",
            "0X7F000001",
            "0177.0.0.1",
            "127.1",
            "0x7f.1",
            "127.0.1",
            "017700000001",
            "127.000.000.001",
            "0x7f.0.0.1",
            "2130706433.",
        )
    ),
    # Cloud metadata endpoints, by address.
    Case(
        "AWS/GCP/Azure metadata",
        "http://169.254.169.254/latest/meta-data/",
        "blocked: 169.254.169.254 (link-local 169.254.0.0/16)",
    ),
    Case(
        "AWS metadata over IPv6",
        "http://[fd00:ec2::254]/latest/meta-data/",
        "blocked: fd00:ec2::254 (unique-local (ULA) fc00::/7)",
    ),
    Case(
        "Alibaba metadata",
        "http://100.100.100.200/latest/meta-data/",
        "blocked: 100.100.100.200 (shared address space (CGNAT) 100.64.0.0/10)",
    ),
    Case(
        "metadata as IPv4-mapped hex",
        "http://[::ffff:a9fe:a9fe]/latest/meta-data/",
        "blocked: ::ffff:169.254.169.254 (IPv4-mapped 169.254.169.254, link-local 169.254.0.0/16)",
    ),
    Case(
        "metadata as decimal",
        "http://2852039166/latest/meta-data/",
        non_canonical("2852039166"),
    ),
]


async def test_literal_hosts_and_every_encoding_of_loopback_are_refused(
    db: asyncpg.Connection,
    monitor_factory: MonitorFactory,
    procs: ProcessFactory,
    dns: DNSServer,
    stage: Stage,
) -> None:
    async with guarded_scheduler(procs, dns.nameserver) as (_proc, wire):
        await run_cases(db, monitor_factory, stage, LITERAL_CASES)
    assert_nothing_reached(stage, wire)
    assert dns.queries == [], "literals and localhost must never be sent to a DNS server"
    assert {r.path for r in stage.origin.requests} == {"/ok"}


# Redirects from the allowed origin (paths under /r/); every monitor follows redirects.
def redirects(port: int) -> dict[str, tuple[int, str]]:
    return {
        "/r/loopback": (302, f"http://127.0.0.1:{port}/"),
        "/r/loopback6": (308, f"http://[::1]:{port}/"),
        "/r/decimal": (301, f"http://2130706433:{port}/"),
        "/r/mapped": (307, f"http://[::ffff:127.0.0.1]:{port}/"),
        "/r/hex": (302, f"http://0x7f.1:{port}/"),
        "/r/gopher": (302, f"gopher://127.0.0.1:{port}/_GET%20/"),
        "/r/file": (302, "file:///etc/passwd"),
        "/r/ftp": (303, f"ftp://127.0.0.1:{port}/"),
        "/r/name": (302, f"http://loopback.test:{port}/"),
        "/r/localhost": (302, f"http://localhost:{port}/"),
        "/r/metadata": (302, "http://169.254.169.254/latest/meta-data/iam/security-credentials/"),
        "/r/private-name": (302, f"http://private.test:{port}/"),
        # Several allowed hops first: every hop is judged, not just the first.
        "/r/chain": (302, "/r/chain2"),
        "/r/chain2": (301, f"http://allowed.test:{port}/r/loopback"),
        # Control: a redirect to an allowed name is followed to the end.
        "/r/allowed": (302, f"http://allowed.test:{port}/landing"),
    }


def redirect_refused(location: str, reason: str) -> str:
    return f"redirect to invalid target {location!r}: {reason}"


def scheme_refused(location: str) -> str:
    scheme = location.split(":", 1)[0]
    return redirect_refused(location, f"scheme {scheme!r} not allowed (use http, https)")


def redirect_cases(port: int) -> list[Case]:
    def case(path: str, error: str | None) -> Case:
        return Case(path, f"http://127.0.0.2:{{port}}{path}", error, follow_redirects=True)

    def hop(error: str, url: str) -> str:  # a hop refused by address names the hop
        return f"{error} after a redirect to {url.format(port=port)}"

    loopback = "http://127.0.0.1:{port}/"
    return [
        case("/r/allowed", None),
        case("/r/loopback", hop(f"blocked: 127.0.0.1 ({LOOPBACK_V4})", loopback)),
        case("/r/loopback6", hop(f"blocked: ::1 ({LOOPBACK_V6})", "http://[::1]:{port}/")),
        case(
            "/r/decimal", redirect_refused(f"http://2130706433:{port}/", non_canonical_reason("2130706433"))
        ),
        case(
            "/r/mapped",
            hop(
                f"blocked: ::ffff:127.0.0.1 (IPv4-mapped 127.0.0.1, {LOOPBACK_V4})",
                "http://[::ffff:7f00:1]:{port}/",
            ),
        ),
        case("/r/hex", redirect_refused(f"http://0x7f.1:{port}/", non_canonical_reason("0x7f.1"))),
        case("/r/gopher", scheme_refused(f"gopher://127.0.0.1:{port}/_GET%20/")),
        case("/r/file", scheme_refused("file:///etc/passwd")),
        case("/r/ftp", scheme_refused(f"ftp://127.0.0.1:{port}/")),
        case(
            "/r/name",
            hop(resolves("loopback.test", "127.0.0.1", LOOPBACK_V4), "http://loopback.test:{port}/"),
        ),
        case(
            "/r/localhost", hop(resolves("localhost", "127.0.0.1", LOOPBACK_V4), "http://localhost:{port}/")
        ),
        case(
            "/r/metadata",
            hop(
                "blocked: 169.254.169.254 (link-local 169.254.0.0/16)",
                "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
            ),
        ),
        case(
            "/r/private-name",
            hop(resolves("private.test", "10.0.0.5", PRIVATE_10), "http://private.test:{port}/"),
        ),
        case("/r/chain", hop(f"blocked: 127.0.0.1 ({LOOPBACK_V4})", loopback)),
    ]


async def test_redirects_to_denied_targets_are_refused_at_each_hop(
    db: asyncpg.Connection,
    monitor_factory: MonitorFactory,
    procs: ProcessFactory,
    dns: DNSServer,
    stage: Stage,
) -> None:
    dns.zone.update(DNS_ZONE)
    for path, (status, location) in redirects(stage.port).items():
        stage.origin.redirect(path, location, status)
    async with guarded_scheduler(procs, dns.nameserver) as (_proc, wire):
        await run_cases(db, monitor_factory, stage, redirect_cases(stage.port))
    assert_nothing_reached(stage, wire)
    seen = {r.path for r in stage.origin.requests}
    # The chain was followed over its allowed hops (a name among them) before the refusal.
    assert {"/r/chain", "/r/chain2", "/r/loopback", "/landing"} <= seen, seen
    chained = [r.host for r in stage.origin.requests if r.path == "/r/loopback"]
    assert f"allowed.test:{stage.port}" in chained


async def test_rebinding_is_judged_at_every_connection(
    db: asyncpg.Connection,
    monitor_factory: MonitorFactory,
    procs: ProcessFactory,
    dns: DNSServer,
    stage: Stage,
) -> None:
    # The first lookup of each name answers the allowed origin, every later one the canary.
    def rebind(first: str, later: str) -> Callable[[int], list[tuple[str, str]]]:
        return lambda n: [("A", first if n <= 1 else later)]

    dns.zone["rebind.test"] = rebind("127.0.0.2", "127.0.0.1")
    # The same within one check: the origin redirects to the same name, whose second lookup
    # (for the second hop) answers loopback. The first hop's address must not be reused.
    dns.zone["rebind-hop.test"] = rebind("127.0.0.2", "127.0.0.1")
    stage.origin.redirect("/hop", "/landing")
    blocked = "blocked: {} resolves to 127.0.0.1 (loopback 127.0.0.0/8)"
    async with guarded_scheduler(procs, dns.nameserver) as (_proc, wire):
        plain = await monitor_factory(url=f"http://rebind.test:{stage.port}/first", timeout_seconds=3.0)
        hop = await monitor_factory(
            url=f"http://rebind-hop.test:{stage.port}/hop", follow_redirects=True, timeout_seconds=3.0
        )

        async def six_checks_each() -> bool:
            counts = await check_counts(db, [plain["id"], hop["id"]])
            return min(counts.values()) >= 6

        await wait_for(six_checks_each, timeout=30, message="6 checks of each rebinding monitor")
    assert_nothing_reached(stage, wire)

    rows = await checks_of(db, plain["id"])
    first, later = rows[0], rows[1:]
    assert (first["ok"], first["status_code"], first["error"]) == (True, 200, None)
    assert [(r["ok"], r["error"]) for r in later] == [(False, blocked.format("rebind.test"))] * len(later)
    assert dns.protocol.lookups("rebind.test") == len(rows), "one fresh lookup per check"

    rows = await checks_of(db, hop["id"])
    # The first check is refused at its second hop (the redirect), every later one at its first.
    refused = blocked.format("rebind-hop.test")
    after_redirect = f"{refused} after a redirect to http://rebind-hop.test:{stage.port}/landing"
    expected = [(False, after_redirect)] + [(False, refused)] * (len(rows) - 1)
    assert [(r["ok"], r["error"]) for r in rows] == expected
    # The first check reached the origin once (the first hop), and nothing after that.
    assert sorted((r.path, r.host) for r in stage.origin.requests) == [
        ("/first", f"rebind.test:{stage.port}"),
        ("/hop", f"rebind-hop.test:{stage.port}"),
    ]
