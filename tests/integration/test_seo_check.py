"""The ``seo`` assertion in real checks: ``HttpCheck.run`` through the SSRF-safe client against
a local site (page, robots.txt, sitemap) whose answers each case changes, as deploys do.

What the unit tables cannot show: the check asks the fetch for the headers the rules read
(X-Robots-Tag, Link), robots.txt and the sitemap are fetched beside the page and then not
again until ``files_every_minutes`` have passed (a failed fetch is tried again at the next
check), every extra request goes through the same guard (a sitemap or a robots.txt redirect
pointing at a denied address is refused, and the canary listening there is never reached),
and the findings sit in ``details.assertions``, up or down.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from support.canary import ORIGIN_ALLOW, ORIGIN_HOST, Canary
from support.connections import all_closed
from support.headed import HeadedHttp

from monitor.checks.base import CheckContext
from monitor.checks.http import HttpCheck, HttpOptions
from monitor.checks.seo_site import SiteFiles
from monitor.models import CheckResult, MonitorSpec
from monitor.net.policy import AddressPolicy
from monitor.net.resolver import VettedResolver
from monitor.net.session import make_session

pytestmark = pytest.mark.timeout(30)

HOME = """<!doctype html><html><head><title>Mugs &amp; Bowls</title>
<meta name="description" content="Stoneware made in small batches.">
<link rel="canonical" href="/">
<script type="application/ld+json">{"@context": "https://schema.org", "@type": "Store"}</script>
</head><body><h1>Mugs</h1></body></html>"""
ROBOTS = "User-agent: *\nDisallow: /cart\n\nSitemap: {sitemap}\n"
SITEMAP = '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>/</loc></url></urlset>'

Check = Callable[..., Awaitable[CheckResult]]


@pytest.fixture
async def site() -> AsyncIterator[HeadedHttp]:
    """The shop on 127.0.0.2 (the address the checks may dial): home page, robots.txt, sitemap."""
    server = HeadedHttp([], host=ORIGIN_HOST)
    await server.start()
    server.set(body=HOME, content_type="text/html")
    server.set(
        path="/robots.txt", body=ROBOTS.format(sitemap=server.url("/sitemap.xml")), content_type="text/plain"
    )
    server.set(path="/sitemap.xml", body=SITEMAP, content_type="application/xml")
    try:
        yield server
    finally:
        await server.close()


@pytest.fixture
async def check(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Callable[..., Any]]:
    """``check = make(url, **seo_fields)``, then ``await check()``: checks of one monitor, whose
    compiled assertions (and so the kept robots.txt and sitemap verdict) last across calls."""
    async with all_closed(monkeypatch):
        policy = AddressPolicy([ORIGIN_ALLOW])
        resolver = VettedResolver(policy)
        session = make_session(resolver)
        ctx = CheckContext(session, policy)

        def make(url: str, **fields: Any) -> Callable[[], Awaitable[CheckResult]]:
            options = HttpOptions.from_stored({"assertions": [{"type": "seo", **fields}]}, None)
            spec = MonitorSpec(
                id=1, name="shop", type="http", url=url, interval_seconds=60, timeout_seconds=5,
                confirm_after=1, paused=False, options=options,
            )  # fmt: skip
            return lambda: HttpCheck().run(spec, ctx, dt.datetime.now(dt.UTC))

        try:
            yield make
        finally:
            await session.close()
            await resolver.close()


def findings(result: CheckResult) -> dict[str, dict[str, Any]]:
    assert result.details is not None
    [outcome] = result.details["assertions"]
    return {f["rule"]: f for f in outcome["seo"]["findings"]}


async def test_a_healthy_shop_is_up_and_its_files_are_fetched_once_per_period(
    site: HeadedHttp, check: Callable[..., Any]
) -> None:
    run = check(site.url("/"), canonical=site.url("/"), description=True, sitemap=True)
    result = await run()
    assert (result.ok, result.error) == (True, None), result
    found = findings(result)
    assert {rule: f["ok"] for rule, f in found.items()} == dict.fromkeys(
        ["noindex", "canonical", "title", "description", "json_ld", "robots_txt", "sitemap"], True
    )
    assert found["robots_txt"]["message"] == "robots.txt allows / for *, Googlebot"
    assert found["sitemap"]["message"].startswith(f"sitemap {site.url('/sitemap.xml')} is <urlset>")
    assert result.details is not None
    assert "files_checked_at" in result.details["assertions"][0]["seo"]
    assert (site.received("/robots.txt"), site.received("/sitemap.xml")) == (1, 1)

    again = await run()
    assert again.ok and findings(again)["robots_txt"] == found["robots_txt"]
    assert site.received("/") == 2
    assert (site.received("/robots.txt"), site.received("/sitemap.xml")) == (1, 1)  # kept, not fetched


async def test_a_deploy_that_adds_noindex_is_down_naming_it(
    site: HeadedHttp, check: Callable[..., Any]
) -> None:
    run = check(site.url("/"), robots_txt=False)
    assert (await run()).ok
    site.fields = [("X-Robots-Tag", "noindex, nofollow")]
    result = await run()
    assert (result.ok, result.error) == (False, "noindex in X-Robots-Tag: noindex, nofollow")
    site.fields = []
    site.set(
        body=HOME.replace("<head>", '<head><meta name="robots" content="noindex">'), content_type="text/html"
    )
    result = await run()
    assert result.error == 'noindex in <meta name="robots" content="noindex">'
    # The same page is up for a monitor that keeps noindex pages on purpose.
    assert (await check(site.url("/"), robots_txt=False, noindex=False)()).ok


async def test_robots_txt_verdicts_from_answers_are_kept_and_failures_are_tried_again(
    site: HeadedHttp, check: Callable[..., Any]
) -> None:
    site.set(path="/robots.txt", status=503, body="busy")
    run = check(site.url("/"))
    result = await run()
    assert result.error == "robots.txt answered 503: Google stops crawling a site while its robots.txt does"
    assert not (await run()).ok
    assert site.received("/robots.txt") == 2  # no answer kept: fetched at every check

    site.set(path="/robots.txt", status=404, body="not found")
    assert (await run()).ok
    assert findings(await run())["robots_txt"]["message"] == "robots.txt answered 404: everything allowed"
    assert site.received("/robots.txt") == 3

    staging = check(site.url("/"))
    site.set(path="/robots.txt", status=200, body="User-agent: *\nDisallow: /\n")
    result = await staging()
    assert result.error == "robots.txt disallows / for *, Googlebot"


async def test_site_files_at_a_denied_address_are_refused_and_never_reached(
    site: HeadedHttp, check: Callable[..., Any]
) -> None:
    canary = await Canary().start()
    try:
        run = check(site.url("/"), robots_txt=False, sitemap_url=canary.url(path="/sitemap.xml"))
        result = await run()
        assert not result.ok
        assert result.error is not None and result.error.startswith(
            f"sitemap {canary.url(path='/sitemap.xml')} could not be fetched: blocked"
        ), result.error
        # robots.txt moved by a redirect to a denied address: refused at the redirect.
        site.set(path="/robots.txt", status=302, body="")
        site.fields = [("Location", canary.url(path="/robots.txt"))]
        result = await check(site.url("/"))()
        assert result.error is not None and "robots.txt could not be fetched: blocked" in result.error
        assert canary.count == 0, canary.describe()
    finally:
        await canary.close()


async def test_a_kept_verdict_is_fetched_again_once_its_period_is_over(
    site: HeadedHttp, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [1000.0]
    files = SiteFiles(robots=True, agents=["*"], sitemap=True, sitemap_url=None, every_seconds=600,
                      clock=lambda: now[0])  # fmt: skip
    async with all_closed(monkeypatch):
        policy = AddressPolicy([ORIGIN_ALLOW])
        resolver = VettedResolver(policy)
        session = make_session(resolver)
        ctx = CheckContext(session, policy)
        try:
            first = await files.report(ctx, site.url("/"), seconds=5, tls_verify=True)
            assert [f.ok for f in first.findings] == [True, True]
            now[0] += 599
            assert files.kept() is first
            site.set(path="/sitemap.xml", status=404, body="gone")
            assert await files.report(ctx, site.url("/"), seconds=5, tls_verify=True) is first
            now[0] += 1  # the period is over: both files again
            second = await files.report(ctx, site.url("/"), seconds=5, tls_verify=True)
            assert second.findings[1].message == f"sitemap {site.url('/sitemap.xml')} answered 404"
            assert (site.received("/robots.txt"), site.received("/sitemap.xml")) == (2, 2)
            assert files.kept() is second  # a 404 is an answer: kept too
        finally:
            await session.close()
            await resolver.close()
