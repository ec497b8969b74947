"""The page rules of the ``seo`` assertion (issue 30, point 3): the outages that cost search
traffic while visitors see nothing wrong, read from the page's HTML and headers.

Pure: the response (headers, decoded text, final URL) in, one :class:`Finding` per rule the
monitor asked for out. robots.txt and the sitemap are other requests, judged in
``checks/seo_site.py``; the assertion (``assertions.Seo``) joins both.

The rules, and the real-world cases that decided them:

- **noindex**: ``noindex`` or ``none`` in ``<meta name="robots">`` or ``<meta name="googlebot">``
  (names and tokens in any case, comma-separated), or in an ``X-Robots-Tag`` header. An
  X-Robots-Tag value may name the crawler it is for (``otherbot: noindex, nofollow``): one
  for another crawler does not count, one for googlebot does. Meta tags count wherever they
  are in the document (Google reads them in the body too). A page that is noindex on purpose
  is down only when its monitor keeps this rule on (``noindex: false`` turns it off).
- **canonical** (only when the monitor gives the expected URL): ``<link rel="canonical">``
  (resolved against ``<base href>`` and the page's final URL, as relative ones are) and a
  ``Link: <...>; rel="canonical"`` header. Missing, different, or several that disagree (Google
  then ignores them all) is a failure. URLs compare after normalising what does not change the
  resource: scheme and host case, a default port, an empty path (``https://a`` is
  ``https://a/``), the fragment. A trailing slash is *not* normalised: ``/shop`` and
  ``/shop/`` are two URLs to a crawler (and often two answers), so they differ, and the
  message says that the slash is the only difference.
- **title**: the document's title is its first ``<title>`` outside ``<svg>`` and ``<math>``
  (an inline SVG's title labels the drawing, not the page); missing or only whitespace fails.
- **description**: ``<meta name="description">`` missing, or its content empty (off by default:
  many good pages let the search engine write the snippet).
- **JSON-LD**: every ``<script type="application/ld+json">`` block must parse as JSON and be an
  object or an array (what Search Console reports as "unparsable structured data"). A page
  without any block is fine; a block cut off by ``max_body_bytes`` is not judged.

Rules about the HTML (all but noindex's header and canonical's Link header) are not judged on
an answer whose Content-Type is not HTML (a PDF has no title): their findings say so and hold.

HTML is read with the standard library's ``html.parser``, and JSON-LD blocks with ``json``,
rather than with ``extruct``: extruct brings lxml (a C library, about 9 MB), w3lib, rdflib,
mf2py and pyrdfa3 to tell whether a few script blocks parse, and would parse microdata and
RDFa that no rule reads. html.parser is lenient as browsers are (it never refuses a page),
keeps ``<script>`` content raw, and reads a page at about 5 MB/s (0.22 s for a 1 MiB page of
12,000 blocks on this machine), so the check judges a page over ``http.HTML_INLINE_BYTES``
(32 KiB, ~7 ms) beside the event loop.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from yarl import URL

from monitor.checks.wording import clip, printable, quote, size

# The response headers the rules read (the check keeps only those it is asked for).
HEADER_NAMES = frozenset({"x-robots-tag", "link"})
ROBOTS_META = ("robots", "googlebot")
_NOINDEX = ("noindex", "none")
# X-Robots-Tag directives written ``name: value``: their name is no crawler's.
_VALUED = frozenset({"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"})
_FOREIGN = frozenset({"svg", "math"})  # a <title> inside these is not the page's
_HTML_TYPES = ("text/html", "application/xhtml+xml")
_LINK = re.compile(r"<([^>]*)>((?:\s*;\s*[^;,]*)*)")
_REL = re.compile(r';\s*rel\s*=\s*(?:"([^"]*)"|([^;,\s]*))', re.IGNORECASE)
URL_SHOWN = 120


@dataclass(frozen=True, slots=True)
class Finding:
    rule: str  # noindex, canonical, title, description, json_ld, robots_txt, sitemap
    ok: bool
    message: str  # what was found, in words an operator can act on

    def as_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "ok": self.ok, "message": self.message}


@dataclass(frozen=True, slots=True)
class PageRules:
    """Which page rules a monitor asked for (``assertions.Seo``'s fields)."""

    noindex: bool = True
    canonical: str | None = None
    title: bool = True
    description: bool = False
    json_ld: bool = True


@dataclass(slots=True)
class Page:
    """What the rules read of a page's HTML."""

    robots: list[tuple[str, str]] = field(default_factory=list)  # (meta name as written, content)
    title: str | None = None
    description: str | None = None
    canonicals: list[str] = field(default_factory=list)  # hrefs as written
    base: str | None = None
    json_ld: list[tuple[str, bool]] = field(default_factory=list)  # (text, closed)


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = Page()
        self._foreign = 0
        self._title: list[str] | None = None
        self._script: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _FOREIGN:
            self._foreign += 1
        a = {k: v or "" for k, v in reversed(attrs)}  # the first of a repeated attribute wins
        page = self.page
        if tag == "meta":
            name = a.get("name", "").strip()
            if name.lower() in ROBOTS_META:
                page.robots.append((name, a.get("content", "")))
            elif name.lower() == "description" and page.description is None:
                page.description = a.get("content", "")
        elif tag == "link" and "canonical" in a.get("rel", "").lower().split():
            page.canonicals.append(a.get("href", "").strip())
        elif tag == "base" and page.base is None and "href" in a:
            page.base = a["href"].strip()
        elif tag == "title" and page.title is None and self._foreign == 0 and self._title is None:
            self._title = []
        elif tag == "script":
            kind = a.get("type", "").split(";")[0].strip().lower()
            self._script = [] if kind == "application/ld+json" else None

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        # <svg/> opens nothing; <meta/> and <link/> are read as their start tag.
        if tag not in _FOREIGN:
            self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag in _FOREIGN and self._foreign:
            self._foreign -= 1
        elif tag == "title" and self._title is not None:
            self.page.title = "".join(self._title)
            self._title = None
        elif tag == "script" and self._script is not None:
            self.page.json_ld.append(("".join(self._script), True))
            self._script = None

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self._script.append(data)
        elif self._title is not None:
            self._title.append(data)

    def finish(self) -> Page:
        self.close()
        if self._script is not None:  # never closed: html.parser keeps its content unread
            self.page.json_ld.append(("".join(self._script) + self.rawdata, False))
        if self._title is not None:
            self.page.title = "".join(self._title)
        return self.page


def read_page(text: str) -> Page:
    """What the rules read of the HTML ``text``; never raises for anything a page holds."""
    reader = _Reader()
    try:
        reader.feed(text)
        return reader.finish()
    except (AssertionError, ValueError, IndexError):  # html.parser's own limits on broken markup
        return reader.page


def is_html(content_type: str | None) -> bool:
    """Whether the HTML rules apply: an HTML media type, or none given (browsers sniff)."""
    if not content_type:
        return True
    return content_type.split(";")[0].strip().lower() in _HTML_TYPES


def judge_page(
    rules: PageRules,
    *,
    text: str,
    headers: Mapping[str, Sequence[str]],
    url: str,
    content_type: str | None = None,
    truncated_at: int | None = None,
) -> list[Finding]:
    """The findings of ``rules`` on a page: its decoded ``text``, its response ``headers``
    (lower-case names, every value), its final ``url``; ``truncated_at``: the body was cut
    there (``max_body_bytes``)."""
    html = is_html(content_type)
    page = read_page(text) if html else Page()
    where = f" in the first {size(truncated_at)}" if truncated_at is not None else ""
    skipped = f"not an HTML page ({printable(clip(content_type or ''), quotes=False)})"
    found: list[Finding] = []
    if rules.noindex:
        found.append(_noindex(page, headers.get("x-robots-tag", ())))
    if rules.canonical is not None:
        found.append(_canonical(rules.canonical, page, headers.get("link", ()), url, where))
    if rules.title:
        found.append(_title(page, where) if html else Finding("title", True, f"{skipped}: no title to judge"))
    if rules.description:
        message = f"{skipped}: no description to judge"
        found.append(_description(page, where) if html else Finding("description", True, message))
    if rules.json_ld:
        message = f"{skipped}: no JSON-LD to judge"
        found.append(_json_ld(page, truncated_at) if html else Finding("json_ld", True, message))
    return found


# -- noindex ----------------------------------------------------------------------------------


def _tokens(content: str) -> list[str]:
    return [t.strip().lower() for t in content.split(",") if t.strip()]


def robots_tag_tokens(values: Sequence[str]) -> list[str]:
    """The X-Robots-Tag directives meant for every crawler or for googlebot (lower case)."""
    out: list[str] = []
    for value in values:
        agent: str | None = None  # a value's directives are for all until one names a crawler
        for part in value.split(","):
            head, colon, rest = part.partition(":")
            name = head.strip().lower()
            if colon and name not in _VALUED and " " not in name and name:
                agent, part = name, rest
            token = part.strip().lower()
            if token and (agent is None or agent == "googlebot"):
                out.append(token)
    return out


def _noindex(page: Page, robots_tag: Sequence[str]) -> Finding:
    hits = []
    for name, content in page.robots:
        token = next((t for t in _tokens(content) if t in _NOINDEX), None)
        if token is not None:
            tag = f'<meta name="{printable(clip(name, 20))}" content="{printable(clip(content))}">'
            hits.append(f"{_token(token)} in {tag}")
    tokens = robots_tag_tokens(robots_tag)
    token = next((t for t in tokens if t in _NOINDEX), None)
    if token is not None:
        hits.append(f"{_token(token)} in X-Robots-Tag: {printable(clip(', '.join(robots_tag)))}")
    if hits:
        return Finding("noindex", False, "; ".join(hits))
    return Finding("noindex", True, "no noindex in robots meta tags or X-Robots-Tag")


def _token(token: str) -> str:
    return "noindex" if token == "noindex" else '"none" (noindex, nofollow)'


# -- canonical --------------------------------------------------------------------------------


def normal_url(text: str, base: str | None = None) -> str | None:
    """``text`` (resolved against ``base``) as compared: scheme and host in lower case, no
    default port, ``/`` for an empty path, no fragment; None if it is no http(s) URL."""
    try:
        url = URL(text.strip())
        if base is not None and not url.is_absolute():
            url = URL(base).join(url)
    except (ValueError, TypeError):
        return None
    if url.scheme not in ("http", "https") or not url.host:
        return None
    default = 443 if url.scheme == "https" else 80
    port = "" if url.explicit_port in (None, default) else f":{url.explicit_port}"
    path = url.raw_path or "/"
    query = f"?{url.raw_query_string}" if url.raw_query_string else ""
    return f"{url.scheme}://{url.raw_host}{port}{path}{query}"


def link_canonicals(values: Sequence[str]) -> list[str]:
    """The targets of the ``rel=canonical`` links of Link header values (RFC 8288)."""
    out = []
    for value in values:
        for match in _LINK.finditer(value):
            for rel in _REL.finditer(match.group(2)):
                if "canonical" in (rel.group(1) or rel.group(2) or "").lower().split():
                    out.append(match.group(1).strip())
    return out


def _shown(url: str) -> str:
    return printable(clip(url, URL_SHOWN), quotes=False)


def _canonical(expected: str, page: Page, link: Sequence[str], url: str, where: str) -> Finding:
    base = normal_url(page.base, url) if page.base else None
    found = [(href, "<link rel=canonical>", base or url) for href in page.canonicals]
    found += [(href, "Link header", url) for href in link_canonicals(link)]
    want = normal_url(expected) or expected
    expect = f"expected {_shown(want)}"
    if not found:
        return _off(f"no canonical (no <link rel=canonical>{where} nor Link header), {expect}")
    seen: dict[str, str] = {}
    for href, source, against in found:
        normal = normal_url(href, against)
        if normal is None:
            return _off(f"canonical in {source} is {quote(href)}, not an http(s) URL; {expect}")
        seen.setdefault(normal, source)
    if len(seen) > 1:
        listed = ", ".join(f"{_shown(u)} ({s})" for u, s in seen.items())
        return _off(f"{len(seen)} different canonicals, which search engines ignore: {listed}")
    [got] = seen
    if got == want:
        return Finding("canonical", True, f"canonical is {_shown(got)}")
    slash = " (a trailing slash apart: two URLs to a crawler)" if got.rstrip("/") == want.rstrip("/") else ""
    return _off(f"canonical is {_shown(got)}, {expect}{slash}")


def _off(message: str) -> Finding:
    return Finding("canonical", False, message)


# -- title, description, JSON-LD --------------------------------------------------------------


def _title(page: Page, where: str) -> Finding:
    if page.title is None:
        return Finding("title", False, f"no <title>{where}")
    title = " ".join(page.title.split())
    if not title:
        return Finding("title", False, "<title> is empty")
    return Finding("title", True, f"title {quote(title)}")


def _description(page: Page, where: str) -> Finding:
    if page.description is None:
        return Finding("description", False, f'no <meta name="description">{where}')
    text = " ".join(page.description.split())
    if not text:
        return Finding("description", False, "meta description is empty")
    return Finding("description", True, f"description {quote(text)}")


def _json_ld(page: Page, truncated_at: int | None) -> Finding:
    blocks = page.json_ld
    count = len(blocks)
    if not count:
        return Finding("json_ld", True, "no JSON-LD on the page")
    problems = []
    for n, (text, closed) in enumerate(blocks, 1):
        which = f"JSON-LD block {n} of {count}" if count > 1 else "JSON-LD block"
        if not closed and truncated_at is not None:
            continue  # cut by max_body_bytes: what is missing is ours to not have read
        problem = _json_ld_problem(text, closed)
        if problem is not None:
            problems.append(f"{which} {problem}")
    if problems:
        return Finding("json_ld", False, "; ".join(problems))
    judged = sum(closed or truncated_at is None for _, closed in blocks)
    if truncated_at is not None and judged < count:
        cut = f"{judged} of {count} JSON-LD blocks parse ({count - judged} cut at {size(truncated_at)})"
        return Finding("json_ld", True, cut)
    return Finding("json_ld", True, _parse(count))


def _parse(count: int) -> str:
    return "the JSON-LD block parses" if count == 1 else f"all {count} JSON-LD blocks parse"


def _json_ld_problem(text: str, closed: bool) -> str | None:
    if not text.strip():
        return "is empty"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        unclosed = " (its <script> is never closed)" if not closed else ""
        return f"does not parse: {exc.msg} at line {exc.lineno} column {exc.colno}{unclosed}"
    except (ValueError, RecursionError):
        return "does not parse: nested too deeply"
    if not isinstance(value, dict | list):
        kind = {str: "a string", bool: "a boolean", type(None): "null"}.get(type(value), "a number")
        return f"is {kind}, not a JSON-LD object or array"
    return None
