"""The Markdown of incident posts (``monitor/markdown.py``): what a post may format, and hostile
input made harmless, each layer alone (markdown-it's output cleaned by nh3, and nh3 given raw
hostile HTML directly, as if the first layer let it through)."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from monitor import markdown

REL = 'rel="nofollow noopener"'

SHOWN: list[tuple[str, str, str]] = [
    # name, Markdown, HTML
    ("a paragraph", "Hello", "<p>Hello</p>\n"),
    ("emphasis", "*a* **b** `c`", "<p><em>a</em> <strong>b</strong> <code>c</code></p>\n"),
    ("a list", "- a\n- b", "<ul>\n<li>a</li>\n<li>b</li>\n</ul>\n"),
    ("a numbered list", "1. a\n2. b", "<ol>\n<li>a</li>\n<li>b</li>\n</ol>\n"),
    ("a quote", "> q", "<blockquote>\n<p>q</p>\n</blockquote>\n"),
    ("code", "```\nx < y\n```", "<pre><code>x &lt; y\n</code></pre>\n"),
    ("a heading moves down two levels", "# Outage", "<h3>Outage</h3>\n"),
    ("a deep heading stops at h6", "##### Deep", "<h6>Deep</h6>\n"),
    ("a rule", "a\n\n---", "<p>a</p>\n<hr>\n"),
    ("a hard break", "a  \nb", "<p>a<br>\nb</p>\n"),
    (
        "an https link",
        "[fix](https://example.com/a?b=1)",
        f'<p><a href="https://example.com/a?b=1" {REL}>fix</a></p>\n',
    ),
    (
        "a mailto link",
        "[us](mailto:ops@example.com)",
        f'<p><a href="mailto:ops@example.com" {REL}>us</a></p>\n',
    ),
    (
        "an autolink",
        "<https://example.com>",
        f'<p><a href="https://example.com" {REL}>https://example.com</a></p>\n',
    ),
]

HOSTILE: list[tuple[str, str]] = [
    # name, Markdown
    ("a script tag", "<script>alert(1)</script>"),
    ("a script block", "<script>\nalert(1)\n</script>\n\ntext"),
    ("a style tag", "<style>body{display:none}</style>"),
    ("an image with onerror", "<img src=x onerror=alert(1)>"),
    ("a Markdown image", "![x](https://evil.example/track.png)"),
    ("a Markdown image of a script", "![x](javascript:alert(1))"),
    ("a javascript: link", "[x](javascript:alert(1))"),
    ("a javascript: link in capitals", "[x](JaVaScRiPt:alert(1))"),
    ("a javascript: link with an entity", "[x](jav&#x61;script:alert(1))"),
    ("a javascript: link with a tab", "[x](java\tscript:alert(1))"),
    ("a javascript: autolink", "<javascript:alert(1)>"),
    ("a vbscript: link", "[x](vbscript:msgbox(1))"),
    ("a data: link", "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)"),
    ("a reference javascript: link", "[x][1]\n\n[1]: javascript:alert(1)"),
    ("a raw link with onclick", '<a href="https://e.com" onclick="steal()">x</a>'),
    ("an iframe", '<iframe src="https://evil.example"></iframe>'),
    ("an svg with onload", "<svg onload=alert(1)>"),
    ("a comment", "<!-- <script>alert(1)</script> -->"),
    ("a link title breaking out", '[x](https://e.com "a\\" onmouseover=\\"alert(1)")'),
    ("a nested trick", "<scr<script>ipt>alert(1)</scr</script>ipt>"),
    ("an html entity script", "&lt;script&gt;alert(1)&lt;/script&gt;"),
    ("a code span with a tag", "`<img src=x onerror=alert(1)>`"),
    ("a style attribute", '<p style="position:fixed">x</p>'),
    ("a form", '<form action="https://evil.example"><input name=p></form>'),
    ("a meta refresh", '<meta http-equiv="refresh" content="0;url=https://evil.example">'),
    ("a base tag", '<base href="https://evil.example/">'),
    ("an object", '<object data="https://evil.example/x.swf"></object>'),
]

RAW: list[tuple[str, str]] = [
    # name, HTML handed to the second layer alone
    ("a script", "<p>a</p><script>alert(1)</script>"),
    ("an image", '<img src="https://evil.example/t.png">'),
    ("an event handler", '<a href="https://e.com" onclick="x()">a</a>'),
    ("a javascript: href", '<a href="javascript:alert(1)">a</a>'),
    ("a javascript: href with spaces", '<a href=" javascript:alert(1)">a</a>'),
    ("a data: href", '<a href="data:text/html,x">a</a>'),
    ("a relative href", '<a href="/admin">a</a>'),
    ("a protocol-relative href", '<a href="//evil.example">a</a>'),
    ("a style attribute", '<p style="color:red" class="x" id="y">a</p>'),
    ("a style element", "<style>*{}</style><p>a</p>"),
    ("an h1", "<h1>big</h1>"),
    ("a table", "<table><tr><td>x</td></tr></table>"),
    ("a rel of its own", '<a href="https://e.com" rel="opener">a</a>'),
    ("a target", '<a href="https://e.com" target="_blank">a</a>'),
]


class _Tags(HTMLParser):
    """Every element and its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, dict(attrs)))


def elements(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Tags()
    parser.feed(html)
    parser.close()
    return parser.found


def assert_harmless(html: str) -> None:
    for tag, attrs in elements(html):
        assert tag in markdown.TAGS, (tag, html)
        allowed = {"href", "rel"} if tag == "a" else set()
        assert set(attrs) <= allowed, (tag, attrs, html)
        if tag == "a":
            assert attrs["rel"] == "nofollow noopener", html
            href = attrs.get("href")
            assert href is None or href.startswith(markdown.PREFIXES), html


@pytest.mark.parametrize(("text", "html"), [r[1:] for r in SHOWN], ids=[r[0] for r in SHOWN])
def test_what_a_post_may_format(text: str, html: str) -> None:
    assert markdown.render(text) == html
    assert_harmless(html)


@pytest.mark.parametrize("text", [r[1] for r in HOSTILE], ids=[r[0] for r in HOSTILE])
def test_hostile_markdown_is_harmless(text: str) -> None:
    html = markdown.render(text)
    assert_harmless(html)
    # The first layer alone already writes no raw HTML: a tag in the text is text.
    assert_harmless(markdown.clean(markdown.unsafe_html(text)))
    for tag, _ in elements(markdown.unsafe_html(text)):
        assert tag not in ("script", "style", "img", "iframe", "svg", "form", "meta", "base", "object"), text


@pytest.mark.parametrize("html", [r[1] for r in RAW], ids=[r[0] for r in RAW])
def test_the_sanitiser_alone_keeps_only_the_allowed(html: str) -> None:
    cleaned = markdown.clean(html)
    assert_harmless(cleaned)
    assert "alert" not in cleaned and "*{}" not in cleaned


def test_raw_html_is_text_and_a_link_without_an_allowed_address_keeps_its_text() -> None:
    assert markdown.render("<b>hi</b>") == "<p>&lt;b&gt;hi&lt;/b&gt;</p>\n"
    assert markdown.clean('<a href="/admin">admin</a>') == f"<a {REL}>admin</a>"
    assert markdown.clean("<h1>big</h1>") == "big"


@pytest.mark.parametrize(
    ("stored", "renderer", "expected"),
    [
        ("<p>kept</p>", markdown.RENDERER, "<p>kept</p>"),
        ("<p>old <script>x</script></p>", markdown.RENDERER - 1, "<p><em>new</em></p>\n"),
        (None, None, "<p><em>new</em></p>\n"),
    ],
    ids=["made by these rules: kept", "made by older rules: made again", "none stored: made now"],
)
def test_stored_html_is_used_only_when_these_rules_made_it(
    stored: str | None, renderer: int | None, expected: str
) -> None:
    assert markdown.html_of("*new*", stored, renderer) == expected
