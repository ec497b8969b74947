"""The SSRF policy, line by line: every deny network, every embedded-IPv4 form, URL form rules.

Public addresses appear here only as data to judge; nothing in this file opens a socket.
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address, ip_network

import pytest

from monitor.net.policy import (
    AddressPolicy,
    BlockedTarget,
    InvalidTarget,
    literal_address,
    parse_target_url,
)

# The deny list, written out again here (not imported) so the test checks the code.
DENY_V4 = [
    ("0.0.0.0/8", "this-network"),
    ("10.0.0.0/8", "private-use"),
    ("100.64.0.0/10", "shared address space (CGNAT)"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local"),
    ("172.16.0.0/12", "private-use"),
    ("192.0.0.0/24", "IETF protocol assignments"),
    ("192.0.2.0/24", "documentation"),
    ("192.88.99.0/24", "6to4 relay anycast"),
    ("192.168.0.0/16", "private-use"),
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),
]

# Carve-outs inside 2000::/3, and named classes outside it. Teredo (2001::/32) lies inside
# 2001::/23 and is named on its own; its first/last/inner rows below use the more specific name.
DENY_V6 = [
    ("2001::/32", "Teredo"),
    ("2001:db8::/32", "documentation"),
    ("2002::/16", "6to4"),
    ("3fff::/20", "documentation"),
    ("64:ff9b::/96", "NAT64"),
    ("64:ff9b:1::/48", "NAT64 local-use"),
    ("100::/64", "discard-only"),
    ("5f00::/16", "SRv6 SIDs"),
    ("fc00::/7", "unique-local (ULA)"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local"),
    ("ff00::/8", "multicast"),
]


def _first_last_inner(net: str) -> list[str]:
    network = ip_network(net)
    inner = network.network_address + network.num_addresses // 2 + 1
    return [str(network.network_address), str(network.broadcast_address), str(inner)]


DENY_ROWS = [
    pytest.param(addr, f"{label} {net}", id=f"{net}-{which}")
    for net, label in DENY_V4 + DENY_V6
    for which, addr in zip(("first", "last", "inner"), _first_last_inner(net), strict=True)
]


@pytest.mark.parametrize(("addr", "reason"), DENY_ROWS)
def test_deny_networks(addr: str, reason: str) -> None:
    verdict = AddressPolicy().judge(addr)
    assert not verdict.allowed
    assert verdict.reason == reason


@pytest.mark.parametrize(
    ("addr", "reason"),
    [
        # 2001::/23 outside Teredo: first after Teredo, last of the /23, an inner one.
        ("2001:1::1", "IETF protocol assignments 2001::/23"),
        ("2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", "IETF protocol assignments 2001::/23"),
        ("2001:20::1", "IETF protocol assignments 2001::/23"),
        ("255.255.255.255", "reserved 240.0.0.0/4"),
        # Named classes outside 2000::/3.
        ("::", "unspecified ::/128"),
        ("::1", "loopback ::1/128"),
        # Unallocated space outside 2000::/3: first/last of the big holes around it.
        ("::2:0:0:1", "outside global unicast 2000::/3"),
        ("1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "outside global unicast 2000::/3"),
        ("4000::", "outside global unicast 2000::/3"),
        ("8000::1", "outside global unicast 2000::/3"),
        ("e000::1", "outside global unicast 2000::/3"),
        ("fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "outside global unicast 2000::/3"),
        ("100:0:0:1::", "outside global unicast 2000::/3"),  # just past discard-only 100::/64
    ],
)
def test_deny_single_addresses(addr: str, reason: str) -> None:
    verdict = AddressPolicy().judge(addr)
    assert (verdict.allowed, verdict.reason) == (False, reason)


# Every IPv6 form that carries an IPv4 address is denied whatever it carries, even a public one;
# only IPv4-mapped is unwrapped and judged as the IPv4 address.
@pytest.mark.parametrize(
    ("addr", "reason"),
    [
        ("::127.0.0.1", "IPv4-compatible ::/96"),
        ("::8.8.8.8", "IPv4-compatible ::/96"),
        ("::ffff:0:127.0.0.1", "IPv4-translated ::ffff:0:0:0/96"),
        ("::ffff:0:8.8.8.8", "IPv4-translated ::ffff:0:0:0/96"),
        ("64:ff9b::127.0.0.1", "NAT64 64:ff9b::/96"),
        ("64:ff9b::8.8.8.8", "NAT64 64:ff9b::/96"),
        ("64:ff9b:1::8.8.8.8", "NAT64 local-use 64:ff9b:1::/48"),
        ("2002:7f00:1::1", "6to4 2002::/16"),
        ("2002:808:808::1", "6to4 2002::/16"),
        # Teredo: server 65.54.227.120, client 192.0.2.45 obfuscated (RFC 4380 example).
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo 2001::/32"),
    ],
)
def test_embedded_ipv4_forms_denied(addr: str, reason: str) -> None:
    verdict = AddressPolicy().judge(addr)
    assert (verdict.allowed, verdict.reason) == (False, reason)


@pytest.mark.parametrize(
    ("mapped", "unwrapped", "reason"),
    [
        ("::ffff:127.0.0.1", "127.0.0.1", "loopback 127.0.0.0/8"),
        ("::ffff:10.0.0.5", "10.0.0.5", "private-use 10.0.0.0/8"),
        ("::ffff:169.254.169.254", "169.254.169.254", "link-local 169.254.0.0/16"),
        ("::ffff:0.0.0.0", "0.0.0.0", "this-network 0.0.0.0/8"),
        ("::ffff:8.8.8.8", "8.8.8.8", None),
    ],
)
def test_ipv4_mapped_is_unwrapped(mapped: str, unwrapped: str, reason: str | None) -> None:
    verdict = AddressPolicy().judge(mapped)
    assert verdict.address == IPv4Address(unwrapped)
    assert verdict.allowed is (reason is None)
    assert verdict.reason == reason


@pytest.mark.parametrize(
    "addr",
    [
        # IPv4 public controls, including the first address outside each deny network.
        "1.0.0.0",
        "8.8.8.8",
        "9.255.255.255",
        "11.0.0.0",
        "100.63.255.255",
        "100.128.0.0",
        "126.255.255.255",
        "128.0.0.0",
        "169.253.255.255",
        "169.255.0.0",
        "172.15.255.255",
        "172.32.0.0",
        "192.0.1.255",
        "192.0.3.0",
        "192.88.98.255",
        "192.88.100.0",
        "192.167.255.255",
        "192.169.0.0",
        "198.17.255.255",
        "198.20.0.0",
        "198.51.99.255",
        "198.51.101.0",
        "203.0.112.255",
        "203.0.114.0",
        "223.255.255.255",
        # IPv6 global unicast, and the first address past each carve-out.
        "2000::",
        "2001:200::",
        "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff",
        "2001:db9::",
        "2001:4860:4860::8888",
        "2003::",
        "2606:4700:4700::1111",
        "2a00:1450:4001::1",
        "3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
        "3fff:1000::",
        "3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
    ],
)
def test_public_controls_allowed(addr: str) -> None:
    verdict = AddressPolicy().judge(addr)
    assert verdict.allowed, verdict.reason
    assert verdict.reason is None
    assert verdict.address == ip_address(addr)


@pytest.mark.parametrize("addr", ["fe80::1%eth0", "fe80::1%1", "2606:4700:4700::1111%eth0", "ff02::1%lo"])
def test_zone_ids_denied(addr: str) -> None:
    verdict = AddressPolicy().judge(addr)
    assert not verdict.allowed
    assert verdict.reason is not None and verdict.reason.startswith("zone id %")


def test_zone_id_denied_even_when_allow_listed() -> None:
    assert not AddressPolicy(["fe80::/10"]).judge("fe80::1%eth0").allowed


@pytest.mark.parametrize(
    ("allow", "addr", "allowed"),
    [
        (["127.0.0.0/8"], "127.0.0.1", True),
        (["127.0.0.0/8"], "::ffff:127.0.0.1", True),  # unwrapped before the allow check
        (["127.0.0.0/8"], "10.0.0.1", False),
        (["127.0.0.0/8"], "::1", False),
        (["127.0.0.2/32"], "127.0.0.2", True),
        (["127.0.0.2/32"], "127.0.0.1", False),
        (["::1/128"], "::1", True),
        (["10.0.0.0/8", "192.168.1.0/24"], "192.168.1.7", True),
        (["10.0.0.0/8", "192.168.1.0/24"], "192.168.2.7", False),
        (["::ffff:10.1.0.0/112"], "10.1.2.3", True),  # a mapped network means the IPv4 one
        (["10.0.0.1/8"], "10.200.0.1", True),  # host bits masked, as the settings validator does
        ([IPv4Network("169.254.0.0/16")], "169.254.169.254", True),
        ([IPv6Network("fd00::/8")], "fd12::1", True),
    ],
)
def test_allow_list_exceptions(allow: list[str], addr: str, allowed: bool) -> None:
    verdict = AddressPolicy(allow).judge(addr)
    assert verdict.allowed is allowed
    assert (verdict.reason is None) is allowed


def test_allow_cidrs_property_and_csv() -> None:
    policy = AddressPolicy.from_csv(" 127.0.0.0/8, ::1/128 ,,")
    assert policy.allow_cidrs == (IPv4Network("127.0.0.0/8"), IPv6Network("::1/128"))
    assert AddressPolicy().allow_cidrs == ()


def test_allow_list_rejects_garbage() -> None:
    with pytest.raises(ValueError, match="invalid allow-list network 'nope'"):
        AddressPolicy(["nope"])


def test_judge_accepts_address_objects() -> None:
    assert AddressPolicy().judge(IPv6Address("::1")).reason == "loopback ::1/128"


@pytest.mark.parametrize(
    ("addr", "host", "reason"),
    [
        ("10.0.0.5", None, "10.0.0.5 (private-use 10.0.0.0/8)"),
        ("10.0.0.5", "db.test", "resolves to 10.0.0.5 (private-use 10.0.0.0/8)"),
        ("::ffff:127.0.0.1", None, "::ffff:127.0.0.1 (IPv4-mapped 127.0.0.1, loopback 127.0.0.0/8)"),
    ],
)
def test_check_raises_blocked_with_reason(addr: str, host: str | None, reason: str) -> None:
    with pytest.raises(BlockedTarget) as caught:
        AddressPolicy().check(addr, host=host)
    assert caught.value.reason == reason
    assert str(caught.value) == reason
    assert caught.value.host == host
    assert isinstance(caught.value, OSError)


def test_check_returns_unwrapped_address() -> None:
    assert AddressPolicy().check("::ffff:8.8.8.8") == IPv4Address("8.8.8.8")


@pytest.mark.parametrize(
    ("addr", "address"),
    [
        ("10.0.0.5", IPv4Address("10.0.0.5")),
        ("::ffff:127.0.0.1", IPv4Address("127.0.0.1")),  # what an allow entry must cover
        ("::1", IPv6Address("::1")),
        ("fe80::1%eth0", None),  # no allow entry admits a zone id
    ],
)
def test_blocked_names_the_address_an_allow_entry_would_admit(addr: str, address: object) -> None:
    with pytest.raises(BlockedTarget) as caught:
        AddressPolicy().check(addr)
    assert caught.value.address == address


PUBLIC = "93.184.215.14"
PUBLIC6 = "2606:2800:21f:cb07:6820:80da:af6b:8b2c"


@pytest.mark.parametrize(
    ("allow", "answers", "result"),
    [
        # Fail closed: any denied answer next to a public or private one refuses the name.
        ([], [PUBLIC, "10.0.0.5"], "resolves to 10.0.0.5 (private-use 10.0.0.0/8)"),
        ([], ["10.0.0.5", PUBLIC], "resolves to 10.0.0.5 (private-use 10.0.0.0/8)"),
        ([], [PUBLIC, "169.254.169.254"], "resolves to 169.254.169.254 (link-local 169.254.0.0/16)"),
        ([], ["127.0.0.1", PUBLIC6], "resolves to 127.0.0.1 (loopback 127.0.0.0/8)"),
        (["127.0.0.1/32"], ["127.0.0.1", "10.0.0.5"], "resolves to 10.0.0.5 (private-use 10.0.0.0/8)"),
        (["127.0.0.1/32"], ["127.0.0.1", "::1", PUBLIC], "resolves to ::1 (loopback ::1/128)"),
        (["10.0.0.0/8"], ["10.0.0.5", "127.0.0.1"], "resolves to 127.0.0.1 (loopback 127.0.0.0/8)"),
        # Every answer loopback: the allowed ones are dialled, the denied ones never.
        (["127.0.0.1/32"], ["127.0.0.1", "::1"], ["127.0.0.1"]),
        (["127.0.0.1/32"], ["::1", "127.0.0.1"], ["127.0.0.1"]),
        (["::1/128"], ["127.0.0.1", "::1"], ["::1"]),
        (["127.0.0.2/32"], ["127.0.0.1", "::ffff:127.0.0.2", "127.0.0.2"], ["127.0.0.2"]),
        ([], ["127.0.0.1", "::1"], "resolves to 127.0.0.1 (loopback 127.0.0.0/8)"),
        # Nothing denied: every answer, in order, without repeats (unchanged).
        ([], [PUBLIC, PUBLIC6, PUBLIC], [PUBLIC, PUBLIC6]),
        (["127.0.0.1/32"], ["127.0.0.1", PUBLIC], ["127.0.0.1", PUBLIC]),
    ],
)
def test_check_answers(allow: list[str], answers: list[str], result: str | list[str]) -> None:
    policy = AddressPolicy(allow)
    addresses = [ip_address(a) for a in answers]
    if isinstance(result, str):
        with pytest.raises(BlockedTarget) as caught:
            policy.check_answers("name.test", addresses)
        assert (caught.value.reason, caught.value.host) == (result, "name.test")
    else:
        assert policy.check_answers("name.test", addresses) == [ip_address(a) for a in result]


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("127.0.0.1", IPv4Address("127.0.0.1")),
        ("127.0.0.1.", IPv4Address("127.0.0.1")),
        ("0.0.0.0", IPv4Address("0.0.0.0")),
        ("255.255.255.255", IPv4Address("255.255.255.255")),
        ("::1", IPv6Address("::1")),
        ("[::1]", IPv6Address("::1")),
        ("::ffff:7f00:1", IPv6Address("::ffff:127.0.0.1")),  # returned as written, not unwrapped
        ("fe80::1%25eth0", IPv6Address("fe80::1%eth0")),
        ("example.com", None),
        ("1a.example", None),
        ("example.123a", None),
        ("localhost", None),
    ],
)
def test_literal_address(host: str, expected: IPv4Address | IPv6Address | None) -> None:
    assert literal_address(host) == expected


@pytest.mark.parametrize(
    "host",
    [
        "2130706433",  # decimal 127.0.0.1
        "017700000001",  # octal
        "0x7f000001",  # hex
        "0x7f.1",
        "0x7f.0.0.1",
        "0177.0.0.1",
        "127.1",
        "127.0.1",
        "127.0.0.01",
        "127.000.000.001",
        "08.0.0.1",
        "256.0.0.1",
        "1.2.3.4.5",
        "127.0.0.0x1",
        "0",
        "0x",
        "example.0x10",  # a name whose last label is a number is a number, as browsers read it
        "example.42",
    ],
)
def test_non_canonical_numeric_hosts_rejected(host: str) -> None:
    with pytest.raises(InvalidTarget, match="non-canonical numeric host"):
        literal_address(host)


@pytest.mark.parametrize("host", ["[::g]", "1::2::3", "[127.0.0.1]"])
def test_invalid_ipv6_literal(host: str) -> None:
    with pytest.raises(InvalidTarget, match="invalid IPv6 literal"):
        literal_address(host)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://example.com/", "http://example.com/"),
        ("HTTPS://Example.COM:8443/a?b=1", "https://example.com:8443/a?b=1"),
        ("http://example.com./x", "http://example.com/x"),  # trailing dot stripped
        ("http://example.com../x", "http://example.com/x"),
        ("http://example.com/x#frag", "http://example.com/x"),  # fragment never sent
        ("http://BÜCHER.example/", "http://xn--bcher-kva.example/"),  # IDNA, case-folded
        ("http://bücher.example./", "http://xn--bcher-kva.example/"),
        ("http://example.com\u3002/", "http://example.com/"),  # ideographic full stop
        ("http://\uff11\uff12\uff17.\uff10.\uff10.\uff11/", "http://127.0.0.1/"),  # full-width digits
        ("http://127.0.0.1./", "http://127.0.0.1/"),
        ("http://[::1]:8080/", "http://[::1]:8080/"),
        ("http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/"),
        ("http://[fe80::1%25eth0]/", "http://[fe80::1%25eth0]/"),  # form ok; the policy denies it
        ("http://exa_mple.com/", "http://exa_mple.com/"),
    ],
)
def test_parse_target_url_normalises(url: str, expected: str) -> None:
    assert str(parse_target_url(url)) == expected


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://example.com/", "scheme 'ftp' not allowed"),
        ("file:///etc/passwd", "scheme 'file' not allowed"),
        ("gopher://127.0.0.1:6379/_INFO", "scheme 'gopher' not allowed"),
        ("javascript:alert(1)", "scheme 'javascript' not allowed"),
        ("ws://example.com/", "scheme 'ws' not allowed"),
        ("example.com/path", "no scheme"),
        ("http://user@example.com/", "credentials in the URL"),
        ("http://user:pw@example.com/", "credentials in the URL"),
        ("http://:pw@example.com/", "credentials in the URL"),
        ("http://@example.com/", "credentials in the URL"),
        ("http://example.com@127.0.0.1/", "credentials in the URL"),
        ("http:///path", "no host"),
        ("http://./", "no host"),
        ("http://2130706433/", "non-canonical numeric host"),
        ("http://0x7f.1/", "non-canonical numeric host"),
        ("http://0177.0.0.1/", "non-canonical numeric host"),
        ("http://127.1/", "non-canonical numeric host"),
        ("http://[1.2.3.4]/", "malformed URL"),
        ("http://%31%32%37.0.0.1/", "non-canonical numeric host"),  # ends in a number
        ("http://%65xample.com/", "invalid host name"),
        ("http://a..b/", "invalid host name"),
        ("http://.example.com/", "invalid host name"),
        ("http://-bad.example/", "invalid host name"),
        ("http://ex%2eample.com/", "invalid host name"),
        ("http://" + "a" * 64 + ".example/", "invalid host name"),
        ("http://" + "a." * 127 + "example/", "longer than 253"),
        ("http://example.com:99999/", "malformed URL"),
        ("http://example.com:0/", "port 0"),
        ("http://exa mple.com/", "whitespace"),
        ("http://example.com/\r\nHost: x", "whitespace or control"),
    ],
)
def test_parse_target_url_rejects(url: str, message: str) -> None:
    with pytest.raises(InvalidTarget, match=message):
        parse_target_url(url)


def test_parse_target_url_custom_schemes() -> None:
    assert (
        str(parse_target_url("https://example.com/", schemes=frozenset({"https"}))) == "https://example.com/"
    )
    with pytest.raises(InvalidTarget, match="use https"):
        parse_target_url("http://example.com/", schemes=frozenset({"https"}))


def test_invalid_target_is_value_error() -> None:
    assert issubclass(InvalidTarget, ValueError)
