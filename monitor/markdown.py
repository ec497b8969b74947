"""Markdown of incident posts as HTML that is safe on a public page.

A post's text is written by the page's editors but read by anyone, on a page whose origin the
customers trust: nothing in it may run, load or restyle anything. Two layers, each enough on
its own for what it covers:

1. markdown-it-py (CommonMark) with raw HTML off (``html=False``: ``<script>`` in the text is
   text), images off (no request to elsewhere from a visitor's browser) and its link check
   (no ``javascript:``, ``vbscript:``, ``file:``, ``data:``). Headings are moved down two
   levels (``#`` is an ``h3``): the page's own headings keep their order.
2. nh3 (ammonia) cleans what came out against a short allow-list: the tags of ``TAGS``, no
   attribute but an ``a``'s ``href`` (absolute ``http:``, ``https:`` or ``mailto:`` only; any
   other link keeps its text and loses its address) and ``rel="nofollow noopener"`` set on
   every link; no ``style``, no event handler, no ``class``, no comment.

Rendering costs about a millisecond per update (markdown-it is pure Python): an update's HTML
is made once, when it is written, and stored with ``RENDERER``; a stored HTML of another
version is made again when read (``html_of``), so a change of these rules reaches every post.
"""

from __future__ import annotations

import functools

import nh3
from markdown_it import MarkdownIt
from markdown_it.token import Token

TAGS = frozenset(
    {"p", "em", "strong", "code", "pre", "ul", "ol", "li", "a", "blockquote", "h3", "h4", "h5", "h6"}
    | {"br", "hr"}
)
# The links a post may hold: absolute web addresses and mail addresses.
PREFIXES = ("https://", "http://", "mailto:")
SCHEMES = frozenset(p.split(":")[0] for p in PREFIXES)
REL = "nofollow noopener"
# A post's text is at most this long (the schema's limit); longer input is refused there.
MAX_TEXT = 20_000
# Headings move down this many levels (an "# Outage" is an h3 under the page's h2).
HEADING_SHIFT = 2
# The version of these rules, stored with each HTML made by them: bump it with any change of
# what ``render`` makes, and stored HTML of the version before is made again when read.
RENDERER = 1


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.disable(["image", "html_block", "html_inline"])
    return md


_MD = _parser()


def _shift_headings(tokens: list[Token]) -> None:
    for token in tokens:
        if token.type in ("heading_open", "heading_close"):
            level = min(6, int(token.tag[1]) + HEADING_SHIFT)
            token.tag = f"h{level}"


def _href(tag: str, attribute: str, value: str) -> str | None:
    """nh3's attribute filter: an ``a`` keeps an absolute http(s) or mailto ``href`` and the
    ``rel`` nh3 sets; nothing else keeps any attribute (not even the ``title`` and ``lang``
    nh3 lets every element have)."""
    if tag == "a" and attribute == "href":
        return value if value.strip().lower().startswith(PREFIXES) else None
    if tag == "a" and attribute == "rel":
        return value
    return None


def unsafe_html(text: str) -> str:
    """markdown-it's HTML of ``text``, before cleaning (for tests of the second layer)."""
    tokens = _MD.parse(text)
    _shift_headings(tokens)
    return str(_MD.renderer.render(tokens, _MD.options, {}))


def clean(html: str) -> str:
    """``html`` with only what ``TAGS`` allows left (the text of anything else kept, escaped;
    the content of ``script`` and ``style`` dropped)."""
    return nh3.clean(
        html,
        tags=set(TAGS),
        clean_content_tags={"script", "style"},
        attributes={"a": {"href"}},
        attribute_filter=_href,
        url_schemes=set(SCHEMES),
        link_rel=REL,
        strip_comments=True,
    )


@functools.lru_cache(maxsize=4096)
def render(text: str) -> str:
    """The safe HTML of a post's Markdown ``text``."""
    return clean(unsafe_html(text))


def html_of(text: str, stored: str | None, renderer: int | None) -> str:
    """The HTML of ``text``: ``stored`` when these rules made it (``renderer``), else made now."""
    return stored if stored is not None and renderer == RENDERER else render(text)
