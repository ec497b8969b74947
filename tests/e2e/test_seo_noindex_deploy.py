"""SEO end to end (issue 30, point 3), with real processes: a shop whose page, robots.txt and
sitemap are healthy is UP; a deploy adds ``noindex`` (the staging setting shipped to
production), and its monitor goes DOWN, once, with the cause naming the tag; the next deploy
takes it out, and the monitor is UP again. Visitors were served 200 all along. Every check
carries its findings, which ``GET .../checks`` shows, and robots.txt was fetched once for the
whole run (its verdict is kept for ``files_every_minutes``).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import asyncpg
import pytest
from support import ApiClient, FakeTelegram, ProcessFactory, wait_for
from support.headed import HeadedHttp

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

DEADLINE = 30.0
CHAT = "-1001000003001"
PAGE = """<!doctype html><html><head><title>Mugs &amp; Bowls</title>{robots}
<link rel="canonical" href="/">
<script type="application/ld+json">{{"@context": "https://schema.org", "@type": "Store"}}</script>
</head><body><h1>Mugs</h1></body></html>"""
GOOD = PAGE.format(robots="")
NOINDEX = PAGE.format(robots='<meta name="robots" content="noindex, nofollow">')
CAUSE = 'noindex in <meta name="robots" content="noindex, nofollow">'


async def test_a_deploy_that_adds_noindex_goes_down_naming_it_and_recovers(
    db: asyncpg.Connection,
    fake_telegram: FakeTelegram,
    procs: ProcessFactory,
    api_client: Callable[[str], ApiClient],
) -> None:
    site = await HeadedHttp([]).start()
    try:
        site.set(body=GOOD, content_type="text/html")
        site.set(path="/robots.txt", body="User-agent: *\nAllow: /\n", content_type="text/plain")
        site.set(
            path="/sitemap.xml", body="<urlset><url><loc>/</loc></url></urlset>", content_type="text/xml"
        )
        api_proc = await procs.start("api")
        await procs.start("scheduler")
        await procs.start("alerter", env=fake_telegram.env())
        api = api_client(api_proc.base_url)

        monitor = await api.create_monitor(
            name="shop seo",
            url=site.url("/"),
            interval_seconds=1,
            timeout_seconds=1,
            confirm_after=2,
            telegram_chat_id=CHAT,
            assertions=[{"type": "seo", "canonical": site.url("/"), "sitemap": True}],
        )
        mid = monitor["id"]

        async def status() -> str:
            return str((await api.monitor(mid))["status"])

        async def checks() -> list[dict[str, Any]]:
            response = await api.get(f"/api/v1/monitors/{mid}/checks")
            assert response.status == 200, response
            return list(response.json["items"])  # newest first

        await wait_for(lambda: _is(status, "up"), timeout=DEADLINE, message="monitor up")
        first = (await checks())[0]
        assert (first["ok"], first["error"]) == (True, None)
        [outcome] = first["details"]["assertions"]
        rules = {f["rule"]: f["ok"] for f in outcome["seo"]["findings"]}
        assert rules == dict.fromkeys(
            ["noindex", "canonical", "title", "json_ld", "robots_txt", "sitemap"], True
        )

        # -- the deploy adds noindex: DOWN, once, with the tag as the cause -------------------
        site.set(body=NOINDEX, content_type="text/html")
        await fake_telegram.wait_messages(1, chat_id=CHAT, timeout=DEADLINE)
        down = html.unescape(fake_telegram.messages_to(CHAT)[0].text or "")
        assert "DOWN" in down and CAUSE in down, down
        assert await status() == "down"
        failed = [c for c in await checks() if not c["ok"]]
        assert len(failed) >= 2 and all(c["error"] == CAUSE for c in failed), failed
        [outcome] = failed[0]["details"]["assertions"]
        assert {"rule": "noindex", "ok": False, "message": CAUSE} in outcome["seo"]["findings"]
        stored = await db.fetchval(
            "SELECT count(*) FROM checks WHERE monitor_id = $1 AND NOT ok AND error = $2", mid, CAUSE
        )
        assert stored == len(failed)

        # -- noindex taken out again: UP ------------------------------------------------------
        site.set(body=GOOD, content_type="text/html")
        await fake_telegram.wait_messages(2, chat_id=CHAT, timeout=DEADLINE)
        texts = [m.text or "" for m in fake_telegram.messages_to(CHAT)]
        assert len(texts) == 2 and "UP" in texts[1], texts
        await wait_for(lambda: _is(status, "up"), timeout=DEADLINE, message="monitor up again")
        assert site.received("/") >= 4  # up, down twice (confirm_after), up
        assert (site.received("/robots.txt"), site.received("/sitemap.xml")) == (1, 1)
    finally:
        await site.close()
    assert procs.tracebacks() == {}


async def _is(status: Callable[[], Any], wanted: str) -> bool:
    return bool(await status() == wanted)
