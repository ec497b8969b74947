"""VettedResolver against a fake DNS server on 127.0.0.1: fail closed on any denied answer,
but a name whose every answer is loopback is dialled on its allowed answers; localhost as the
system's resolver answers it.

The fake server and its fixture live in tests/support/dns.py (test_net_client.py uses them too).
Every socket in these tests is on loopback.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Callable, Sequence
from ipaddress import IPv4Address, IPv6Address, ip_address
from typing import Any

import pytest
from support.dns import DNSServer, Records, Zone, dns_fixture  # noqa: F401  (the dns fixture)

from monitor.net.policy import AddressPolicy, BlockedTarget, InvalidTarget, IPAddress
from monitor.net.resolver import ResolutionError, VettedResolver, parse_nameserver, system_localhost

MakeResolver = Callable[..., VettedResolver]

V4, V6 = IPv4Address("127.0.0.1"), IPv6Address("::1")
# localhost as Debian's stock /etc/hosts answers it; tests that need another answer say so.
DUAL_STACK = (V4, V6)


def hosts_file(*answers: IPAddress) -> Callable[[], Any]:
    """A system resolver whose /etc/hosts maps localhost to ``answers``."""

    async def lookup() -> Sequence[IPAddress]:
        return answers

    return lookup


@pytest.fixture
async def make_resolver() -> AsyncIterator[MakeResolver]:
    """Factory: VettedResolver(policy, [server]); every one made is closed after the test."""
    made: list[VettedResolver] = []

    def factory(
        server: DNSServer,
        allow: list[str] | None = None,
        timeout: float = 2.0,
        localhost: Sequence[IPAddress] = DUAL_STACK,
    ) -> VettedResolver:
        resolver = VettedResolver(
            AddressPolicy(allow or []), [server.nameserver], timeout=timeout, localhost=hosts_file(*localhost)
        )
        made.append(resolver)
        return resolver

    yield factory
    for resolver in made:
        await resolver.close()


LOOP_ALLOW = ["127.0.0.2/32"]  # the "allowed test address"; 127.0.0.1 stays denied


@pytest.mark.parametrize(
    ("records", "vetted"),
    [
        ([("A", "127.0.0.2")], [IPv4Address("127.0.0.2")]),
        ([("A", "127.0.0.2"), ("A", "127.0.0.2")], [IPv4Address("127.0.0.2")]),
        ([("AAAA", "::ffff:127.0.0.2")], [IPv4Address("127.0.0.2")]),  # mapped answer unwrapped
        ([("A", "127.0.0.2"), ("AAAA", "::ffff:127.0.0.2")], [IPv4Address("127.0.0.2")]),
    ],
)
async def test_vet_allowed_answers(
    dns: DNSServer, make_resolver: MakeResolver, records: Records, vetted: list[IPv4Address]
) -> None:
    dns.protocol.zone["ok.test"] = records
    assert await make_resolver(dns, LOOP_ALLOW).vet("ok.test") == vetted
    assert ("ok.test", "A") in dns.protocol.queries
    assert ("ok.test", "AAAA") in dns.protocol.queries


@pytest.mark.parametrize(
    ("records", "reason"),
    [
        ([("A", "127.0.0.1")], "resolves to 127.0.0.1 (loopback 127.0.0.0/8)"),
        ([("A", "10.0.0.5")], "resolves to 10.0.0.5 (private-use 10.0.0.0/8)"),
        ([("A", "169.254.169.254")], "resolves to 169.254.169.254 (link-local 169.254.0.0/16)"),
        # Mixed answers: one allowed, one denied, in either family; the whole name is refused.
        ([("A", "127.0.0.2"), ("A", "10.0.0.5")], "resolves to 10.0.0.5 (private-use 10.0.0.0/8)"),
        ([("A", "127.0.0.2"), ("AAAA", "fd00::1")], "resolves to fd00::1 (unique-local (ULA) fc00::/7)"),
        # Public next to private or loopback: refused whole, whatever comes first.
        ([("A", "93.184.215.14"), ("A", "10.0.0.5")], "resolves to 10.0.0.5 (private-use 10.0.0.0/8)"),
        ([("A", "10.0.0.5"), ("A", "93.184.215.14")], "resolves to 10.0.0.5 (private-use 10.0.0.0/8)"),
        (
            [("A", "127.0.0.1"), ("AAAA", "2606:2800:21f:cb07:6820:80da:af6b:8b2c")],
            "resolves to 127.0.0.1 (loopback 127.0.0.0/8)",
        ),
        # All loopback but one answer private: not this machine only, so refused whole.
        (
            [("A", "127.0.0.2"), ("A", "127.0.0.1"), ("A", "10.0.0.5")],
            "resolves to 127.0.0.1 (loopback 127.0.0.0/8)",
        ),
        # All loopback, none allowed.
        ([("A", "127.0.0.1"), ("AAAA", "::1")], "resolves to 127.0.0.1 (loopback 127.0.0.0/8)"),
        (
            [("AAAA", "::ffff:127.0.0.1")],
            "resolves to ::ffff:127.0.0.1 (IPv4-mapped 127.0.0.1, loopback 127.0.0.0/8)",
        ),
        ([("AAAA", "64:ff9b::7f00:2")], "resolves to 64:ff9b::7f00:2 (NAT64 64:ff9b::/96)"),
    ],
)
async def test_vet_denied_answers(
    dns: DNSServer, make_resolver: MakeResolver, records: Records, reason: str
) -> None:
    dns.protocol.zone["evil.test"] = records
    with pytest.raises(BlockedTarget) as caught:
        await make_resolver(dns, LOOP_ALLOW).vet("evil.test")
    assert caught.value.reason == reason
    assert caught.value.host == "evil.test"


@pytest.mark.parametrize(
    ("records", "allow", "vetted"),
    [
        # Every answer loopback: this machine whichever is dialled, so the allowed ones are.
        ([("A", "127.0.0.2"), ("A", "127.0.0.1")], LOOP_ALLOW, [IPv4Address("127.0.0.2")]),
        ([("A", "127.0.0.2"), ("AAAA", "::1")], LOOP_ALLOW, [IPv4Address("127.0.0.2")]),
        ([("A", "127.0.0.1"), ("AAAA", "::1")], ["127.0.0.1/32"], [V4]),
        ([("A", "127.0.0.1"), ("AAAA", "::1")], ["::1/128"], [V6]),
        ([("A", "127.0.0.1"), ("AAAA", "::ffff:127.0.0.2")], LOOP_ALLOW, [IPv4Address("127.0.0.2")]),
        ([("A", "127.0.0.1"), ("AAAA", "::1")], ["127.0.0.0/8", "::1/128"], [V4, V6]),
    ],
)
async def test_vet_all_loopback_answers_dial_the_allowed_ones(
    dns: DNSServer, make_resolver: MakeResolver, records: Records, allow: list[str], vetted: list[IPAddress]
) -> None:
    dns.protocol.zone["dev.test"] = records
    assert await make_resolver(dns, allow).vet("dev.test") == vetted


async def test_cname_to_private_name_blocked(dns: DNSServer, make_resolver: MakeResolver) -> None:
    dns.protocol.zone["www.test"] = [("CNAME", "internal.test")]
    dns.protocol.zone["internal.test"] = [("A", "127.0.0.1")]
    with pytest.raises(BlockedTarget, match=r"resolves to 127\.0\.0\.1 \(loopback"):
        await make_resolver(dns, LOOP_ALLOW).vet("www.test")


async def test_every_lookup_is_judged_afresh(dns: DNSServer, make_resolver: MakeResolver) -> None:
    # Rebinding: the first A answer is allowed, every later one is loopback. No cache may help.
    dns.protocol.zone["rebind.test"] = lambda n: [("A", "127.0.0.2" if n <= 1 else "127.0.0.1")]
    resolver = make_resolver(dns, LOOP_ALLOW)
    assert await resolver.vet("rebind.test") == [IPv4Address("127.0.0.2")]
    for _ in range(3):
        with pytest.raises(BlockedTarget):
            await resolver.vet("rebind.test")


@pytest.mark.parametrize(
    ("zone", "message"),
    [
        ({}, "cannot resolve gone.test: no such domain"),
        ({"gone.test": []}, "cannot resolve gone.test: no A or AAAA records"),
    ],
)
async def test_unresolvable(dns: DNSServer, make_resolver: MakeResolver, zone: Zone, message: str) -> None:
    dns.protocol.zone.update(zone)
    with pytest.raises(ResolutionError, match=message):
        await make_resolver(dns).vet("gone.test")


async def test_silent_server_times_out(dns: DNSServer, make_resolver: MakeResolver) -> None:
    dns.protocol.silent = True
    with pytest.raises(ResolutionError, match=r"timed out after 0\.5s"):
        await make_resolver(dns, timeout=0.5).vet("slow.test")


@pytest.mark.parametrize(
    ("host", "allow", "result"),
    [
        ("127.0.0.2", LOOP_ALLOW, [IPv4Address("127.0.0.2")]),
        ("::ffff:127.0.0.2", LOOP_ALLOW, [IPv4Address("127.0.0.2")]),
        ("[::1]", ["::1/128"], [IPv6Address("::1")]),
        ("127.0.0.1", LOOP_ALLOW, "127.0.0.1 (loopback 127.0.0.0/8)"),
        ("169.254.169.254", [], "169.254.169.254 (link-local 169.254.0.0/16)"),
        ("localhost", [], "resolves to 127.0.0.1 (loopback 127.0.0.0/8)"),
        ("api.localhost.", [], "resolves to 127.0.0.1 (loopback 127.0.0.0/8)"),
        ("localhost", ["127.0.0.0/8", "::1/128"], [V4, V6]),
        # Allowing loopback's IPv4 address is enough, though the answer also holds ::1.
        ("localhost", ["127.0.0.1/32"], [V4]),
        ("api.localhost", ["127.0.0.0/8"], [V4]),
    ],
)
async def test_vet_literals_and_localhost_without_dns(
    dns: DNSServer, make_resolver: MakeResolver, host: str, allow: list[str], result: object
) -> None:
    resolver = make_resolver(dns, allow)
    if isinstance(result, str):
        with pytest.raises(BlockedTarget) as caught:
            await resolver.vet(host)
        assert caught.value.reason == result
    else:
        assert await resolver.vet(host) == result
    assert dns.protocol.queries == []  # literals and localhost never reach a DNS server


@pytest.mark.parametrize(
    ("hosts", "allow", "result"),
    [
        ((V4,), ["127.0.0.1/32"], [V4]),  # /etc/hosts names 127.0.0.1 only: never "resolves to ::1"
        ((V4,), [], "resolves to 127.0.0.1 (loopback 127.0.0.0/8)"),
        ((V6,), ["127.0.0.1/32"], "resolves to ::1 (loopback ::1/128)"),
        ((V6, V4), ["127.0.0.1/32"], [V4]),
        # An /etc/hosts that maps localhost elsewhere is judged like any answer.
        ((IPv4Address("10.0.0.5"),), ["127.0.0.0/8"], "resolves to 10.0.0.5 (private-use 10.0.0.0/8)"),
        ((V4, IPv4Address("10.0.0.5")), ["127.0.0.0/8"], "resolves to 10.0.0.5 (private-use 10.0.0.0/8)"),
    ],
)
async def test_localhost_follows_the_system_resolver(
    dns: DNSServer,
    make_resolver: MakeResolver,
    hosts: tuple[IPAddress, ...],
    allow: list[str],
    result: object,
) -> None:
    resolver = make_resolver(dns, allow, localhost=hosts)
    for name in ("localhost", "www.localhost"):
        if isinstance(result, str):
            with pytest.raises(BlockedTarget) as caught:
                await resolver.vet(name)
            assert (caught.value.reason, caught.value.host) == (result, name)
        else:
            assert await resolver.vet(name) == result
    assert dns.protocol.queries == []


async def test_system_localhost_is_getaddrinfo_ipv4_first(monkeypatch: pytest.MonkeyPatch) -> None:
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo("localhost", None, type=socket.SOCK_STREAM)
    expected = sorted(dict.fromkeys(ip_address(i[4][0]) for i in infos), key=lambda a: a.version)
    assert await system_localhost() == expected

    async def answers(*args: object, **kwargs: object) -> list[Any]:
        stream = socket.SOCK_STREAM
        return [
            (socket.AF_INET6, stream, 6, "", ("::1", 0, 0, 0)),
            (socket.AF_INET, stream, 6, "", ("127.0.0.1", 0)),
        ]

    monkeypatch.setattr(loop, "getaddrinfo", answers)
    assert await system_localhost() == [V4, V6]

    async def fails(*args: object, **kwargs: object) -> list[Any]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(loop, "getaddrinfo", fails)
    assert await system_localhost() == [V4, V6]  # RFC 6761's answer when the system has none


@pytest.mark.parametrize("host", ["2130706433", "0x7f.1", "0177.0.0.1", "127.1"])
async def test_non_canonical_literals(dns: DNSServer, make_resolver: MakeResolver, host: str) -> None:
    resolver = make_resolver(dns, ["127.0.0.0/8"])
    with pytest.raises(InvalidTarget):
        await resolver.vet(host)
    # Through aiohttp's resolver interface it must be an OSError, or aiohttp would not wrap it.
    with pytest.raises(BlockedTarget, match="non-canonical"):
        await resolver.resolve(host, 80)
    assert dns.protocol.queries == []


async def test_resolve_returns_vetted_results(dns: DNSServer, make_resolver: MakeResolver) -> None:
    dns.protocol.zone["dual.test"] = [("A", "127.0.0.2"), ("AAAA", "::1")]
    resolver = make_resolver(dns, ["127.0.0.2/32", "::1/128"])
    results = await resolver.resolve("dual.test", 8080, family=socket.AF_UNSPEC)
    assert [(r["host"], r["port"], r["family"], r["hostname"]) for r in results] == [
        ("127.0.0.2", 8080, socket.AF_INET, "dual.test"),
        ("::1", 8080, socket.AF_INET6, "dual.test"),
    ]
    only_v4 = await resolver.resolve("dual.test", 80, family=socket.AF_INET)
    assert [r["host"] for r in only_v4] == ["127.0.0.2"]


async def test_resolve_raises_oserror_for_blocked(dns: DNSServer, make_resolver: MakeResolver) -> None:
    dns.protocol.zone["evil.test"] = [("A", "127.0.0.1")]
    with pytest.raises(OSError, match=r"resolves to 127\.0\.0\.1"):
        await make_resolver(dns, LOOP_ALLOW).resolve("evil.test", 80, family=socket.AF_UNSPEC)


async def test_unicode_name_is_idna_encoded(dns: DNSServer, make_resolver: MakeResolver) -> None:
    dns.protocol.zone["xn--bcher-kva.test"] = [("A", "127.0.0.2")]
    assert await make_resolver(dns, LOOP_ALLOW).vet("Bücher.test.") == [IPv4Address("127.0.0.2")]


async def test_close_is_idempotent(dns: DNSServer) -> None:
    resolver = VettedResolver(AddressPolicy(), [dns.nameserver])
    await resolver.close()  # never used: nothing to close
    dns.protocol.zone["x.test"] = [("A", "127.0.0.1")]
    with pytest.raises(BlockedTarget):
        await resolver.vet("x.test")
    await resolver.close()
    await resolver.close()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("127.0.0.1:5353", "127.0.0.1:5353"),
        (" 127.0.0.1:53 ", "127.0.0.1:53"),
        ("::1", "::1"),
        ("[::1]", "::1"),
        ("[::1]:5353", "[::1]:5353"),
        ("2001:DB8::1", "2001:db8::1"),
    ],
)
def test_parse_nameserver(text: str, expected: str) -> None:
    assert parse_nameserver(text) == expected


@pytest.mark.parametrize(
    "text", ["dns.example", "dns.example:53", "127.0.0.1:0", "127.0.0.1:x", "[::1", "[::1]x"]
)
def test_parse_nameserver_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="nameserver"):
        parse_nameserver(text)
