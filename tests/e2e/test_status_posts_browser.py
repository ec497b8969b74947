"""Incident posts as a visitor's browser runs them: headless Chromium (``support.browser``)
loads a status page with an open post and a resolved one, and a post's permalink, from the real
api, at 360 px and 1280 px in light and dark mode. The posts' Markdown is hostile (a script, an
image with ``onerror``, a ``javascript:`` link, raw HTML, an image from elsewhere): nothing of it
runs (the document's title and a marker stay as they were, no dialog opens), no image or script
element comes from it, its links are the allowed ones with ``rel="nofollow noopener"``, and
axe-core finds no serious or critical violation on either page.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from support import ApiClient, ProcessFactory, axe
from support.browser import Browser, Scheme, browser_fixture  # noqa: F401

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

SLUG = "posts"
LOOKS: list[tuple[int, Scheme]] = [(360, "light"), (360, "dark"), (1280, "light"), (1280, "dark")]
HOSTILE = (
    "We are on it. <script>document.title = 'pwned'; window.pwned = 1</script>\n\n"
    '<img src=x onerror="window.pwned = 1"> ![tracker](https://evil.example/t.png)\n\n'
    '[click](javascript:window.pwned=1) <a href="https://evil.example" onclick="window.pwned=1">raw</a>\n\n'
    "- see [the provider](https://status.example.com/)\n- `code` and **bold**"
)


def _visit(browser: Browser, url: str, width: int, scheme: Scheme, where: str) -> None:
    browser.open(url, width=width, scheme=scheme, mobile=width < 600)
    assert not browser.script("return window.pwned === 1"), f"{where}: the post's script ran"
    assert "pwned" not in browser.driver.title, where
    assert not browser.find_all("main img"), f"{where}: an image came from a post"
    assert not browser.find_all("script"), f"{where}: a script element"
    for link in browser.find_all(".update-text a"):
        href = link.get_attribute("href") or ""
        assert href.startswith(("https://", "http://", "mailto:")) or not link.get_attribute("href"), where
        assert link.get_attribute("rel") == "nofollow noopener", where
        assert not link.get_attribute("onclick"), where
    assert browser.script("return document.documentElement.scrollWidth") <= width, (
        f"{where}: scrolls sideways"
    )
    axe.assert_clean(browser, where)


async def test_hostile_posts_do_nothing_in_a_browser(
    procs: ProcessFactory, api_client: Callable[[str], ApiClient], browser: Browser
) -> None:
    api_proc = await procs.start("api", env={"MONITOR_STATUS_CACHE_SECONDS": "1"})
    api = api_client(api_proc.base_url)
    shop = await api.create_monitor(name="Web shop", url="http://127.0.0.1:9/shop")
    page = await api.post(
        "/api/v1/status-pages",
        json={"slug": SLUG, "title": "Shop", "groups": [{"name": "Storefront", "monitor_ids": [shop["id"]]}]},
    )
    assert page.status == 201, page
    posts = f"/api/v1/status-pages/{page.json['id']}/posts"
    body = {"title": "Checkout <b>slow</b>", "impact": "major", "monitor_ids": [shop["id"]],
            "update": {"state": "investigating", "text": HOSTILE}}  # fmt: skip
    current = await api.post(posts, json=body)
    assert current.status == 201, current
    past = await api.post(posts, json={**body, "title": "Yesterday"})
    resolved = await api.post(
        f"/api/v1/posts/{past.json['id']}/updates", json={"state": "resolved", "text": HOSTILE}
    )
    assert resolved.status == 201, resolved
    base = f"{api_proc.base_url}/status/{SLUG}"
    for width, scheme in LOOKS:
        await asyncio.to_thread(_visit, browser, base, width, scheme, f"page {width} {scheme}")
        titles = [e.text for e in browser.find_all("article.post .post-title")]
        assert titles == ["Checkout <b>slow</b>", "Yesterday"]
        await asyncio.to_thread(
            _visit,
            browser,
            f"{base}/posts/{current.json['id']}",
            width,
            scheme,
            f"permalink {width} {scheme}",
        )
