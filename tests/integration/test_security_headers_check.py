"""The ``security_headers`` assertion in real checks: ``HttpCheck.run`` through the SSRF-safe
client against local servers (https from a throwaway CA, and plain http) that answer with the
headers each case chooses, in mixed case and with duplicates as real servers send them.

What the unit tables cannot show: the check asks the fetch for exactly the headers the grader
reads (a header nobody asked for never reaches it), every value of a repeated field arrives,
HSTS counts only when the response that carried it came over TLS (the final one, after
redirects), and the findings sit in ``details.assertions`` beside the certificate, up or down.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from support.canary import Origin
from support.certs import LocalCA, local_ca_fixture  # noqa: F401  (the local_ca fixture)
from support.connections import all_closed
from support.headed import Fields, HeadedHttp, HeadedHttps

from monitor.checks.base import CheckContext
from monitor.checks.http import HttpCheck, HttpOptions
from monitor.models import CheckResult, MonitorSpec
from monitor.net.policy import AddressPolicy
from monitor.net.resolver import VettedResolver
from monitor.net.session import make_session

pytestmark = pytest.mark.timeout(30)

STRONG: Fields = [
    ("strict-transport-security", "max-age=63072000; includeSubDomains; preload"),
    ("Content-Security-Policy", "default-src 'self'; img-src 'self' data:"),
    ("CONTENT-SECURITY-POLICY", "frame-ancestors 'none'"),  # a second policy, from a proxy
    ("X-Content-Type-Options", "NOSNIFF"),
    ("X-Frame-Options", "DENY"),
    ("X-Frame-Options", "DENY"),  # the app and nginx's add_header both set it
    ("Referrer-Policy", "no-referrer, strict-origin-when-cross-origin"),
    ("Permissions-Policy", "geolocation=(), camera=()"),
]
NO_CSP = [(n, v) for n, v in STRONG if n.lower() != "content-security-policy"]

Check = Callable[..., Awaitable[CheckResult]]


@pytest.fixture
async def check(local_ca: LocalCA, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Check]:
    """``await check(url, min_grade=..., follow_redirects=...)``: one real check with a
    security_headers assertion, by a session that may dial loopback and trusts ``local_ca``."""
    async with all_closed(monkeypatch):
        policy = AddressPolicy(["127.0.0.0/8"])
        resolver = VettedResolver(policy)
        session = make_session(resolver, ssl_context=local_ca.client_context())
        ctx = CheckContext(session, policy)

        async def run(url: str, *, min_grade: str = "B", follow_redirects: bool = False) -> CheckResult:
            options = HttpOptions.from_stored(
                {
                    "assertions": [{"type": "security_headers", "min_grade": min_grade}],
                    "follow_redirects": follow_redirects,
                },
                None,
            )
            spec = MonitorSpec(
                id=1,
                name="headers",
                type="http",
                url=url,
                interval_seconds=60,
                timeout_seconds=5,
                confirm_after=1,
                paused=False,
                options=options,
            )
            return await HttpCheck().run(spec, ctx, dt.datetime.now(dt.UTC))

        try:
            yield run
        finally:
            await session.close()
            await resolver.close()


@pytest.fixture
async def servers(local_ca: LocalCA) -> AsyncIterator[Callable[..., Awaitable[Any]]]:
    """``await servers(fields, https=True)``: a started target answering with ``fields``;
    ``await servers(None)``: an Origin (127.0.0.2) that can redirect. All stopped after."""
    started: list[Any] = []

    async def start(fields: Fields | None, *, https: bool = True) -> Any:
        if fields is None:
            server: Any = Origin(
                ssl_context=local_ca.server_context(local_ca.issue("127.0.0.2")[0]) if https else None
            )
        elif https:
            server = HeadedHttps.from_ca(local_ca, fields)
        else:
            server = HeadedHttp(fields)
        started.append(server)
        return await server.start()

    yield start
    for server in started:
        await server.close()


def findings(result: CheckResult) -> dict[str, Any]:
    assert result.details is not None
    [outcome] = result.details["assertions"]
    return dict(outcome["security_headers"])


async def test_a_strong_https_site_is_up_with_its_findings(check: Check, servers: Any) -> None:
    target = await servers(STRONG)
    result = await check(target.url("/"), min_grade="A+")
    assert (result.ok, result.error) == (True, None)
    assert result.details is not None and "certificate" in result.details
    [outcome] = result.details["assertions"]
    assert (outcome["assertion"], outcome["ok"]) == ("security headers grade A+ or better", True)
    report = findings(result)
    assert (report["grade"], report["score"]) == ("A+", 100)
    assert {f["name"]: f["message"] for f in report["findings"]} == {
        "Content-Security-Policy": "CSP restricts scripts (2 policies, all enforced)",
        "Strict-Transport-Security": "HSTS max-age 63072000 (730 days), includeSubDomains, preload",
        "Frame protection": "CSP frame-ancestors 'none'",
        "Referrer-Policy": "Referrer-Policy strict-origin-when-cross-origin (the last of 2 policies given)",
        "X-Content-Type-Options": "X-Content-Type-Options nosniff",
        "Permissions-Policy": "Permissions-Policy sets 2 features",
    }


async def test_losing_the_csp_fails_below_b_with_the_cause(check: Check, servers: Any) -> None:
    target = await servers(NO_CSP)
    result = await check(target.url("/"), min_grade="B")
    assert (result.ok, result.status_code) == (False, 200)
    assert result.error == "security headers grade C is below B: missing Content-Security-Policy"
    assert findings(result)["grade"] == "C"
    # The same site passes a monitor content with C.
    assert (await check(target.url("/"), min_grade="C")).ok


async def test_hsts_over_plain_http_earns_nothing(check: Check, servers: Any) -> None:
    target = await servers(STRONG, https=False)
    result = await check(target.url("/"), min_grade="A")
    assert (
        result.error
        == "security headers grade B is below A: HSTS sent over plain http, where browsers ignore it"
    )
    assert result.details is not None and "certificate" not in result.details


async def test_the_final_response_counts_after_redirects(check: Check, servers: Any) -> None:
    """http → https: the headers of the https answer, HSTS counted. https → http: the final
    answer came over plain http, and its HSTS is ignored."""
    secure = await servers(STRONG)
    plain = await servers(STRONG, https=False)
    upgrade = await servers(None, https=False)
    upgrade.redirect("/", secure.url("/home"))
    result = await check(upgrade.url("/"), min_grade="A+", follow_redirects=True)
    assert (result.ok, result.error, secure.received("/home")) == (True, None, 1)

    downgrade = await servers(None, https=True)
    downgrade.redirect("/", plain.url("/home"))
    result = await check(downgrade.url("/"), min_grade="A+", follow_redirects=True)
    assert plain.received("/home") == 1
    assert result.error == (
        "security headers grade B is below A+: HSTS sent over plain http, where browsers ignore it"
    )


async def test_a_bare_server_is_f_and_every_header_is_named(check: Check, servers: Any) -> None:
    target = await servers([("Server", "nginx/1.25.3")])
    result = await check(target.url("/"), min_grade="D")
    assert result.error == (
        "security headers grade F is below D: missing Content-Security-Policy; missing "
        "Strict-Transport-Security; X-Frame-Options missing and CSP has no frame-ancestors; missing "
        "Referrer-Policy; missing X-Content-Type-Options; missing Permissions-Policy"
    )
    assert [f["status"] for f in findings(result)["findings"]] == ["missing"] * 6
    # min_grade F only reports: up, with the same findings.
    reported = await check(target.url("/"), min_grade="F")
    assert reported.ok and findings(reported) == findings(result)
