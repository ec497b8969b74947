"""The tcp and tls checks against real servers on loopback (``Check.run`` in-process).

A ``BannerServer`` (``support.banner``) plays SMTP (a ``220`` banner), SSH (its identification
string), Redis (``PING`` -> ``+PONG``), a refusing or hanging-up service and a silent one, in
plain TCP or TLS; TLS leaves come from a throwaway CA (``support.certs.LocalCA``) that the
check session trusts, as ``MONITOR_CA_FILE`` makes the scheduler do. The session may dial
127.0.0.0/8 only and resolves names through a fake DNS server. Every connection a check opened
is closed before the test's loop ends (``all_closed``).
"""

from __future__ import annotations

import datetime as dt
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any

import pytest
import trustme
from support.banner import BannerServer, BannerServerFactory, banner_server_fixture  # noqa: F401
from support.certs import LocalCA, local_ca_fixture  # noqa: F401  (the local_ca fixture)
from support.connections import all_closed
from support.dns import DNSServer, dns_fixture  # noqa: F401  (the dns fixture)
from support.procs import free_port
from support.waiting import wait_for

from monitor.checks.base import Check, CheckContext
from monitor.checks.tcp import TcpCheck
from monitor.checks.tls import TlsCheck
from monitor.models import CheckResult, MonitorSpec
from monitor.net.policy import AddressPolicy
from monitor.net.resolver import VettedResolver
from monitor.net.session import make_session

pytestmark = pytest.mark.timeout(60)

TIMEOUT = 1.0  # each check's; the silent cases wait this long
SMTP = b"220 mail.test ESMTP ready\r\n"
SSH = b"SSH-2.0-OpenSSH_9.6p1\r\n"
PONG = {b"PING": b"+PONG\r\n"}


@dataclass
class Checker:
    ctx: CheckContext

    async def run(self, check: Check, **settings: Any) -> CheckResult:
        spec = MonitorSpec(
            id=1,
            name=check.kind,
            type=check.kind,
            url="",
            interval_seconds=60,
            timeout_seconds=TIMEOUT,
            confirm_after=1,
            paused=False,
            options=check.options(settings, None),
        )
        return await check.run(spec, self.ctx, dt.datetime.now(dt.UTC))


@pytest.fixture
async def checker(
    local_ca: LocalCA, dns: DNSServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Checker]:
    """Checks that may dial 127.0.0.0/8, resolve through ``dns`` and trust ``local_ca``; the
    operator allows tls_verify false (``replace(ctx, allow_insecure_tls=False)`` to forbid)."""
    async with all_closed(monkeypatch):
        policy = AddressPolicy(["127.0.0.0/8"])
        resolver = VettedResolver(policy, [dns.nameserver])
        session = make_session(resolver, ssl_context=local_ca.client_context())
        try:
            yield Checker(CheckContext(session, policy, allow_insecure_tls=True))
        finally:
            await session.close()
            await resolver.close()


def tls_server(ca: LocalCA, *names: str, days: float = 90) -> ssl.SSLContext:
    leaf, _ = ca.issue(*names, days=days)
    return ca.server_context(leaf)


# -- tcp ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TcpCase:
    """A server (``BannerServer`` arguments; None: a port nothing listens on), the monitor's
    settings besides host and port, and what the check must say (``{port}``: the server's)."""

    id: str
    server: dict[str, Any] | None
    settings: dict[str, Any]
    error: str | None
    answer: str | None = None


TCP_CASES = [
    TcpCase("smtp-banner", {"banner": SMTP}, {"expect": "220"}, None, "220 mail.test ESMTP ready\\r\\n"),
    TcpCase("ssh-banner", {"banner": SSH}, {"expect": "SSH-2.0"}, None, "SSH-2.0-OpenSSH_9.6p1\\r\\n"),
    TcpCase("redis-ping", {"replies": PONG}, {"send": "PING\r\n", "expect": "PONG"}, None, "+PONG\\r\\n"),
    TcpCase("port-open", {}, {}, None),
    TcpCase("port-open-line-sent", {}, {"send": "QUIT\r\n"}, None),
    TcpCase(
        "smtp-refusing",
        {"banner": b"554 5.7.1 no thanks\r\n"},
        {"expect": "220"},
        'expected "220" not found in the answer ("554 5.7.1 no thanks\\r\\n") within 1s',
        "554 5.7.1 no thanks\\r\\n",
    ),
    TcpCase(
        "redis-noauth",
        {"replies": {b"PING": b"-NOAUTH Authentication required.\r\n"}},
        {"send": "PING\r\n", "expect": "PONG"},
        'expected "PONG" not found in the answer ("-NOAUTH Authentication required.\\r\\n") within 1s',
        "-NOAUTH Authentication required.\\r\\n",
    ),
    TcpCase(
        "banner-then-hang-up",
        {"banner": b"421 too busy\r\n", "hang_up": True},
        {"expect": "220"},
        'expected "220" not found in the answer ("421 too busy\\r\\n")',
        "421 too busy\\r\\n",
    ),
    TcpCase(
        "hang-up-silently",
        {"hang_up": True},
        {"expect": "220"},
        'expected "220" but the server closed the connection without answering',
    ),
    TcpCase("silent", {}, {"expect": "220"}, "timed out after 1s waiting for the answer (nothing received)"),
    TcpCase("refused", None, {"expect": "220"}, "connection failed: refused by 127.0.0.1 port {port}"),
    TcpCase(
        "flood",
        {"banner": b"x" * (100 * 1024)},
        {"expect": "220"},
        f'expected "220" not found in the first 64 KiB of the answer ("{"x" * 100}...")',
        "x" * 200 + "...",
    ),
]


@pytest.mark.parametrize("case", TCP_CASES, ids=lambda c: c.id)
async def test_tcp_check(checker: Checker, banner_server: BannerServerFactory, case: TcpCase) -> None:
    server = await banner_server(**case.server) if case.server is not None else None
    port = server.port if server is not None else free_port()
    result = await checker.run(TcpCheck(), host="127.0.0.1", port=port, **case.settings)
    error = case.error.format(port=port) if case.error else None
    assert (result.ok, result.error) == (error is None, error)
    assert (result.details or {}).get("answer") == case.answer
    timings = result.timings
    if server is not None:
        assert server.connections == 1
        assert timings["connect_ms"] is not None and result.latency_ms == pytest.approx(
            timings["connect_ms"], abs=0.001
        )
        assert (timings["ttfb_ms"] is not None) == (case.answer is not None)
    assert timings["dns_ms"] is None  # an IP literal is not resolved
    if "send" in case.settings and server is not None:
        sent = [case.settings["send"].encode()]
        await wait_for(lambda: server.lines == sent, timeout=5, message=lambda: f"{sent} read by the server")


async def test_tcp_dials_the_vetted_addresses_in_order(
    checker: Checker, banner_server: BannerServerFactory, dns: DNSServer
) -> None:
    server = await banner_server(banner=SMTP)
    # 127.0.0.3 refuses (nothing listens there); the second answer is the server.
    dns.zone["mail.test"] = [("A", "127.0.0.3"), ("A", "127.0.0.1")]
    result = await checker.run(TcpCheck(), host="mail.test", port=server.port, expect="220")
    assert (result.ok, result.error) == (True, None)
    assert result.timings["dns_ms"] is not None
    dns.zone["mail.test"] = [("A", "127.0.0.3")]
    result = await checker.run(TcpCheck(), host="mail.test", port=server.port, expect="220")
    assert result.error == f"connection failed: refused by 127.0.0.3 port {server.port}"
    dns.zone.pop("mail.test")
    result = await checker.run(TcpCheck(), host="mail.test", port=server.port)
    assert result.error == "cannot resolve mail.test: no such domain"


async def test_tcp_over_tls(checker: Checker, banner_server: BannerServerFactory, local_ca: LocalCA) -> None:
    server = await banner_server(banner=SMTP, ssl_context=tls_server(local_ca, "127.0.0.1", days=3))
    result = await checker.run(TcpCheck(), host="127.0.0.1", port=server.port, tls=True, expect="220")
    assert (result.ok, result.error) == (True, None), result
    details = result.details or {}
    assert details["answer"] == "220 mail.test ESMTP ready\\r\\n"
    assert details["tls"] == {"version": "TLSv1.3", "verified": True}
    # The leaf, as https records it: the scheduler's degraded rule reads it (cert_warn_days).
    assert details["certificate"]["days_left"] == pytest.approx(3.0, abs=0.01)
    assert details["certificate"]["subject"] == "127.0.0.1"
    timings = result.timings
    assert timings["tls_ms"] is not None and timings["connect_ms"] is not None
    assert result.latency_ms == pytest.approx(timings["connect_ms"] + timings["tls_ms"], abs=0.001)


async def test_tcp_tls_failures(
    checker: Checker, banner_server: BannerServerFactory, local_ca: LocalCA
) -> None:
    plain = await banner_server(banner=SMTP)
    result = await checker.run(TcpCheck(), host="127.0.0.1", port=plain.port, tls=True)
    assert result.error == "TLS error: the server did not answer in TLS (a plain-text service?)"

    stranger = trustme.CA()  # a CA the checker does not trust
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    stranger.issue_cert("127.0.0.1").configure_cert(context)
    untrusted = await banner_server(banner=SMTP, ssl_context=context)
    settings: dict[str, Any] = {"host": "127.0.0.1", "port": untrusted.port, "tls": True, "expect": "220"}
    result = await checker.run(TcpCheck(), **settings)
    assert result.error == "TLS certificate error: unable to get local issuer certificate"
    assert result.details is None
    # tls_verify false, where the operator allows it: encrypted, not checked, and said so.
    result = await checker.run(TcpCheck(), **settings, tls_verify=False)
    assert (result.ok, (result.details or {}).get("tls")) == (True, {"version": "TLSv1.3", "verified": False})
    # Where the operator does not (any more), the stored false is not honoured.
    strict = Checker(replace(checker.ctx, allow_insecure_tls=False))
    result = await strict.run(TcpCheck(), **settings, tls_verify=False)
    assert result.error == "TLS certificate error: unable to get local issuer certificate"


# -- tls ----------------------------------------------------------------------------------


def _day(when: str) -> dt.datetime:
    return dt.datetime.fromisoformat(when)


@pytest.mark.parametrize("days", [90, 3], ids=["90-days", "3-days"])
async def test_tls_check_reports_the_chain(
    checker: Checker, banner_server: BannerServerFactory, local_ca: LocalCA, days: int
) -> None:
    server = await banner_server(ssl_context=tls_server(local_ca, "127.0.0.1", "svc.test", days=days))
    result = await checker.run(TlsCheck(), host="127.0.0.1", port=server.port)
    assert (result.ok, result.error) == (True, None)
    details = result.details or {}
    cert = details["certificate"]
    assert cert["days_left"] == pytest.approx(days, abs=0.01)
    assert (cert["subject"], cert["issuer"], cert["key"]) == ("127.0.0.1", "Monitor Test CA", "EC P-256")
    assert cert["sans"] == ["127.0.0.1", "svc.test"]
    assert len(cert["serial"]) >= 2
    # Verified: leaf, then the trust anchor the check trusted.
    assert [(c["subject"], c["issuer"], c["key"]) for c in details["chain"]] == [
        ("127.0.0.1", "Monitor Test CA", "EC P-256"),
        ("Monitor Test CA", "Monitor Test CA", "EC P-256"),
    ]
    assert (details["weakest_key"], details["verified"], details["tls_version"]) == (
        "EC P-256",
        True,
        "TLSv1.3",
    )
    timings = result.timings
    assert result.latency_ms == pytest.approx(timings["connect_ms"] + timings["tls_ms"], abs=0.001)  # type: ignore[operator]
    assert server.sni == [None]  # one handshake; an IP literal is not sent as SNI


async def test_tls_check_with_an_intermediate(
    checker: Checker, banner_server: BannerServerFactory, local_ca: LocalCA
) -> None:
    intermediate = local_ca.ca.create_child_ca(key_type=trustme.KeyType.RSA)
    leaf = intermediate.issue_cert("svc.test", common_name="svc.test")
    server = await banner_server(ssl_context=local_ca.server_context(leaf))
    result = await checker.run(TlsCheck(), host="127.0.0.1", port=server.port, server_name="svc.test")
    assert (result.ok, result.error) == (True, None)
    details = result.details or {}
    assert [c["key"] for c in details["chain"]] == ["EC P-256", "RSA 2048", "EC P-256"]
    assert details["weakest_key"] == "RSA 2048"
    assert server.sni == ["svc.test"]


@pytest.mark.parametrize(
    ("days", "server_name", "error"),
    [
        pytest.param(-1, None, "TLS certificate error: certificate has expired", id="expired"),
        pytest.param(
            90,
            "other.test",
            "TLS certificate error: Hostname mismatch, certificate is not valid for 'other.test'.",
            id="wrong-name",
        ),
    ],
)
async def test_tls_check_down_still_shows_the_certificate(
    checker: Checker,
    banner_server: BannerServerFactory,
    local_ca: LocalCA,
    days: int,
    server_name: str | None,
    error: str,
) -> None:
    server = await banner_server(ssl_context=tls_server(local_ca, "127.0.0.1", "svc.test", days=days))
    settings: dict[str, Any] = {"server_name": server_name} if server_name else {}
    result = await checker.run(TlsCheck(), host="127.0.0.1", port=server.port, **settings)
    assert (result.ok, result.error) == (False, error)
    # A second, unverified handshake read what the server sends.
    assert server.sni == [server_name, server_name]
    details = result.details or {}
    assert details["certificate"]["days_left"] == pytest.approx(days, abs=0.01)
    assert (details["verified"], len(details["chain"])) == (False, 1)


async def test_tls_check_failures(checker: Checker, banner_server: BannerServerFactory) -> None:
    plain = await banner_server(banner=SMTP)
    result = await checker.run(TlsCheck(), host="127.0.0.1", port=plain.port)
    assert (result.error, result.details) == (
        "TLS error: the server did not answer in TLS (a plain-text service?)",
        None,
    )
    silent = await banner_server()
    result = await checker.run(TlsCheck(), host="127.0.0.1", port=silent.port)
    assert result.error == "timed out after 1s in the TLS handshake with 127.0.0.1"
    port = free_port()
    result = await checker.run(TlsCheck(), host="127.0.0.1", port=port)
    assert result.error == f"connection failed: refused by 127.0.0.1 port {port}"
