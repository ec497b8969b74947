"""An https check records the monitored host's certificate in its result's ``details``.

Real checks (``HttpCheck.run``, through the SSRF-safe client) against HTTPS servers on
127.0.0.1 whose leaves a throwaway CA (``support.certs``) issued to expire in N days; the check
session trusts that CA as ``MONITOR_CA_FILE`` makes the scheduler do. Every check dials afresh
(the client keeps no connection), so every https check has a handshake and a certificate; plain
http has neither and keeps ``details`` None. After a redirect, the certificate is still the
first hop's: the monitored URL's own host.
"""

from __future__ import annotations

import datetime as dt
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest
from support import TargetServer
from support.canary import Origin
from support.certs import (  # noqa: F401  (the local_ca and https_target fixtures)
    CA_ORGANIZATION,
    HttpsTarget,
    HttpsTargetFactory,
    LocalCA,
    https_target_fixture,
    local_ca_fixture,
)
from support.connections import all_closed

from monitor.checks.base import CheckContext
from monitor.checks.certificate import cert_days_left, cert_not_after
from monitor.checks.http import PLAIN, HttpCheck, HttpOptions
from monitor.models import CheckResult, MonitorSpec
from monitor.net.certificate import CertificateMemo
from monitor.net.policy import AddressPolicy
from monitor.net.resolver import VettedResolver
from monitor.net.session import HttpSession, make_session

pytestmark = pytest.mark.timeout(30)

LOOPBACK = ["127.0.0.0/8"]


@dataclass
class Checker:
    session: HttpSession
    ctx: CheckContext

    async def check(
        self, url: str, *, follow_redirects: bool = False, options: HttpOptions | None = None
    ) -> CheckResult:
        spec = MonitorSpec(
            id=1,
            name="cert",
            type="http",
            url=url,
            interval_seconds=60,
            timeout_seconds=5,
            confirm_after=1,
            paused=False,
            options=replace(
                options or PLAIN, expected_status=((200, 299),), follow_redirects=follow_redirects
            ),
        )
        return await HttpCheck().run(spec, self.ctx, dt.datetime.now(dt.UTC))


@pytest.fixture
async def checker(local_ca: LocalCA, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Checker]:
    """A check session that may dial loopback and trusts ``local_ca`` besides the system's
    roots; every connection it opened is closed before the test's loop ends."""
    async with all_closed(monkeypatch):
        policy = AddressPolicy(LOOPBACK)
        resolver = VettedResolver(policy)
        session = make_session(resolver, ssl_context=local_ca.client_context())
        try:
            yield Checker(session, CheckContext(session, policy, allow_insecure_tls=True))
        finally:
            await session.close()
            await resolver.close()


def _rfc3339(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize(
    ("days", "common_name", "subject"),
    [
        pytest.param(3, None, "127.0.0.1", id="expires-in-3-days-named-by-its-first-SAN"),
        pytest.param(365, "status.example.test", "status.example.test", id="a-year-named-by-its-CN"),
    ],
)
async def test_https_check_records_the_certificate(
    checker: Checker, https_target: HttpsTargetFactory, days: int, common_name: str | None, subject: str
) -> None:
    target = await https_target(days=days, common_name=common_name)
    result = await checker.check(target.url("/health"))
    assert (result.ok, result.status_code, result.error) == (True, 200, None)
    assert result.details is not None
    cert = result.details["certificate"]
    assert cert == {
        "not_after": _rfc3339(target.not_after),
        "days_left": cert["days_left"],
        "subject": subject,
        "issuer": CA_ORGANIZATION,
    }
    assert isinstance(cert["days_left"], float) and round(cert["days_left"], 2) == cert["days_left"]
    assert cert["days_left"] == pytest.approx(days, abs=0.01)
    assert set(result.details) == {"certificate"}  # nothing else to say about a plain https check
    # What the lead's degraded rule reads:
    assert cert_days_left(result.details) == cert["days_left"]
    assert cert_not_after(result.details) == target.not_after


async def test_every_check_dials_and_records_afresh(
    checker: Checker, local_ca: LocalCA, https_target: HttpsTargetFactory
) -> None:
    """The client keeps no connection between checks: a second check does its own handshake
    and records the certificate again (parsed once: the session keeps it by its DER)."""
    target = await https_target(days=3)
    handshakes: list[str | None] = []
    target.context.sni_callback = lambda _sock, name, _ctx: handshakes.append(name)  # every ClientHello
    first = await checker.check(target.url("/one"))
    second = await checker.check(target.url("/two"))
    assert len(handshakes) == 2
    assert first.details is not None and second.details is not None
    assert first.details["certificate"]["not_after"] == second.details["certificate"]["not_after"]
    assert len(checker.session.certificates) == 1


async def test_plain_http_records_nothing(checker: Checker, target: TargetServer) -> None:
    result = await checker.check(target.url("/"))
    assert (result.ok, result.details) == (True, None)
    assert cert_days_left(result.details) is None and cert_not_after(result.details) is None


async def test_a_down_https_check_still_records_the_certificate(
    checker: Checker, https_target: HttpsTargetFactory
) -> None:
    target = await https_target(days=3)
    target.set(503)
    result = await checker.check(target.url("/"))
    assert (result.ok, result.error) == (False, "unexpected status 503")
    assert cert_days_left(result.details) == pytest.approx(3, abs=0.01)


async def test_failed_handshake_records_no_certificate(checker: Checker, tmp_path: Any) -> None:
    """A certificate the check does not trust fails the handshake: the error says why, and
    there is no certificate to record."""
    stranger = LocalCA(tmp_path / "stranger")
    leaf, _ = stranger.issue(days=3)
    target = await HttpsTarget(stranger.server_context(leaf), not_after=dt.datetime.now(dt.UTC)).start()
    try:
        result = await checker.check(target.url("/"))
    finally:
        await target.close()
    assert result.error is not None and result.error.startswith("TLS certificate error"), result.error
    assert result.details is None


async def test_unverified_certificate_is_recorded_too(checker: Checker, tmp_path: Any) -> None:
    """``tls_verify: false`` (the operator allows it): the chain is not checked, the leaf is
    still read (from its DER) and recorded beside ``tls_verified: false``."""
    stranger = LocalCA(tmp_path / "stranger")
    leaf, not_after = stranger.issue(days=3, common_name="self.test")
    target = await HttpsTarget(stranger.server_context(leaf), not_after=not_after).start()
    try:
        result = await checker.check(target.url("/"), options=HttpOptions(tls_verify=False))
    finally:
        await target.close()
    assert (result.ok, result.error) == (True, None)
    assert result.details is not None and result.details["tls_verified"] is False
    assert result.details["certificate"]["subject"] == "self.test"
    assert result.details["certificate"]["issuer"] == CA_ORGANIZATION
    assert cert_not_after(result.details) == not_after
    assert cert_days_left(result.details) == pytest.approx(3, abs=0.01)


@pytest.fixture
async def redirecting() -> AsyncIterator[Callable[[ssl.SSLContext | None], Awaitable[Origin]]]:
    origins: list[Origin] = []

    async def start(context: ssl.SSLContext | None) -> Origin:
        origin = await Origin(host="127.0.0.1", ssl_context=context).start()
        origins.append(origin)
        return origin

    yield start
    for origin in origins:
        await origin.close()


async def test_after_a_redirect_the_monitored_hosts_certificate_is_recorded(
    checker: Checker,
    local_ca: LocalCA,
    https_target: HttpsTargetFactory,
    redirecting: Callable[[ssl.SSLContext | None], Awaitable[Origin]],
) -> None:
    """https (expiring in 3 days) → https elsewhere (a year): the first host's certificate.
    http → https: none, the monitored URL had no TLS."""
    elsewhere = await https_target(days=365, common_name="elsewhere.test")
    leaf, not_after = local_ca.issue(days=3, common_name="monitored.test")
    monitored = await redirecting(local_ca.server_context(leaf))
    monitored.redirect("/", elsewhere.url("/landing"))

    result = await checker.check(monitored.url("/"), follow_redirects=True)
    assert (result.ok, result.status_code) == (True, 200), result.error
    assert elsewhere.received("/landing") == 1
    assert result.details is not None
    assert result.details["certificate"]["subject"] == "monitored.test"
    assert cert_not_after(result.details) == not_after

    plain = await redirecting(None)
    plain.redirect("/", elsewhere.url("/landing"))
    result = await checker.check(plain.url("/"), follow_redirects=True)
    assert (result.ok, elsewhere.received("/landing")) == (True, 2)
    assert result.details is None


@pytest.mark.parametrize(
    ("details", "days_left", "not_after"),
    [
        (None, None, None),
        ({}, None, None),
        ({"assertions": []}, None, None),
        ({"certificate": "garbage"}, None, None),
        ({"certificate": {"days_left": True, "not_after": 5}}, None, None),
        ({"certificate": {"days_left": 2, "not_after": "not a time"}}, 2.0, None),
        (
            {"certificate": {"days_left": -1.5, "not_after": "2026-12-03T12:00:00Z"}},
            -1.5,
            dt.datetime(2026, 12, 3, 12, tzinfo=dt.UTC),
        ),
        (
            {"certificate": {"days_left": 0.25, "not_after": "2026-12-03T14:00:00+02:00"}},
            0.25,
            dt.datetime(2026, 12, 3, 12, tzinfo=dt.UTC),
        ),
    ],
)
def test_helpers_read_what_a_result_recorded(
    details: dict[str, Any] | None, days_left: float | None, not_after: dt.datetime | None
) -> None:
    assert cert_days_left(details) == days_left
    assert cert_not_after(details) == not_after


def test_certificate_memo_is_bounded_and_remembers_garbage(local_ca: LocalCA) -> None:
    memo = CertificateMemo(max_entries=2)
    ders = [local_ca.issue(days=d)[0].cert_chain_pems[0].bytes() for d in (1, 2, 3)]
    parsed = [memo.get(ssl.PEM_cert_to_DER_cert(pem.decode())) for pem in ders]
    assert [round((p.not_after - dt.datetime.now(dt.UTC)).total_seconds() / 86400) for p in parsed if p] == [
        1,
        2,
        3,
    ]
    assert len(memo) == 2
    assert memo.get(b"not a certificate") is None and len(memo) == 2
