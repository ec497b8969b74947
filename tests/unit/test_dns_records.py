"""The dns check's pure half: names, values and answers as comparable text, the verdict, the
settings (what a 422 says) and the cause of each error answer. No network."""

from __future__ import annotations

from typing import Any

import aiodns
import pycares
import pytest
from pydantic import ValidationError

from monitor.checks.dns import DnsCheck, DnsOptions, DnsSettings, failure, nameserver
from monitor.checks.dns_records import answer_text, domain_name, expected_value, judge, listing


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("example.com", "example.com"),
        ("Example.COM.", "example.com"),
        ("  www.example.com  ", "www.example.com"),
        ("_sip._tcp.example.com", "_sip._tcp.example.com"),
        ("selector1._domainkey.example.com", "selector1._domainkey.example.com"),
        ("*.example.com", "*.example.com"),
        ("bücher.example", "xn--bcher-kva.example"),
        ("xn--bcher-kva.example", "xn--bcher-kva.example"),
        ("localhost", "localhost"),
        ("a" * 63 + ".com", "a" * 63 + ".com"),
    ],
)
def test_domain_name(text: str, name: str) -> None:
    assert domain_name(text) == name


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "a name is required"),
        (".", "a name is required"),
        ("example..com", "empty label"),
        ("-bad.example.com", "invalid label '-bad'"),
        ("bad-.example.com", "invalid label 'bad-'"),
        ("a b.example.com", "invalid label 'a b'"),
        ("a\x00b.example.com", "invalid label"),
        ("www.*.example.com", "invalid label '*'"),
        ("a" * 64 + ".com", "invalid label"),
        (".".join(["abcdefgh"] * 29), "longer than 253"),
        ("ü ü.example", "invalid international label"),
    ],
)
def test_domain_name_refused(text: str, reason: str) -> None:
    with pytest.raises(ValueError) as caught:
        domain_name(text)
    assert reason in str(caught.value)


@pytest.mark.parametrize(
    ("record_type", "text", "value"),
    [
        ("A", " 93.184.215.14 ", "93.184.215.14"),
        ("AAAA", "2001:DB8:0:0::1", "2001:db8::1"),
        ("AAAA", "::ffff:10.0.0.1", "::ffff:a00:1"),
        ("CNAME", "Alias.Example.NET.", "alias.example.net"),
        ("NS", "NS1.example.com.", "ns1.example.com"),
        ("MX", "10 Mail.Example.com.", "10 mail.example.com"),
        ("MX", "0 .", "0 ."),
        ("MX", "010   mx.example.com", "10 mx.example.com"),
        ("TXT", "v=spf1 include:_spf.example.com ~all", "v=spf1 include:_spf.example.com ~all"),
        ("TXT", '"v=spf1 -all"', "v=spf1 -all"),
        ("TXT", '"v=DKIM1; k=rsa; " "p=MIIB"', "v=DKIM1; k=rsa; p=MIIB"),
        ("TXT", r'"say \"hi\""', 'say "hi"'),
        ("TXT", 'half "quoted', 'half "quoted'),
        ("TXT", "Case Matters", "Case Matters"),
        (
            "SOA",
            "NS1.example.com. Hostmaster.example.com. 2024010101 7200 3600 1209600 300",
            "ns1.example.com hostmaster.example.com 2024010101 7200 3600 1209600 300",
        ),
        ("CAA", '0 issue "letsencrypt.org"', "0 issue letsencrypt.org"),
        ("CAA", "0 ISSUE LetsEncrypt.org", "0 issue letsencrypt.org"),
        (
            "CAA",
            "0 issue letsencrypt.org; accounturi=https://x/Acc",
            "0 issue letsencrypt.org; accounturi=https://x/Acc",
        ),
        ("CAA", "128 iodef mailto:Security@example.com", "128 iodef mailto:Security@example.com"),
        ("CAA", '0 issue ";"', "0 issue ;"),  # RFC 8659: no CA may issue
        ("SRV", "10 5 5060 SIP.example.com.", "10 5 5060 sip.example.com"),
        ("SRV", "0 0 0 .", "0 0 0 ."),
    ],
)
def test_expected_value(record_type: str, text: str, value: str) -> None:
    assert expected_value(record_type, text) == value


@pytest.mark.parametrize(
    ("record_type", "text", "reason"),
    [
        ("A", "2001:db8::1", "'2001:db8::1' is not an IPv4 address"),
        ("A", "1.2.3", "is not an IPv4 address"),
        ("A", "", "empty value"),
        ("AAAA", "1.2.3.4", "'1.2.3.4' is not an IPv6 address"),
        ("CNAME", "bad..name", "empty label"),
        ("MX", "mail.example.com", 'expected "preference exchange", like "10 mail.example.com"'),
        ("MX", "70000 mail.example.com", "preference must be a whole number from 0 to 65535"),
        ("MX", "-1 mail.example.com", "preference must be a whole number"),
        ("SRV", "10 5 sip.example.com", 'expected "priority weight port target"'),
        ("SRV", "10 5 99999 sip.example.com", "port must be a whole number from 0 to 65535"),
        ("SOA", "ns1 admin 1 2 3 4", 'expected "mname rname serial refresh retry expire minimum"'),
        ("SOA", "ns1 admin 1 2 3 4 5000000000", "SOA number must be a whole number from 0 to 4294967295"),
        ("CAA", "issue", 'a CAA value reads "flags tag value"'),
        ("CAA", "256 issue x", "CAA flags must be a whole number from 0 to 255"),
        ("CAA", "0 is-sue x", "invalid CAA tag 'is-sue'"),
        ("TXT", "bell\x07", "control characters are not allowed"),
        ("PTR", "x", "unsupported record type 'PTR'"),
    ],
)
def test_expected_value_refused(record_type: str, text: str, reason: str) -> None:
    with pytest.raises(ValueError) as caught:
        expected_value(record_type, text)
    assert reason in str(caught.value)


@pytest.mark.parametrize(
    ("record_type", "data", "text"),
    [
        ("A", pycares.ARecordData(addr="93.184.215.14"), "93.184.215.14"),
        ("AAAA", pycares.AAAARecordData(addr="2001:DB8::0:1"), "2001:db8::1"),
        ("CNAME", pycares.CNAMERecordData(cname="Alias.Example.NET."), "alias.example.net"),
        ("NS", pycares.NSRecordData(nsdname="NS1.example.com"), "ns1.example.com"),
        ("MX", pycares.MXRecordData(priority=10, exchange="Mail.example.com"), "10 mail.example.com"),
        ("MX", pycares.MXRecordData(priority=0, exchange=""), "0 ."),  # RFC 7505's null MX
        ("TXT", pycares.TXTRecordData(data=b"v=spf1 -all"), "v=spf1 -all"),
        ("TXT", pycares.TXTRecordData(data="caf\u00e9".encode()), "caf\u00e9"),
        ("TXT", pycares.TXTRecordData(data=b"nul\x00 and bell\x07"), "nul\\x00 and bell\\x07"),
        ("TXT", pycares.TXTRecordData(data=b"bad \xff utf-8"), "bad \\xff utf-8"),
        ("TXT", pycares.TXTRecordData(data=b"zero\xe2\x80\x8bwidth"), "zero\\u200bwidth"),
        (
            "SOA",
            pycares.SOARecordData(
                mname="NS1.example.com",
                rname="hostmaster.example.com",
                serial=2024010101,
                refresh=7200,
                retry=3600,
                expire=1209600,
                minimum=300,
            ),
            "ns1.example.com hostmaster.example.com 2024010101 7200 3600 1209600 300",
        ),
        (
            "CAA",
            pycares.CAARecordData(critical=0, tag="ISSUE", value="LetsEncrypt.org"),
            "0 issue letsencrypt.org",
        ),
        (
            "CAA",
            pycares.CAARecordData(critical=128, tag="iodef", value="mailto:A@b.c"),
            "128 iodef mailto:A@b.c",
        ),
        (
            "SRV",
            pycares.SRVRecordData(priority=10, weight=5, port=5060, target="SIP.example.com"),
            "10 5 5060 sip.example.com",
        ),
    ],
)
def test_answer_text(record_type: str, data: Any, text: str) -> None:
    assert answer_text(record_type, data) == text


@pytest.mark.parametrize(
    ("record_type", "written", "answered"),
    [
        ("MX", "10 MAIL.example.com.", pycares.MXRecordData(priority=10, exchange="mail.EXAMPLE.com")),
        (
            "CAA",
            '0 issue "LetsEncrypt.org"',
            pycares.CAARecordData(critical=0, tag="issue", value="letsencrypt.org"),
        ),
        ("AAAA", "2001:0db8::0001", pycares.AAAARecordData(addr="2001:db8::1")),
        ("TXT", '"v=spf1 " "-all"', pycares.TXTRecordData(data=b"v=spf1 -all")),
    ],
)
def test_what_a_user_writes_meets_what_a_server_answers(
    record_type: str, written: str, answered: Any
) -> None:
    assert expected_value(record_type, written) == answer_text(record_type, answered)


A = ("93.184.215.14",)
AB = ("1.2.3.4", "93.184.215.14")


@pytest.mark.parametrize(
    ("expect", "answers", "values", "baseline", "cause"),
    [
        ("answer", A, (), None, None),
        ("contains", AB, ("1.2.3.4",), None, None),
        ("contains", AB, AB, None, None),
        ("contains", A, ("1.2.3.4",), None, "expected 1.2.3.4 among the answers, got [93.184.215.14]"),
        (
            "contains",
            ("9.9.9.9",),
            AB,
            None,
            "expected 1.2.3.4, 93.184.215.14 all among the answers, got [9.9.9.9]",
        ),
        ("equals", AB, AB, None, None),
        (
            "equals",
            A,
            AB,
            None,
            "answers differ from the expected ones: missing [1.2.3.4] (got [93.184.215.14])",
        ),
        (
            "equals",
            ("1.2.3.4", "6.6.6.6"),
            AB,
            None,
            "answers differ from the expected ones: missing [93.184.215.14]; unexpected [6.6.6.6] "
            "(got [1.2.3.4, 6.6.6.6])",
        ),
        ("unchanged", A, (), None, None),  # the first answer becomes the baseline
        ("unchanged", A, (), A, None),
        ("unchanged", ("6.6.6.6",), (), A, "answer changed: now [6.6.6.6], was [93.184.215.14]"),
        ("unchanged", AB, (), A, "answer changed: now [1.2.3.4, 93.184.215.14], was [93.184.215.14]"),
        # ``unchanged`` ignores values, ``answer`` ignores the baseline.
        ("answer", ("6.6.6.6",), (), A, None),
    ],
)
def test_judge(
    expect: str,
    answers: tuple[str, ...],
    values: tuple[str, ...],
    baseline: tuple[str, ...] | None,
    cause: str | None,
) -> None:
    assert judge(expect, answers, values, baseline) == cause


@pytest.mark.parametrize(
    ("values", "limit", "text"),
    [
        ([], 120, "[]"),
        (["a", "b"], 120, "[a, b]"),
        (["aaaa", "bbbb", "cccc"], 12, "[aaaa, bbbb, ... 1 more]"),
        (["aaaa", "bbbb", "cccc"], 8, "[aaaa, ... 2 more]"),
        (["x" * 30], 10, "[xxxxxxx...]"),
    ],
)
def test_listing(values: list[str], limit: int, text: str) -> None:
    assert listing(values, limit) == text


# -- settings --------------------------------------------------------------------------------


def settings(**fields: Any) -> DnsSettings:
    return DnsSettings.model_validate({"domain": "example.com", **fields})


def test_settings_defaults_and_normal_forms() -> None:
    got = settings()
    assert (got.domain, got.record_type, got.nameservers, got.expect, got.values) == (
        "example.com",
        "A",
        [],
        "answer",
        [],
    )
    got = settings(
        domain="Example.COM.",
        record_type="mx",
        nameservers=["192.0.2.53", "192.0.2.53:53", "[2001:db8::53]:5353"],
        expect="contains",
        values=["10 Mail.example.com.", "10 mail.example.com"],
    )
    assert got.domain == "example.com" and got.record_type == "MX"
    assert got.nameservers == ["192.0.2.53", "[2001:db8::53]:5353"]
    assert got.values == ["10 mail.example.com"]  # normalised, then deduplicated
    check = DnsCheck()
    assert check.target(got) == "dns://192.0.2.53,[2001:db8::53]:5353/example.com?type=MX"
    assert check.hosts(got) == ("192.0.2.53", "2001:db8::53")
    assert check.target(settings(record_type="TXT")) == "dns:example.com?type=TXT"
    options = check.options(got.model_dump(mode="json"), None)
    servers = ("192.0.2.53", "[2001:db8::53]:5353")
    assert options == DnsOptions("example.com", "MX", servers, "contains", ("10 mail.example.com",))
    assert options.hosts == check.hosts(got)


@pytest.mark.parametrize(
    ("fields", "field", "reason"),
    [
        ({"domain": "bad..name"}, "domain", "empty label"),
        ({"record_type": "PTR"}, "record_type", "Input should be 'A', 'AAAA'"),
        ({"nameservers": ["dns.google"]}, "nameservers", "is not an IP address"),
        ({"nameservers": ["192.0.2.53:0"]}, "nameservers", "invalid nameserver port"),
        ({"nameservers": ["192.0.2.53:99999"]}, "nameservers", "invalid nameserver port"),
        ({"nameservers": ["192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4"]}, "nameservers", "at most 3"),
        ({"expect": "contains"}, "values", "expect contains needs at least one value"),
        ({"expect": "equals", "values": []}, "values", "expect equals needs at least one value"),
        (
            {"expect": "unchanged", "values": ["1.2.3.4"]},
            "values",
            "values apply to expect contains or equals",
        ),
        ({"values": ["1.2.3.4"]}, "values", "not answer"),
        (
            {"expect": "contains", "values": ["2001:db8::1"]},
            "values",
            "A value '2001:db8::1': '2001:db8::1' is not",
        ),
        ({"expect": "sometimes"}, "expect", "Input should be 'answer'"),
        ({"expect": "contains", "values": ["1.2.3.4"] * 21}, "values", "at most 20"),
        ({"colour": "red"}, "colour", "Extra inputs are not permitted"),
    ],
)
def test_settings_refused(fields: dict[str, Any], field: str, reason: str) -> None:
    with pytest.raises(ValidationError) as caught:
        settings(**fields)
    [error] = caught.value.errors()
    assert error["loc"][0] == field, error
    assert reason in error["msg"], error


@pytest.mark.parametrize(
    ("text", "server"),
    [
        ("192.0.2.53", "192.0.2.53"),
        ("192.0.2.53:53", "192.0.2.53"),
        ("192.0.2.53:5353", "192.0.2.53:5353"),
        ("2001:DB8::53", "2001:db8::53"),
        ("[2001:db8::53]:53", "2001:db8::53"),
        ("[2001:db8::53]:5353", "[2001:db8::53]:5353"),
    ],
)
def test_nameserver(text: str, server: str) -> None:
    assert nameserver(text) == server


E = aiodns.error


@pytest.mark.parametrize(
    ("code", "cause"),
    [
        (E.ARES_ENOTFOUND, "NXDOMAIN: example.com does not exist"),
        (E.ARES_ENODATA, "no AAAA records for example.com"),
        (E.ARES_ESERVFAIL, "SERVFAIL: 192.0.2.53 could not answer for example.com AAAA"),
        (E.ARES_EREFUSED, "REFUSED: 192.0.2.53 refused to answer for example.com AAAA"),
        (E.ARES_ETIMEOUT, "no answer from 192.0.2.53 for example.com AAAA (timed out)"),
        (E.ARES_ECONNREFUSED, "192.0.2.53 refused the connection (nothing listens there?)"),
        (E.ARES_EBADRESP, "malformed answer from 192.0.2.53 for example.com AAAA"),
        (
            E.ARES_ENOMEM,
            f"DNS query for example.com AAAA to 192.0.2.53 failed (c-ares error {E.ARES_ENOMEM})",
        ),
    ],
)
def test_failure(code: int, cause: str) -> None:
    assert failure(code, "example.com", "AAAA", "192.0.2.53") == cause
