"""Ping checks for real: ``PingCheck.run`` pinging a network namespace host of its own
(``support.netns``) over a veth pair, IPv4 and IPv6, through the SSRF guard.

The namespace's ICMP counters are the witness: every echo request that reached it is counted,
answered or not, so a test can tell what a check really sent. What the unit tables cannot show:
a host that answers is up with its round trips; one that drops echoes is down within the
monitor's timeout; loss is counted reply by reply (the kernel's rate limit drops all replies
but the first few); a router's "host unreachable" becomes the cause; a private address, or a
name resolving to one, is refused with http's very ``blocked:`` text before one echo leaves;
and a process allowed neither socket kind is told what to configure, while one inside
``net.ipv4.ping_group_range`` pings without privileges.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import shutil
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager

import pytest
from support.dns import DNSServer, dns_fixture  # noqa: F401  (the dns fixture)
from support.netns import POOL, NetnsHost, netns_host_fixture  # noqa: F401  (the netns_host fixture)
from support.skips import skip_beyond_make

from monitor.checks.base import CheckContext
from monitor.checks.ping import PingCheck, not_permitted
from monitor.models import CheckResult, MonitorSpec
from monitor.net.client import fetch
from monitor.net.policy import AddressPolicy
from monitor.net.resolver import VettedResolver
from monitor.net.session import make_session

pytestmark = pytest.mark.timeout(60)

PRIVATE_10 = "private-use 10.0.0.0/8"
ULA = "unique-local (ULA) fc00::/7"
# Documentation space: never answered, only ever DNS data beside a denied address.
PUBLIC_V4 = "93.184.215.14"

Ping = Callable[..., Awaitable[CheckResult]]


@asynccontextmanager
async def checker(allow: Sequence[str], nameserver: str | None = None) -> AsyncIterator[Ping]:
    """``await ping(host, count=..., max_loss_percent=..., timeout_seconds=...)``: one real check by a
    session that may dial ``allow`` and asks ``nameserver``."""
    policy = AddressPolicy(list(allow))
    resolver = VettedResolver(policy, [nameserver] if nameserver else [], timeout=2.0)
    session = make_session(resolver)
    ctx = CheckContext(session, policy)
    check = PingCheck()

    async def ping(
        host: str, *, count: int = 3, max_loss_percent: float = 50, timeout_seconds: float = 3
    ) -> CheckResult:
        stored = {"host": host, "count": count, "max_loss_percent": max_loss_percent}
        spec = MonitorSpec(
            id=1,
            name="ping",
            type="ping",
            url=f"ping://{host}",
            interval_seconds=60,
            timeout_seconds=timeout_seconds,
            expected_status=(),
            confirm_after=1,
            follow_redirects=False,
            paused=False,
            options=check.options(stored, None),
        )
        return await check.run(spec, ctx, dt.datetime.now(dt.UTC))

    try:
        yield ping
    finally:
        await session.close()
        await resolver.close()


def allowed(host: NetnsHost) -> list[str]:
    return [host.cidr, *([host.cidr6] if host.cidr6 else [])]


def assert_up(result: CheckResult, address: str, count: int = 3) -> None:
    assert (result.ok, result.error) == (True, None), result
    figures = result.details
    assert figures is not None
    assert figures["address"] == address
    assert (figures["sent"], figures["received"], figures["loss_percent"]) == (count, count, 0.0)
    assert 0 < figures["rtt_min_ms"] <= figures["rtt_avg_ms"] <= figures["rtt_max_ms"] < 1000
    assert result.latency_ms == figures["rtt_avg_ms"]


@pytest.mark.parametrize("kind", ["IPv4 literal", "IPv6 literal", "name"])
async def test_a_host_that_answers_is_up(netns_host: NetnsHost, dns: DNSServer, kind: str) -> None:
    if kind == "IPv6 literal" and netns_host.address6 is None:
        skip_beyond_make("IPv6 is disabled on this machine")
    host, address = {
        "IPv4 literal": (netns_host.address, netns_host.address),
        "IPv6 literal": (netns_host.address6, netns_host.address6),
        "name": ("router.test", netns_host.address),
    }[kind]
    assert host is not None and address is not None
    dns.zone["router.test"] = [("A", netns_host.address)]
    async with checker(allowed(netns_host), dns.nameserver) as ping:
        result = await ping(host)
    assert_up(result, address)
    assert netns_host.icmp() == {"echo_requests": 3, "echo_replies": 3}
    # Only a name takes a lookup.
    assert ("dns_ms" in result.timings) is (kind == "name"), result.timings


async def test_a_host_that_drops_ping_is_down_within_the_timeout(netns_host: NetnsHost) -> None:
    netns_host.ignore_ping()
    async with checker(allowed(netns_host)) as ping:
        begun = time.monotonic()
        result = await ping(netns_host.address, count=3, timeout_seconds=1.5)
        took = time.monotonic() - begun
        assert (result.ok, result.error) == (
            False,
            f"no reply from {netns_host.address} (3 of 3 packets lost)",
        )
        assert result.latency_ms is None
        assert result.details == {
            "address": netns_host.address,
            "sent": 3,
            "received": 0,
            "loss_percent": 100.0,
            "rtt_min_ms": None,
            "rtt_avg_ms": None,
            "rtt_max_ms": None,
        }
        # Within its timeout, with room for a loaded machine; a timeout taken per echo would be 4.5 s.
        assert took < 2 * 1.5, f"the check took {took:.2f}s, its timeout is 1.5s"
        # The echoes did leave: they arrived and were dropped.
        assert netns_host.icmp() == {"echo_requests": 3, "echo_replies": 0}

        # Answering again: up on the next check.
        netns_host.ignore_ping(False)
        assert_up(await ping(netns_host.address), netns_host.address)


async def test_loss_is_counted_reply_by_reply(netns_host: NetnsHost) -> None:
    netns_host.limit_replies()
    async with checker(allowed(netns_host)) as ping:
        result = await ping(netns_host.address, count=10, max_loss_percent=5)
    counters = netns_host.icmp()
    answered = counters["echo_replies"]
    assert counters["echo_requests"] == 10
    assert 1 <= answered < 10, counters  # the rate limit lets the first through, not all
    loss = round(100 * (10 - answered) / 10, 1)
    assert (result.ok, result.error) == (
        False,
        f"{loss:g} % packet loss from {netns_host.address} (above 5 %)",
    )
    assert result.details is not None
    assert (result.details["sent"], result.details["received"]) == (10, answered)
    assert result.details["loss_percent"] == loss


async def test_an_icmp_error_is_the_cause(netns_host: NetnsHost) -> None:
    far = netns_host.unreachable()
    async with checker([str(POOL)]) as ping:
        result = await ping(far, count=2)
    # Raw sockets (root here) see the router's ICMP error; it is what the operator reads.
    cause = f"no reply from {far} (2 of 2 packets lost): Destination host unreachable"
    assert (result.ok, result.error, result.latency_ms) == (False, cause, None)
    assert result.details is not None
    assert (result.details["sent"], result.details["received"]) == (2, 0)


async def test_refused_targets_are_refused_as_http_refuses_them_and_get_no_echo(
    netns_host: NetnsHost, dns: DNSServer
) -> None:
    address, address6 = netns_host.address, netns_host.address6
    dns.zone.update(
        {
            "router.test": [("A", address)],
            "mixed.test": [("A", PUBLIC_V4), ("A", address)],
            "alias.test": [("CNAME", "router.test")],
            **({"router6.test": [("AAAA", address6)]} if address6 else {}),
        }
    )
    cases = [
        (address, f"blocked: {address} ({PRIVATE_10})"),
        (f"::ffff:{address}", f"blocked: ::ffff:{address} (IPv4-mapped {address}, {PRIVATE_10})"),
        ("router.test", f"blocked: router.test resolves to {address} ({PRIVATE_10})"),
        ("mixed.test", f"blocked: mixed.test resolves to {address} ({PRIVATE_10})"),
        ("alias.test", f"blocked: alias.test resolves to {address} ({PRIVATE_10})"),
        ("localhost", "blocked: localhost resolves to 127.0.0.1 (loopback 127.0.0.0/8)"),
    ]
    if address6:
        cases += [
            (address6, f"blocked: {address6} ({ULA})"),
            ("router6.test", f"blocked: router6.test resolves to {address6} ({ULA})"),
        ]
    # The operator's default: no allow-list.
    async with checker([], dns.nameserver) as ping:
        policy = AddressPolicy([])
        resolver = VettedResolver(policy, [dns.nameserver], timeout=2.0)
        session = make_session(resolver)
        try:
            for host, error in cases:
                result = await ping(host)
                assert (result.ok, result.error, result.details) == (False, error, None), host
                # The same target as an http URL: the very same words.
                literal = f"[{host}]" if ":" in host else host
                got = await fetch(session, policy, f"http://{literal}/", timeout=2)
                assert (got.blocked, got.error) == (True, error), host
        finally:
            await session.close()
            await resolver.close()
    assert netns_host.icmp() == {"echo_requests": 0, "echo_replies": 0}, "an echo left for a refused target"

    # Control: with the namespace's addresses allowed, the same names are pinged.
    async with checker(allowed(netns_host), dns.nameserver) as ping:
        assert_up(await ping("router.test"), address)
        if address6:
            assert_up(await ping("router6.test"), address6)
    assert netns_host.icmp()["echo_requests"] == (6 if address6 else 3)


# A check run without CAP_NET_RAW inside the namespace, printing its result as JSON.
_UNPRIVILEGED = """
import asyncio, datetime, json, sys
from monitor.checks.base import CheckContext
from monitor.checks.ping import PingCheck
from monitor.models import MonitorSpec
from monitor.net.policy import AddressPolicy
from monitor.net.resolver import VettedResolver
from monitor.net.session import make_session

async def main(address, cidr):
    policy = AddressPolicy([cidr])
    resolver = VettedResolver(policy)
    session = make_session(resolver)
    check = PingCheck()
    spec = MonitorSpec(1, "ping", "ping", "ping://" + address, 60, 3, (), 1, False, False,
                       options=check.options({"host": address}, None))
    result = await check.run(spec, CheckContext(session, policy), datetime.datetime.now(datetime.UTC))
    await session.close()
    await resolver.close()
    print(json.dumps({"ok": result.ok, "error": result.error, "details": result.details,
                      "privileged": check._privileged}))

asyncio.run(main(*sys.argv[1:]))
"""


async def test_sockets_without_privileges(netns_host: NetnsHost) -> None:
    if shutil.which("setpriv") is None:
        pytest.skip("util-linux's setpriv is not installed")

    async def as_unprivileged() -> dict[str, object]:
        proc = await asyncio.create_subprocess_exec(
            *("ip", "netns", "exec", netns_host.namespace),
            # Root without CAP_NET_RAW: what a service user lacks, while still able to read a
            # checkout that only root may (mktemp -d is 0700: a fresh clone in CI is one).
            *("setpriv", "--bounding-set=-net_raw", "--inh-caps=-net_raw"),
            *(sys.executable, "-c", _UNPRIVILEGED, netns_host.address, netns_host.cidr),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await proc.communicate()
        assert proc.returncode == 0, err.decode()
        # The last line: a log line ("ping.sockets") may come first.
        answer: dict[str, object] = json.loads(out.decode().splitlines()[-1])
        return answer

    # A new namespace allows unprivileged ICMP to no group, and the process lacks CAP_NET_RAW.
    netns_host.sysctl(net__ipv4__ping_group_range="1 0")
    refused = await as_unprivileged()
    assert refused == {
        "ok": False,
        "error": not_permitted(0, "1 0"),
        "details": None,
        "privileged": {},
    }
    # What systemd's sysctl defaults set (and docs/checks.md says): an unprivileged socket.
    netns_host.sysctl(net__ipv4__ping_group_range="0 2147483647")
    pinged = await as_unprivileged()
    assert (pinged["ok"], pinged["error"], pinged["privileged"]) == (True, None, {"4": False}), pinged
    assert pinged["details"] == {**pinged["details"], "sent": 3, "received": 3}  # type: ignore[dict-item]
