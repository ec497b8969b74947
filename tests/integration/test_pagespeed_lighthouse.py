"""Page-speed checks with the real Lighthouse (the pinned CLI of ``make browser-tools``) in a
real Chromium behind its vetting proxy, against the local site of tests/support/
lighthouse_pages.py: the fast page passes, the slow one (its largest element, an image, answered
4 s late by the server) fails ``lcp_ms <= 2500`` as configured: down in one monitor, degraded in
another, the metric in the cause; a page the proxy refuses is down naming the refusal.

``execute`` runs as a worker calls it. A Lighthouse run costs 10-20 s here, so the three runs
of the site are made once for the module, side by side, and each test reads its verdict.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from support.browser_run import needs_chromium
from support.lighthouse_pages import serve

from monitor.browser.chromium import Chromium
from monitor.browser.lighthouse import find_cli
from monitor.checks import REGISTRY
from monitor.checks.base import CheckContext
from monitor.checks.pagespeed import PageSpeedDetails
from monitor.models import CheckResult, Failure, MonitorSpec
from monitor.net.policy import AddressPolicy
from monitor.net.resolver import VettedResolver
from monitor.net.session import make_session

needs_lighthouse = pytest.mark.skipif(
    find_cli() is None,
    reason="the Lighthouse CLI is not installed (`make browser-tools` installs it in tools/lighthouse)",
)
pytestmark = [
    needs_chromium,
    needs_lighthouse,
    pytest.mark.timeout(240),
    pytest.mark.asyncio(loop_scope="module"),
]

LCP = {"metric": "lcp_ms", "op": "<=", "value": 2500}


async def context(allowed: list[str]) -> AsyncIterator[CheckContext]:
    policy = AddressPolicy(allowed)
    resolver = VettedResolver(policy)
    session = make_session(resolver)
    browser = Chromium(resolver, memory_mb=1536)
    try:
        yield CheckContext(session, policy, browser=browser)
    finally:
        await browser.close()
        await session.close()
        await resolver.close()


async def check(
    ctx: CheckContext, url: str, assertions: list[dict[str, Any]], monitor_id: int
) -> CheckResult:
    """A page-speed monitor's check as a worker runs it, its details held to their model."""
    pagespeed = REGISTRY.get("pagespeed")
    stored, _ = pagespeed.to_stored(pagespeed.Settings.model_validate({"url": url, "assertions": assertions}))
    spec = MonitorSpec(id=monitor_id, name="Site", type="pagespeed", url=url, interval_seconds=300,
                       timeout_seconds=120, confirm_after=1, paused=False,
                       options=pagespeed.options(stored, None))  # fmt: skip
    result = await pagespeed.run(spec, ctx, dt.datetime.now(dt.UTC))
    PageSpeedDetails.model_validate(result.details)
    return result


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def runs() -> AsyncIterator[dict[str, CheckResult]]:
    """One Lighthouse run each: the fast page, the slow page judged down, the slow page judged
    degraded (side by side: on 2 cores about 35 s in all)."""
    async with serve() as base:
        async for ctx in context(["127.0.0.1/32"]):
            fast, down, degraded = await asyncio.gather(
                check(ctx, base, [LCP, {"metric": "cls", "op": "<=", "value": 0.1},
                                  {"metric": "seo", "op": ">=", "value": 0.9, "severity": "degraded"}], 1),
                check(ctx, base + "slow", [LCP], 2),
                check(ctx, base + "slow", [{**LCP, "severity": "degraded"}], 3),
            )  # fmt: skip
            yield {"fast": fast, "down": down, "degraded": degraded}


async def test_the_fast_page_passes(runs: dict[str, CheckResult]) -> None:
    fast = runs["fast"]
    assert (fast.ok, fast.error, fast.failure, fast.status_code) == (True, None, None, 200), fast.error
    details = fast.details or {}
    assert "degraded" not in details and details["profile"] == "mobile"
    assert details["lighthouse_version"] == "12.2.3"
    assert set(details["metrics"]) == {"lcp_ms", "cls", "tbt_ms", "fcp_ms", "speed_index_ms", "ttfb_ms"}
    assert details["metrics"]["lcp_ms"] < 2500 and fast.latency_ms == details["metrics"]["lcp_ms"]
    assert set(details["scores"]) == {"performance", "accessibility", "best_practices", "seo"}
    assert all(o["ok"] for o in details["assertions"]) and len(details["assertions"]) == 3


async def test_the_slow_page_is_down_with_the_metric_in_the_cause(runs: dict[str, CheckResult]) -> None:
    down = runs["down"]
    assert (down.ok, down.failure, down.status_code) == (False, Failure.ASSERTION, 200)
    lcp = (down.details or {})["metrics"]["lcp_ms"]
    assert lcp > 4000  # the image came 4 s after the page
    assert down.error == f"lcp_ms {lcp:.0f} > 2500"
    audits = [a["id"] for a in (down.details or {})["failed_audits"]]
    assert "largest-contentful-paint" in audits and "meta-description" in audits


async def test_the_slow_page_is_degraded_where_the_bound_says_so(runs: dict[str, CheckResult]) -> None:
    degraded = runs["degraded"]
    assert (degraded.ok, degraded.error, degraded.failure) == (True, None, None)
    details = degraded.details or {}
    assert details["degraded"] == f"lcp_ms {details['metrics']['lcp_ms']:.0f} > 2500"
    assert details["assertions"][0]["severity"] == "degraded" and not details["assertions"][0]["ok"]


async def test_a_page_the_proxy_refuses_is_down_naming_the_refusal() -> None:
    async with serve() as base:
        async for ctx in context([]):  # the default policy: loopback denied
            refused = await check(ctx, base, [LCP], 4)
    assert (refused.ok, refused.failure) == (False, Failure.REFUSED), refused.error
    assert refused.error is not None and refused.error.startswith("blocked: 127.0.0.1")
    details = refused.details or {}
    assert details["refusals"][0].startswith("blocked: 127.0.0.1")
    assert details["runtime_error"]["code"]
