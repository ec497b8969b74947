"""The dns check run against a fake DNS server on 127.0.0.1: every record type, every error
answer, the ``unchanged`` baseline, the SSRF guard on named servers, and the shared channels.

The check's context is built as the scheduler builds it: a ``VettedResolver`` whose servers
(``MONITOR_DNS_SERVERS``) are the fake one, so a monitor without ``nameservers`` asks it as
"the system resolver". Every socket in these tests is on loopback.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
from support.dns import DNSServer, Zone, dns_fixture, start_dns  # noqa: F401  (the dns fixture)

from monitor.checks.base import CheckContext
from monitor.checks.dns import Channels, DnsCheck, DnsSettings
from monitor.models import CheckResult, MonitorSpec
from monitor.net.client import HttpSession, make_session
from monitor.net.policy import AddressPolicy
from monitor.net.resolver import VettedResolver

DKIM = "v=DKIM1; k=rsa; p=" + "A" * 400
ZONE: Zone = {
    "example.test": [
        ("A", "192.0.2.20"),
        ("A", "192.0.2.10"),
        ("AAAA", "2001:db8::10"),
        ("MX", "20 Backup.example.test."),
        ("MX", "10 mail.example.test"),
        ("TXT", "v=spf1 -all"),
        ("TXT", "google-site-verification=abc"),
        ("NS", "ns1.example.test"),
        ("NS", "ns2.example.test"),
        ("SOA", "ns1.example.test hostmaster.example.test 2024010101 7200 3600 1209600 300"),
        ("CAA", "0 issue letsencrypt.org"),
        ("CAA", "0 iodef mailto:sec@example.test"),
    ],
    "long.example.test": [("TXT", DKIM)],  # 418 bytes: two strings on the wire
    "www.example.test": [("CNAME", "example.test")],
    "dangling.example.test": [("CNAME", "gone.example.test")],
    "gone.example.test": [("AAAA", "2001:db8::99")],
    "_sip._tcp.example.test": [("SRV", "10 5 5060 sip.example.test"), ("SRV", "20 0 5060 sip2.example.test")],
    "internal.example.test": [("A", "10.0.0.5"), ("AAAA", "fd00::5")],
    "bare.example.test": [],
}


class Runner:
    """``await run_dns(settings, allow=[...], timeout=2.0, options=None)``: one check of a dns
    monitor with these settings, in the scheduler's context (its resolvers: the fake server).
    ``options`` (from ``run_dns.check.options``) carries a baseline from check to check."""

    def __init__(self, dns: DNSServer) -> None:
        self.dns = dns
        self.check = DnsCheck()
        self._resolvers: list[VettedResolver] = []
        self._sessions: list[HttpSession] = []

    async def __call__(
        self,
        settings: dict[str, Any],
        allow: list[str] | None = None,
        timeout: float = 2.0,  # noqa: ASYNC109 - the monitor's timeout_seconds
        options: Any = None,
    ) -> CheckResult:
        policy = AddressPolicy(allow or [])
        resolver = VettedResolver(policy, [self.dns.nameserver])
        session = make_session(resolver)
        self._resolvers.append(resolver)
        self._sessions.append(session)
        if options is None:
            options = self.check.options(settings, None)
        target = self.check.target(DnsSettings.model_validate(settings))
        spec = MonitorSpec(1, "dns", "dns", target, 60, timeout, 1, False, options=options)
        return await self.check.run(spec, CheckContext(session=session, policy=policy), datetime.now(UTC))

    async def close(self) -> None:
        await self.check.channels.close()
        for session in self._sessions:
            await session.close()
        for resolver in self._resolvers:
            await resolver.close()


@pytest.fixture
async def run_dns(dns: DNSServer) -> AsyncIterator[Runner]:
    dns.zone.update(ZONE)
    runner = Runner(dns)
    try:
        yield runner
    finally:
        await runner.close()


def answers_of(result: CheckResult) -> list[str]:
    assert result.details is not None
    return list(result.details["answers"])


@pytest.mark.parametrize(
    ("settings", "answers"),
    [
        ({"domain": "example.test"}, ["192.0.2.10", "192.0.2.20"]),
        ({"domain": "EXAMPLE.test.", "record_type": "aaaa"}, ["2001:db8::10"]),
        ({"domain": "example.test", "record_type": "MX"}, ["10 mail.example.test", "20 backup.example.test"]),
        ({"domain": "example.test", "record_type": "TXT"}, ["google-site-verification=abc", "v=spf1 -all"]),
        ({"domain": "long.example.test", "record_type": "TXT"}, [DKIM]),
        ({"domain": "example.test", "record_type": "NS"}, ["ns1.example.test", "ns2.example.test"]),
        (
            {"domain": "example.test", "record_type": "SOA"},
            ["ns1.example.test hostmaster.example.test 2024010101 7200 3600 1209600 300"],
        ),
        (
            {"domain": "example.test", "record_type": "CAA"},
            ["0 iodef mailto:sec@example.test", "0 issue letsencrypt.org"],
        ),
        (
            {"domain": "_sip._tcp.example.test", "record_type": "SRV"},
            ["10 5 5060 sip.example.test", "20 0 5060 sip2.example.test"],
        ),
        ({"domain": "www.example.test", "record_type": "CNAME"}, ["example.test"]),
        # The alias is followed; only the records of the asked type are the answers.
        ({"domain": "www.example.test"}, ["192.0.2.10", "192.0.2.20"]),
        # Answers in private space are only read, never dialled: no refusal.
        ({"domain": "internal.example.test"}, ["10.0.0.5"]),
        ({"domain": "internal.example.test", "record_type": "AAAA"}, ["fd00::5"]),
    ],
)
async def test_answers_of_every_type(run_dns: Runner, settings: dict[str, Any], answers: list[str]) -> None:
    result = await run_dns(settings)
    assert (result.ok, result.error) == (True, None)
    assert result.details is not None
    # A result keeps 300 characters of an answer (all of it is judged).
    assert result.details["answers"] == [a[:297] + "..." if len(a) > 300 else a for a in answers]
    assert result.details["record_type"] == DnsSettings.model_validate(settings).record_type
    assert result.details["nameserver"] == "system"
    assert result.latency_ms is not None and result.latency_ms > 0
    assert result.timings == {"dns_ms": result.latency_ms}


@pytest.mark.parametrize(
    ("settings", "error"),
    [
        ({"domain": "nowhere.example.test"}, "NXDOMAIN: nowhere.example.test does not exist"),
        ({"domain": "bare.example.test"}, "no A records for bare.example.test"),
        ({"domain": "internal.example.test", "record_type": "MX"}, "no MX records for internal.example.test"),
        (
            {"domain": "dangling.example.test"},
            "no A records for dangling.example.test (an alias of gone.example.test)",
        ),
        (
            {"domain": "servfail.example.test"},
            "SERVFAIL: the system resolver could not answer for servfail.example.test A",
        ),
        (
            {"domain": "refused.example.test"},
            "REFUSED: the system resolver refused to answer for refused.example.test A",
        ),
        (
            {"domain": "example.test", "expect": "contains", "values": ["192.0.2.99"]},
            "expected 192.0.2.99 among the answers, got [192.0.2.10, 192.0.2.20]",
        ),
        (
            {
                "domain": "example.test",
                "record_type": "MX",
                "expect": "contains",
                "values": ["10 other.test."],
            },
            "expected 10 other.test among the answers, got [10 mail.example.test, 20 backup.example.test]",
        ),
        (
            {"domain": "example.test", "expect": "equals", "values": ["192.0.2.10"]},
            "answers differ from the expected ones: unexpected [192.0.2.20] (got [192.0.2.10, 192.0.2.20])",
        ),
    ],
)
async def test_failures(run_dns: Runner, dns: DNSServer, settings: dict[str, Any], error: str) -> None:
    dns.rcodes.update({"servfail.example.test": 2, "refused.example.test": 5})
    result = await run_dns(settings)
    assert (result.ok, result.error) == (False, error)
    assert result.details is not None and result.details["nameserver"] == "system"


@pytest.mark.parametrize(
    ("domain", "record_type", "expect", "value"),
    [
        ("example.test", "MX", "contains", "10 MAIL.example.test."),
        ("example.test", "TXT", "contains", '"v=spf1 " "-all"'),
        ("long.example.test", "TXT", "equals", DKIM),
        ("example.test", "CAA", "contains", '0 issue "LetsEncrypt.org"'),
        ("_sip._tcp.example.test", "SRV", "contains", "20 0 5060 SIP2.example.test."),
        ("example.test", "AAAA", "equals", "2001:0db8:0::10"),
        (
            "example.test",
            "SOA",
            "equals",
            "ns1.example.test. hostmaster.example.test. 2024010101 7200 3600 1209600 300",
        ),
    ],
)
async def test_expected_values_as_a_zone_file_writes_them(
    run_dns: Runner, domain: str, record_type: str, expect: str, value: str
) -> None:
    result = await run_dns(
        {"domain": domain, "record_type": record_type, "expect": expect, "values": [value]}
    )
    assert (result.ok, result.error) == (True, None)


async def test_unchanged_alerts_until_the_answers_return_or_the_monitor_is_saved(
    run_dns: Runner, dns: DNSServer
) -> None:
    settings = {"domain": "example.test", "expect": "unchanged"}
    options = run_dns.check.options(settings, None)
    first = await run_dns(settings, options=options)
    assert first.ok and answers_of(first) == ["192.0.2.10", "192.0.2.20"]
    assert options.baseline.answers == ("192.0.2.10", "192.0.2.20")

    dns.zone["example.test"] = [("A", "203.0.113.66")]  # hijacked
    for _ in range(3):  # down on every check while it differs, whatever confirm_after is
        changed = await run_dns(settings, options=options)
        assert changed.error == "answer changed: now [203.0.113.66], was [192.0.2.10, 192.0.2.20]"
        assert changed.details is not None and changed.details["baseline"] == ["192.0.2.10", "192.0.2.20"]
        assert answers_of(changed) == ["203.0.113.66"]

    dns.zone["example.test"] = ZONE["example.test"]  # restored
    back = await run_dns(settings, options=options)
    assert back.ok and "baseline" not in (back.details or {})

    dns.zone["example.test"] = [("A", "192.0.2.30")]  # moved on purpose
    assert not (await run_dns(settings, options=options)).ok
    # Saving the monitor loads it again: new options, the new answers are the baseline.
    accepted = run_dns.check.options(settings, None)
    assert (await run_dns(settings, options=accepted)).ok
    assert accepted.baseline.answers == ("192.0.2.30",)


async def test_unchanged_keeps_its_baseline_across_failed_checks(run_dns: Runner, dns: DNSServer) -> None:
    settings = {"domain": "example.test", "expect": "unchanged"}
    options = run_dns.check.options(settings, None)
    assert (await run_dns(settings, options=options)).ok
    del dns.zone["example.test"]  # an expired domain: NXDOMAIN is down, the baseline stays
    gone = await run_dns(settings, options=options)
    assert gone.error == "NXDOMAIN: example.test does not exist"
    dns.zone["example.test"] = [("A", "198.51.100.7")]  # the registrar's parking page
    parked = await run_dns(settings, options=options)
    assert parked.error == "answer changed: now [198.51.100.7], was [192.0.2.10, 192.0.2.20]"


async def test_timeout_names_what_did_not_answer(run_dns: Runner, dns: DNSServer) -> None:
    dns.protocol.silent = True
    result = await run_dns({"domain": "example.test"}, timeout=0.5)
    assert (result.ok, result.error) == (
        False,
        "timed out after 0.5s waiting for the system resolver to answer",
    )
    assert result.latency_ms is not None and 450 < result.latency_ms < 3000


async def test_named_nameserver_is_asked_when_the_guard_allows_it(run_dns: Runner, dns: DNSServer) -> None:
    other = await start_dns({"example.test": [("A", "192.0.2.77")]})
    try:
        settings = {"domain": "example.test", "nameservers": [other.nameserver]}
        result = await run_dns(settings, allow=["127.0.0.1/32"])
        assert (result.ok, answers_of(result)) == (True, ["192.0.2.77"])
        assert result.details is not None and result.details["nameserver"] == other.nameserver
        assert other.queries == [("example.test", "A")]
        assert ("example.test", "A") not in dns.queries  # the operator's resolver was not asked
    finally:
        other.close()


@pytest.mark.parametrize(
    ("server", "error"),
    [
        ("10.0.0.53", "blocked: 10.0.0.53 (private-use 10.0.0.0/8)"),
        ("169.254.169.254", "blocked: 169.254.169.254 (link-local 169.254.0.0/16)"),
        ("[fd00::53]:53", "blocked: fd00::53 (unique-local (ULA) fc00::/7)"),
        ("::ffff:10.0.0.53", "blocked: ::ffff:10.0.0.53 (IPv4-mapped 10.0.0.53, private-use 10.0.0.0/8)"),
        ("0.0.0.0", "blocked: 0.0.0.0 (this-network 0.0.0.0/8)"),
        ("{loopback}", "blocked: 127.0.0.1 (loopback 127.0.0.0/8)"),
    ],
)
async def test_denied_nameserver_is_refused_before_asking(
    run_dns: Runner, dns: DNSServer, server: str, error: str
) -> None:
    other = await start_dns({"example.test": [("A", "192.0.2.77")]})
    try:
        settings = {"domain": "example.test", "nameservers": [server.format(loopback=other.nameserver)]}
        result = await run_dns(settings, allow=["127.0.0.2/32"])
        assert (result.ok, result.error, result.details) == (False, error, None)
        assert other.queries == [] and dns.queries == []
        # Denied after an allowed one: the whole monitor is refused, nothing is asked.
        settings["nameservers"] = ["9.9.9.9", *settings["nameservers"]]
        assert (await run_dns(settings, allow=["127.0.0.2/32"])).error == error
        assert len(run_dns.check.channels) == 0
    finally:
        other.close()


async def test_channels_are_shared_per_server_set_and_bounded() -> None:
    servers = [await start_dns({"example.test": [("A", f"192.0.2.{n}")]}) for n in range(1, 5)]
    channels = Channels(limit=2)
    try:
        for _ in range(2):
            for server in servers[:2]:
                result = await channels.query((server.nameserver,), "example.test", "A")
                assert [rr.data.addr for rr in result.answer] == [f"192.0.2.{servers.index(server) + 1}"]
        assert len(channels) == 2  # one per server set, reused
        first = channels._channels[(servers[0].nameserver,)].resolver
        await channels.query((servers[0].nameserver,), "example.test", "A")
        assert channels._channels[(servers[0].nameserver,)].resolver is first
        for server in servers[2:]:
            await channels.query((server.nameserver,), "example.test", "A")
        # Past the limit the least recently used idle channels were closed: the last two stay.
        assert list(channels._channels) == [(s.nameserver,) for s in servers[2:]]
    finally:
        await channels.close()
        for server in servers:
            server.close()
