"""The seo assertion's page rules as tables of real-world pages: each row a page (HTML as
CMSs and frameworks write it, and the headers it came with) and the finding each rule makes of
it; then the assertion as a whole through ``Judge`` (settings, cause, details)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from monitor.checks import seo
from monitor.checks.assertions import ASSERTIONS, Judge, Observed
from monitor.checks.http_settings import HttpSettings

URL = "https://shop.example/"

# WordPress with Yoast: the usual head of a healthy page.
WORDPRESS = """<!DOCTYPE html>
<html lang="en-US">
<head>
<meta charset="UTF-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Handmade Mugs &amp; Bowls &#8211; Shop</title>
<meta name="description" content="Stoneware made in small batches." />
<meta name="robots" content="index, follow, max-image-preview:large, max-snippet:-1" />
<link rel="canonical" href="https://shop.example/" />
<script type="application/ld+json" class="yoast-schema-graph">{"@context":"https://schema.org","@graph":[{"@type":"WebSite","url":"https://shop.example/"}]}</script>
</head>
<body class="home"><svg><title>cart icon</title></svg><h1>Mugs</h1></body></html>"""

# The staging config shipped to production: Yoast's "discourage search engines" box.
STAGING = WORDPRESS.replace("index, follow, max-image-preview", "noindex, nofollow, max-image-preview")


STAGING_META = (
    'noindex in <meta name="robots" content="noindex, nofollow, max-image-preview:large, max-snippet:-1">'
)


def page(html: str = WORDPRESS, **rules: Any) -> dict[str, seo.Finding]:
    return {f.rule: f for f in seo.judge_page(seo.PageRules(**rules), text=html, headers={}, url=URL)}


def one(
    rule: str,
    html: str,
    *,
    headers: dict[str, tuple[str, ...]] | None = None,
    url: str = URL,
    content_type: str | None = "text/html; charset=utf-8",
    truncated_at: int | None = None,
    **rules: Any,
) -> seo.Finding:
    """The finding of ``rule`` (the others off) on ``html``."""
    on = {"noindex": False, "title": False, "json_ld": False, **rules}
    if rule != "canonical":
        on[rule] = True
    found = seo.judge_page(
        seo.PageRules(**on),
        text=html,
        headers=headers or {},
        url=url,
        content_type=content_type,
        truncated_at=truncated_at,
    )
    [finding] = [f for f in found if f.rule == rule]
    return finding


def test_a_healthy_wordpress_page_holds_every_rule() -> None:
    found = page(canonical="https://shop.example", description=True)
    assert {r: f.ok for r, f in found.items()} == dict.fromkeys(
        ["noindex", "canonical", "title", "description", "json_ld"], True
    )
    assert found["title"].message == 'title "Handmade Mugs & Bowls \u2013 Shop"'  # the svg's title is not it
    assert found["canonical"].message == "canonical is https://shop.example/"


# -- noindex ----------------------------------------------------------------------------------

NOINDEX = [
    ("yoast index, follow", WORDPRESS, {}, True, "no noindex in robots meta tags or X-Robots-Tag"),
    (
        "staging noindex",
        STAGING,
        {},
        False,
        STAGING_META,
    ),
    (
        "none",
        '<meta name="ROBOTS" content="NONE">',
        {},
        False,
        '"none" (noindex, nofollow) in <meta name="ROBOTS" content="NONE">',
    ),
    (
        "googlebot only",
        '<meta name="googlebot" content="noindex">',
        {},
        False,
        'noindex in <meta name="googlebot" content="noindex">',
    ),
    ("another crawler's meta", '<meta name="bingbot" content="noindex">', {}, True, None),
    ("nofollow alone", '<meta name="robots" content="nofollow">', {}, True, None),
    ("noimageindex is not noindex", '<meta name="robots" content="noimageindex">', {}, True, None),
    (
        "header",
        "<title>x</title>",
        {"x-robots-tag": ("noindex, nofollow",)},
        False,
        "noindex in X-Robots-Tag: noindex, nofollow",
    ),
    (
        "header for googlebot",
        "",
        {"x-robots-tag": ("googlebot: noindex",)},
        False,
        "noindex in X-Robots-Tag: googlebot: noindex",
    ),
    ("header for another crawler", "", {"x-robots-tag": ("otherbot: noindex, nofollow",)}, True, None),
    (
        "header, two crawlers",
        "",
        {"x-robots-tag": ("otherbot: noindex, googlebot: none",)},
        False,
        '"none" (noindex, nofollow) in X-Robots-Tag: otherbot: noindex, googlebot: none',
    ),
    ("header with a valued directive", "", {"x-robots-tag": ("max-snippet: 20, noarchive",)}, True, None),
    (
        "unavailable_after is not a crawler",
        "",
        {"x-robots-tag": ("unavailable_after: 25 Jun 2030 15:00:00 PST", "noindex")},
        False,
        "noindex in X-Robots-Tag: unavailable_after: 25 Jun 2030 15:00:00 PST, noindex",
    ),
    (
        "both named",
        STAGING,
        {"x-robots-tag": ("noindex",)},
        False,
        STAGING_META + "; noindex in X-Robots-Tag: noindex",
    ),
]


@pytest.mark.parametrize(
    ("html", "headers", "ok", "message"), [c[1:] for c in NOINDEX], ids=[c[0] for c in NOINDEX]
)
def test_noindex(html: str, headers: dict[str, tuple[str, ...]], ok: bool, message: str | None) -> None:
    finding = one("noindex", html, headers=headers)
    assert finding.ok is ok
    if message is not None:
        assert finding.message == message


# -- canonical --------------------------------------------------------------------------------

CANONICAL = [
    (
        "the same",
        '<link rel="canonical" href="https://shop.example/mugs">',
        {},
        "https://shop.example/mugs",
        True,
        "canonical is https://shop.example/mugs",
    ),
    (
        "host case, default port and empty path",
        '<link rel="canonical" href="HTTPS://Shop.Example:443">',
        {},
        "https://shop.example/",
        True,
        "canonical is https://shop.example/",
    ),
    (
        "relative, against the page",
        '<link rel="canonical" href="/mugs?page=2#top">',
        {},
        "https://shop.example/mugs?page=2",
        True,
        None,
    ),
    (
        "relative, against <base>",
        '<base href="https://cdn.example/en/"><link rel=canonical href="mugs">',
        {},
        "https://cdn.example/en/mugs",
        True,
        None,
    ),
    (
        "rel with several tokens",
        '<link rel="alternate canonical" href="https://shop.example/">',
        {},
        "https://shop.example/",
        True,
        None,
    ),
    (
        "changed by a deploy",
        '<link rel="canonical" href="https://shop.example/x">',
        {},
        "https://shop.example/",
        False,
        "canonical is https://shop.example/x, expected https://shop.example/",
    ),
    (
        "staging host",
        '<link rel="canonical" href="https://staging.shop.example/">',
        {},
        "https://shop.example/",
        False,
        "canonical is https://staging.shop.example/, expected https://shop.example/",
    ),
    (
        "a trailing slash",
        '<link rel="canonical" href="https://shop.example/mugs/">',
        {},
        "https://shop.example/mugs",
        False,
        "canonical is https://shop.example/mugs/, expected https://shop.example/mugs "
        "(a trailing slash apart: two URLs to a crawler)",
    ),
    (
        "http, not https",
        '<link rel="canonical" href="http://shop.example/">',
        {},
        "https://shop.example/",
        False,
        "canonical is http://shop.example/, expected https://shop.example/",
    ),
    (
        "missing",
        "<title>Mugs</title>",
        {},
        "https://shop.example/",
        False,
        "no canonical (no <link rel=canonical> nor Link header), expected https://shop.example/",
    ),
    (
        "in a Link header",
        "",
        {"link": ('<https://shop.example/>; rel="canonical"',)},
        "https://shop.example/",
        True,
        None,
    ),
    (
        "Link header among others",
        "",
        {
            "link": (
                "<https://cdn.example/app.css>; rel=preload; as=style, "
                "<https://shop.example/>; rel=canonical",
            )
        },
        "https://shop.example/",
        True,
        None,
    ),
    (
        "tag and header agree",
        '<link rel="canonical" href="/">',
        {"link": ('<https://shop.example/>; rel="canonical"',)},
        "https://shop.example/",
        True,
        None,
    ),
    (
        "tag and header disagree",
        '<link rel="canonical" href="/a">',
        {"link": ('<https://shop.example/b>; rel="canonical"',)},
        "https://shop.example/a",
        False,
        "2 different canonicals, which search engines ignore: https://shop.example/a (<link rel=canonical>), "
        "https://shop.example/b (Link header)",
    ),
    (
        "not a URL",
        '<link rel="canonical" href="javascript:void(0)">',
        {},
        "https://shop.example/",
        False,
        'canonical in <link rel=canonical> is "javascript:void(0)", not an http(s) URL; expected https://shop.example/',
    ),
]


@pytest.mark.parametrize(
    ("html", "headers", "expected", "ok", "message"),
    [c[1:] for c in CANONICAL],
    ids=[c[0] for c in CANONICAL],
)
def test_canonical(
    html: str, headers: dict[str, tuple[str, ...]], expected: str, ok: bool, message: str | None
) -> None:
    finding = one("canonical", html, headers=headers, canonical=expected)
    assert finding.ok is ok, finding
    if message is not None:
        assert finding.message == message


def test_canonical_missing_from_a_cut_body_says_where_it_looked() -> None:
    finding = one("canonical", "<p>...", canonical=URL, truncated_at=1 << 20)
    assert finding.message == (
        "no canonical (no <link rel=canonical> in the first 1 MiB nor Link header), expected https://shop.example/"
    )


# -- title and description ------------------------------------------------------------------

TITLE = [
    ("wordpress", WORDPRESS, True, 'title "Handmade Mugs & Bowls \u2013 Shop"'),
    ("spaces folded", "<title>\n   Mugs\n   | Shop  </title>", True, 'title "Mugs | Shop"'),
    ("missing", "<head><meta charset=utf-8></head><body>Mugs</body>", False, "no <title>"),
    ("empty", "<title></title>", False, "<title> is empty"),
    ("only whitespace", "<title>  \n </title>", False, "<title> is empty"),
    ("only an svg title", "<body><svg><title>logo</title></svg></body>", False, "no <title>"),
    (
        "svg closed, then the page's",
        "<svg><title>logo</title></svg><title>Mugs</title>",
        True,
        'title "Mugs"',
    ),
    ("self-closed svg", "<svg/><title>Mugs</title>", True, 'title "Mugs"'),
    ("the first counts", "<title>Mugs</title><title></title>", True, 'title "Mugs"'),
    ("never closed", "<title>Mugs", True, 'title "Mugs"'),
]


@pytest.mark.parametrize(("html", "ok", "message"), [c[1:] for c in TITLE], ids=[c[0] for c in TITLE])
def test_title(html: str, ok: bool, message: str) -> None:
    assert one("title", html) == seo.Finding("title", ok, message)


DESCRIPTION = [
    ("present", WORDPRESS, True, 'description "Stoneware made in small batches."'),
    ("missing", "<title>Mugs</title>", False, 'no <meta name="description">'),
    ("empty", '<meta name="description" content="">', False, "meta description is empty"),
    ("no content", '<meta name="Description">', False, "meta description is empty"),
    (
        "og:description is not it",
        '<meta property="og:description" content="x">',
        False,
        'no <meta name="description">',
    ),
]


@pytest.mark.parametrize(
    ("html", "ok", "message"), [c[1:] for c in DESCRIPTION], ids=[c[0] for c in DESCRIPTION]
)
def test_description(html: str, ok: bool, message: str) -> None:
    assert one("description", html) == seo.Finding("description", ok, message)


def test_html_rules_are_not_judged_on_a_pdf_but_its_noindex_header_is() -> None:
    found = seo.judge_page(
        seo.PageRules(description=True),
        text="%PDF-1.7 ...",
        headers={"x-robots-tag": ("noindex",)},
        url=URL,
        content_type="application/pdf",
    )
    assert [(f.rule, f.ok) for f in found] == [
        ("noindex", False),
        ("title", True),
        ("description", True),
        ("json_ld", True),
    ]
    assert found[1].message == "not an HTML page (application/pdf): no title to judge"


# -- JSON-LD ----------------------------------------------------------------------------------

GOOD_LD = '<script type="application/ld+json">{"@context": "https://schema.org", "@type": "Product"}</script>'
JSON_LD = [
    ("none on the page", "<title>Mugs</title>", True, "no JSON-LD on the page"),
    ("one", GOOD_LD, True, "the JSON-LD block parses"),
    ("wordpress graph", WORDPRESS, True, "the JSON-LD block parses"),
    (
        "an array, type in capitals",
        '<script type="Application/LD+JSON">[{"@type": "Thing"}]</script>',
        True,
        None,
    ),
    (
        "a trailing comma",
        GOOD_LD + '<script type="application/ld+json">{"@type": "Offer", "price": 12,}</script>',
        False,
        "JSON-LD block 2 of 2 does not parse: "
        "Expecting property name enclosed in double quotes at line 1 column 32",
    ),
    (
        "a template left unrendered",
        '<script type="application/ld+json">{"price": {{ product.price }}}</script>',
        False,
        "JSON-LD block does not parse: Expecting property name enclosed in double quotes at line 1 column 12",
    ),
    ("empty", '<script type="application/ld+json">\n</script>', False, "JSON-LD block is empty"),
    (
        "a number",
        '<script type="application/ld+json">42</script>',
        False,
        "JSON-LD block is a number, not a JSON-LD object or array",
    ),
    (
        "html entities are not decoded in a script",
        '<script type="application/ld+json">{"name": "Mugs &amp; Bowls"}</script>',
        True,
        None,
    ),
    (
        "other scripts are not read",
        '<script>var x = {;</script><script type="text/javascript">{</script>',
        True,
        "no JSON-LD on the page",
    ),
    (
        "never closed",
        '<script type="application/ld+json">{"@type": "Product"',
        False,
        "JSON-LD block does not parse: "
        "Expecting ',' delimiter at line 1 column 20 (its <script> is never closed)",
    ),
]


@pytest.mark.parametrize(("html", "ok", "message"), [c[1:] for c in JSON_LD], ids=[c[0] for c in JSON_LD])
def test_json_ld(html: str, ok: bool, message: str | None) -> None:
    finding = one("json_ld", html)
    assert finding.ok is ok, finding
    if message is not None:
        assert finding.message == message


def test_a_json_ld_block_cut_by_the_body_cap_is_not_judged() -> None:
    cut = GOOD_LD + '<script type="application/ld+json">{"@type": "Prod'
    assert one("json_ld", cut, truncated_at=1 << 20) == seo.Finding(
        "json_ld", True, "1 of 2 JSON-LD blocks parse (1 cut at 1 MiB)"
    )


def test_broken_markup_never_raises() -> None:
    for html in [
        "<",
        "<!",
        "<![CDATA[",
        "</",
        "<a b='",
        "<meta name=robots content=noindex",
        "\x00<title>\ud800",
    ]:
        seo.judge_page(seo.PageRules(canonical=URL), text=html, headers={}, url=URL)


# -- the assertion ------------------------------------------------------------------------------


def observed(html: str, headers: dict[str, tuple[str, ...]] | None = None) -> Observed:
    return Observed(200, headers or {}, html.encode(), False, 1 << 20, None, 5.0, "text/html", True, URL)


def test_the_assertion_names_each_failed_rule_and_carries_every_finding() -> None:
    assertions = ASSERTIONS.validate_python(
        [{"type": "seo", "canonical": "https://shop.example/", "robots_txt": False}]
    )
    judge = Judge(assertions)
    assert judge.needs_body and judge.site is None and {"x-robots-tag", "link"} <= judge.header_names
    html = STAGING.replace('href="https://shop.example/"', 'href="https://shop.example/x"')
    [outcome] = judge.judge(observed(html, {"x-robots-tag": ("noindex, nofollow",)}))
    assert not outcome.ok
    assert outcome.assertion == "SEO: noindex, canonical https://shop.example/, title, JSON-LD"
    assert outcome.message == (
        STAGING_META + "; "
        "noindex in X-Robots-Tag: noindex, nofollow; "
        "canonical is https://shop.example/x, expected https://shop.example/"
    )
    assert outcome.details is not None
    assert [f["rule"] for f in outcome.details["seo"]["findings"]] == [
        "noindex",
        "canonical",
        "title",
        "json_ld",
    ]
    [held] = judge.judge(observed(WORDPRESS))
    assert held.ok and held.message is None and held.details is not None
    assert all(f["ok"] for f in held.details["seo"]["findings"])


def test_a_body_that_could_not_be_read_fails_it() -> None:
    judge = Judge(ASSERTIONS.validate_python([{"type": "seo", "robots_txt": False}]))
    got = Observed(
        200,
        {},
        b"",
        False,
        1 << 20,
        "cannot decode the body: unsupported Content-Encoding 'utf-8'",
        5.0,
        "text/html",
    )
    [outcome] = judge.judge(got)
    assert (outcome.ok, outcome.message) == (
        False,
        "cannot decode the body: unsupported Content-Encoding 'utf-8'",
    )


def test_robots_and_sitemap_make_the_judge_fetch_site_files() -> None:
    judge = Judge(ASSERTIONS.validate_python([{"type": "seo", "sitemap_url": "https://shop.example/s.xml"}]))
    assert judge.site is not None
    assert (judge.site.robots, judge.site.sitemap, judge.site.agents) == (True, True, ("*", "Googlebot"))
    assert judge.site.every_seconds == 600


INVALID = [
    ({"canonical": "/relative"}, "canonical"),
    ({"canonical": "ftp://shop.example/"}, "canonical"),
    ({"canonical": ""}, "canonical"),
    ({"sitemap_url": "shop.example/sitemap.xml"}, "sitemap_url"),
    ({"user_agents": []}, "user_agents"),
    ({"user_agents": ["Googlebot/2.1"]}, "user_agents"),
    ({"files_every_minutes": 0}, "files_every_minutes"),
    ({"noindex": "yes"}, "noindex"),
    ({"colour": "red"}, "colour"),
]


@pytest.mark.parametrize(("fields", "name"), INVALID, ids=[str(i[0]) for i in INVALID])
def test_invalid_settings_name_their_field(fields: dict[str, Any], name: str) -> None:
    with pytest.raises(ValidationError) as caught:
        ASSERTIONS.validate_python([{"type": "seo", **fields}])
    assert caught.value.errors()[0]["loc"][:3] == (0, "seo", name)


def test_one_seo_assertion_per_monitor_and_never_on_a_head_request() -> None:
    with pytest.raises(ValidationError, match="at most one seo assertion"):
        HttpSettings.model_validate({"url": URL, "assertions": [{"type": "seo"}, {"type": "seo"}]})
    with pytest.raises(ValidationError, match="a HEAD answer has no body for a seo assertion"):
        HttpSettings.model_validate({"url": URL, "method": "HEAD", "assertions": [{"type": "seo"}]})
