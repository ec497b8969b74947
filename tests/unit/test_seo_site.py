"""The seo assertion's site rules as tables: robots.txt files as sites really write them (and
the answers a crawler can get for one), then sitemaps: what is a sitemap, what is not, and
which verdicts are kept until the next fetch is due."""

from __future__ import annotations

import gzip

import pytest

from monitor.checks.seo_site import judge_robots, judge_sitemap, sitemap_problem
from monitor.net.client import FetchResult

PAGE = "https://shop.example/mugs/blue?ref=home"
AGENTS = ("*", "Googlebot")


def got(
    status: int | None,
    body: bytes = b"",
    *,
    error: str | None = None,
    truncated: bool = False,
    content_type: str | None = None,
) -> FetchResult:
    return FetchResult(
        status,
        error is None,
        error,
        None,
        "https://shop.example/robots.txt",
        5.0,
        {},
        False,
        body,
        truncated=truncated,
        content_type=content_type,
    )


WORDPRESS = b"""User-agent: *
Disallow: /wp-admin/
Allow: /wp-admin/admin-ajax.php

Sitemap: https://shop.example/wp-sitemap.xml
"""
STAGING = b"User-agent: *\nDisallow: /\n"
GOOGLE_ONLY = b"User-agent: Googlebot\nDisallow: /mugs/\n\nUser-agent: *\nAllow: /\n"
WILDCARD = b"User-agent: *\nDisallow: /*?ref=\n"
LONGEST = b"User-agent: *\nDisallow: /mugs/\nAllow: /mugs/blue\n"
ROOT_ONLY = b"User-agent: *\nAllow: /$\nDisallow: /\n"

ROBOTS = [
    ("wordpress", got(200, WORDPRESS), True, "robots.txt allows /mugs/blue?ref=home for *, Googlebot", True),
    (
        "staging shipped",
        got(200, STAGING),
        False,
        "robots.txt disallows /mugs/blue?ref=home for *, Googlebot",
        True,
    ),
    (
        "googlebot's own group",
        got(200, GOOGLE_ONLY),
        False,
        "robots.txt disallows /mugs/blue?ref=home for Googlebot",
        True,
    ),
    ("a wildcard on the query", got(200, WILDCARD), False, None, True),
    ("the longest rule wins", got(200, LONGEST), True, None, True),
    ("only the home page", got(200, ROOT_ONLY), False, None, True),
    ("empty file", got(200, b""), True, None, True),
    ("an html error page served as 200", got(200, b"<html><body>Not here</body></html>"), True, None, True),
    ("404: no robots.txt", got(404), True, "robots.txt answered 404: everything allowed", True),
    ("403 too", got(403), True, "robots.txt answered 403: everything allowed", True),
    (
        "503",
        got(503),
        False,
        "robots.txt answered 503: Google stops crawling a site while its robots.txt does",
        False,
    ),
    ("429", got(429), False, None, False),
    (
        "timed out",
        got(None, error="timed out after 5s waiting for the response head"),
        False,
        "robots.txt could not be fetched: timed out after 5s waiting for the response head",
        False,
    ),
    (
        "refused",
        got(None, error="blocked: 10.0.0.5 is a private address"),
        False,
        "robots.txt could not be fetched: blocked: 10.0.0.5 is a private address",
        False,
    ),
    ("a redirect loop's last answer", got(301), False, "robots.txt answered 301 after redirects", False),
]


@pytest.mark.parametrize(
    ("fetched", "ok", "message", "kept"), [c[1:] for c in ROBOTS], ids=[c[0] for c in ROBOTS]
)
def test_robots(fetched: FetchResult, ok: bool, message: str | None, kept: bool) -> None:
    robots = judge_robots(fetched, PAGE, AGENTS)
    assert (robots.finding.rule, robots.finding.ok, robots.kept) == ("robots_txt", ok, kept), robots
    if message is not None:
        assert robots.finding.message == message


def test_robots_gives_its_sitemaps_and_agents_are_each_judged() -> None:
    assert judge_robots(got(200, WORDPRESS), PAGE, AGENTS).sitemaps == (
        "https://shop.example/wp-sitemap.xml",
    )
    assert judge_robots(got(200, GOOGLE_ONLY), PAGE, ["*"]).finding.ok
    assert judge_robots(got(200, GOOGLE_ONLY), PAGE, ["Bingbot"]).finding.ok


URLSET = b"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>https://shop.example/</loc><lastmod>2026-11-30</lastmod></url>
</urlset>"""
INDEX = b"""<?xml version="1.0" encoding="UTF-8"?><?xml-stylesheet type="text/xsl" href="/wp-sitemap.xsl"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<sitemap><loc>https://shop.example/wp-sitemap-posts-post-1.xml</loc></sitemap></sitemapindex>"""
BOMB = b"""<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]>
<urlset>&lol2;</urlset>"""

SITEMAPS = [
    ("a urlset", URLSET, True, None, "<urlset>"),
    ("an index of sitemaps", INDEX, True, None, "a sitemap index"),
    ("gzip served as a file", gzip.compress(URLSET), True, None, "<urlset>"),
    (
        "an rss feed",
        b'<?xml version="1.0"?><rss version="2.0"><channel></channel></rss>',
        True,
        None,
        "<rss>",
    ),
    ("a text sitemap", b"https://shop.example/\nhttps://shop.example/mugs\n", True, None, "a text sitemap"),
    ("cut after its first bytes", URLSET[:120], False, None, "<urlset>"),
    (
        "the shop's 404 page served as 200",
        b"<!doctype html><html><body>Oops</body></html>",
        True,
        "is an HTML page, not a sitemap",
        "HTML",
    ),
    ("html", b'<html lang="en"><body>Oops</body></html>', True, "is an HTML page, not a sitemap", "HTML"),
    (
        "another xml",
        b"<feedback><item/></feedback>",
        True,
        "is XML but not a sitemap: its root element is <feedback>",
        "XML",
    ),
    (
        "a php warning before the xml",
        b"<br />\n<b>Warning</b>: headers already sent\n" + URLSET,
        True,
        "is not XML: junk after document element at line 2 column 0",
        "XML",
    ),
    ("broken", URLSET.replace(b"</url>", b""), True, "is not XML: mismatched tag at line 4 column 2", "XML"),
    ("an entity bomb", BOMB, True, "declares a DOCTYPE or an entity, which no sitemap needs", "XML"),
    ("empty", b"  \n", True, "is empty", "empty"),
    ("bad gzip", b"\x1f\x8bnot gzip at all", True, "is not valid gzip", "gzip"),
]


@pytest.mark.parametrize(
    ("data", "complete", "problem", "kind"), [c[1:] for c in SITEMAPS], ids=[c[0] for c in SITEMAPS]
)
def test_sitemap_problem(data: bytes, complete: bool, problem: str | None, kind: str) -> None:
    content_type = "text/plain" if data.startswith(b"https:") else "application/xml"
    assert sitemap_problem(data, complete=complete, content_type=content_type) == (problem, kind)


SITEMAP = "https://shop.example/sitemap.xml"
VERDICTS = [
    (
        "good",
        got(200, URLSET),
        True,
        "sitemap https://shop.example/sitemap.xml is <urlset> (184 bytes read)",
        True,
    ),
    ("404", got(404), False, "sitemap https://shop.example/sitemap.xml answered 404", True),
    ("502", got(502), False, "sitemap https://shop.example/sitemap.xml answered 502", False),
    (
        "not xml",
        got(200, b"hello"),
        False,
        "sitemap https://shop.example/sitemap.xml is not XML: syntax error at line 1 column 0",
        True,
    ),
    (
        "timed out",
        got(None, error="timed out after 5s connecting"),
        False,
        "sitemap https://shop.example/sitemap.xml could not be fetched: timed out after 5s connecting",
        False,
    ),
]


@pytest.mark.parametrize(
    ("fetched", "ok", "message", "kept"), [c[1:] for c in VERDICTS], ids=[c[0] for c in VERDICTS]
)
def test_sitemap_verdict(fetched: FetchResult, ok: bool, message: str, kept: bool) -> None:
    finding, keep = judge_sitemap(fetched, SITEMAP)
    assert (finding.rule, finding.ok, finding.message, keep) == ("sitemap", ok, message, kept)
