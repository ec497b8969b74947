"""The site rules of the ``seo`` assertion: robots.txt lets crawlers reach the page, and the
sitemap answers with XML. Extra requests, so each is bounded and rarely made.

Cost: at most two extra GETs (robots.txt, then one sitemap) every ``files_every_minutes``
(default 10) per monitor, made at the same time as the page's own request (so the check takes
about as long as its slowest one), each through the check's SSRF-safe session (every host and
every redirect vetted), within the monitor's ``timeout_seconds`` and at most
``FILE_TIMEOUT_SECONDS``, reading at most ``ROBOTS_MAX_BYTES`` / ``SITEMAP_MAX_BYTES``. A verdict
from an answer (allowed, disallowed, 404, a sitemap that is not XML) is kept for
``files_every_minutes``: the check in between judges the kept one, with no request. A fetch that
got no answer (timeout, refused, 5xx, 429) is kept for nothing: the next check tries again, so
a blip counts once and ``confirm_after`` weighs it like any failure. The verdict is kept in the
monitor's compiled assertions (``SiteFiles``, one per monitor load): a changed monitor starts
afresh, a deleted one takes it away, and every scheduler keeps its own.

robots.txt (RFC 9309, as Google reads it), at the origin of the monitored URL, redirects
followed (up to 5): 2xx is parsed (the first 500 KiB, Google's limit) with ``protego`` (Scrapy's
parser: Google's longest-match precedence, ``*`` and ``$`` wildcards, grouped user agents;
urllib.robotparser takes the first matching rule and knows no wildcards, which misjudges common
files like ``Disallow: /*?`` or ``Allow: /$``). Its matching is linear (string finds, no regular
expression), so a hostile file cannot stall the scheduler. The page's path and query must be
allowed for every one of ``user_agents``. 4xx (404 above all) means "no robots.txt: everything
allowed", as crawlers take it; 5xx and 429 fail, because Google stops crawling a site whose
robots.txt answers so.

Sitemap: ``sitemap_url`` if given, else the first ``Sitemap:`` line of robots.txt, else
``/sitemap.xml`` at the origin. It must answer 2xx with a sitemap: XML whose root is
``urlset``, ``sitemapindex`` (an index of sitemaps is one), ``rss`` or ``feed`` (RSS and Atom
sitemaps are allowed by sitemaps.org and Google), gzip-compressed or not, or a text sitemap (one
URL a line). Only its first ``SITEMAP_MAX_BYTES`` are read and must parse as far as they go (a
sitemap may be 50 MB); a DOCTYPE or an entity declaration is refused (no sitemap needs one, and
no entity is expanded).
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from xml.parsers import expat

from protego import Protego
from yarl import URL

from monitor.checks.seo import URL_SHOWN, Finding
from monitor.checks.wording import clip, printable, size
from monitor.net.client import FetchResult, fetch

if TYPE_CHECKING:
    from monitor.checks.base import CheckContext

ROBOTS_MAX_BYTES = 500 * 1024  # what Google reads of a robots.txt
SITEMAP_MAX_BYTES = 256 * 1024
FILE_TIMEOUT_SECONDS = 10.0
SITEMAP_ROOTS = frozenset({"urlset", "sitemapindex", "rss", "feed"})


def _shown(url: str) -> str:
    return printable(clip(url, URL_SHOWN), quotes=False)


def origin(url: str) -> str:
    parsed = URL(url)
    return str(parsed.origin())


# -- robots.txt ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Robots:
    finding: Finding
    sitemaps: tuple[str, ...]  # the file's Sitemap lines
    kept: bool  # an answer: keep the verdict until the next fetch is due


def judge_robots(got: FetchResult, page_url: str, agents: Sequence[str]) -> Robots:
    """The verdict on robots.txt as ``got`` fetched it, for ``page_url`` and ``agents``."""
    status = got.status or 0
    if 400 <= status < 500 and status != 429:
        return Robots(_robots(True, f"robots.txt answered {status}: everything allowed"), (), True)
    if got.error is not None:
        return Robots(_robots(False, f"robots.txt could not be fetched: {got.error}"), (), False)
    if status == 429 or status >= 500:
        message = f"robots.txt answered {status}: Google stops crawling a site while its robots.txt does"
        return Robots(_robots(False, message), (), False)
    if not 200 <= status < 300:
        return Robots(_robots(False, f"robots.txt answered {status} after redirects"), (), False)
    parsed = Protego.parse(got.body.decode("utf-8", "replace"))
    path = URL(page_url).raw_path_qs or "/"
    denied = [agent for agent in agents if not parsed.can_fetch(page_url, agent)]
    sitemaps = tuple(parsed.sitemaps)
    if denied:
        message = f"robots.txt disallows {_shown(path)} for {', '.join(denied)}"
        return Robots(_robots(False, message), sitemaps, True)
    message = f"robots.txt allows {_shown(path)} for {', '.join(agents)}"
    return Robots(_robots(True, message), sitemaps, True)


def _robots(ok: bool, message: str) -> Finding:
    return Finding("robots_txt", ok, message)


# -- sitemap ------------------------------------------------------------------------------------


class _NotAllowed(Exception):
    pass


def _refuse(*_: Any) -> None:
    raise _NotAllowed


def sitemap_problem(data: bytes, *, complete: bool, content_type: str | None) -> tuple[str | None, str]:
    """(what is wrong with a sitemap's ``data`` or None, what it is); ``complete``: ``data`` is
    the whole file, not its first bytes."""
    if data[:2] == b"\x1f\x8b":  # sitemap.xml.gz, served as a file rather than encoded
        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            data = inflate.decompress(data, SITEMAP_MAX_BYTES)
        except zlib.error:
            return "is not valid gzip", "gzip"
        complete = complete and inflate.eof
    if not data.strip():
        return "is empty", "empty"
    media = (content_type or "").split(";")[0].strip().lower()
    if media == "text/plain" and data.lstrip()[:4].lower() == b"http":
        return None, "a text sitemap"
    if data.lstrip()[:14].lower() in (b"<!doctype html", b"<html>") or data.lstrip()[:6].lower() == b"<html ":
        return "is an HTML page, not a sitemap", "HTML"  # a shop's "not found" page, served as 200
    roots: list[str] = []
    parser = expat.ParserCreate()
    parser.StartElementHandler = lambda name, attrs: roots.append(name) if not roots else None
    parser.StartDoctypeDeclHandler = _refuse
    parser.EntityDeclHandler = _refuse
    try:
        parser.Parse(data, complete)
    except _NotAllowed:
        return "declares a DOCTYPE or an entity, which no sitemap needs", "XML"
    except expat.ExpatError as exc:
        return (
            f"is not XML: {expat.errors.messages[exc.code]} at line {exc.lineno} column {exc.offset}",
            "XML",
        )
    if not roots:
        return (
            "has no root element" if complete else f"has no root element in its first {size(len(data))}"
        ), "XML"
    root = roots[0].rsplit(":", 1)[-1]
    if root not in SITEMAP_ROOTS:
        return f"is XML but not a sitemap: its root element is <{printable(clip(root, 40))}>", "XML"
    return None, "a sitemap index" if root == "sitemapindex" else f"<{root}>"


def judge_sitemap(got: FetchResult, url: str) -> tuple[Finding, bool]:
    """(the verdict on the sitemap at ``url`` as ``got`` fetched it, whether to keep it)."""
    shown = _shown(url)
    if got.error is not None:
        return Finding("sitemap", False, f"sitemap {shown} could not be fetched: {got.error}"), False
    status = got.status or 0
    if not 200 <= status < 300:
        return Finding("sitemap", False, f"sitemap {shown} answered {status}"), 400 <= status < 500
    problem, kind = sitemap_problem(got.body, complete=not got.truncated, content_type=got.content_type)
    if problem is not None:
        return Finding("sitemap", False, f"sitemap {shown} {problem}"), True
    return Finding("sitemap", True, f"sitemap {shown} is {kind} ({size(len(got.body))} read)"), True


# -- the fetches and the kept verdict -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SiteReport:
    findings: tuple[Finding, ...]
    checked_at: datetime  # when the files were fetched (the kept verdict is from then)


class SiteFiles:
    """The site rules of one monitor's seo assertion, and their kept verdict."""

    __slots__ = ("_clock", "_kept", "agents", "every_seconds", "robots", "sitemap", "sitemap_url")

    def __init__(
        self,
        *,
        robots: bool,
        agents: Sequence[str],
        sitemap: bool,
        sitemap_url: str | None,
        every_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.robots = robots
        self.agents = tuple(agents)
        self.sitemap = sitemap or sitemap_url is not None
        self.sitemap_url = sitemap_url
        self.every_seconds = every_seconds
        self._clock = clock
        self._kept: tuple[float, SiteReport] | None = None

    def kept(self) -> SiteReport | None:
        """The verdict still current, if one is: no request needed."""
        if self._kept is not None and self._clock() < self._kept[0]:
            return self._kept[1]
        return None

    async def report(
        self, ctx: CheckContext, page_url: str, *, seconds: float, tls_verify: bool
    ) -> SiteReport:
        """Fetch what the rules need, judge it, and keep the verdict if it came from answers."""
        kept = self.kept()
        if kept is not None:
            return kept
        started = self._clock()
        budget = min(seconds, FILE_TIMEOUT_SECONDS)

        async def get(url: str, cap: int, seconds: float) -> FetchResult:
            return await fetch(
                ctx.session,
                ctx.policy,
                url,
                timeout=seconds,
                follow_redirects=True,
                max_body_bytes=cap,
                tls_verify=tls_verify,
            )

        findings: list[Finding] = []
        keep = True
        base = origin(page_url)
        sitemap_url = self.sitemap_url
        if self.robots or (self.sitemap and sitemap_url is None):
            robots = judge_robots(
                await get(base + "/robots.txt", ROBOTS_MAX_BYTES, budget), page_url, self.agents
            )
            keep = robots.kept
            if self.robots:
                findings.append(robots.finding)
            if self.sitemap and sitemap_url is None:
                if robots.kept:
                    sitemap_url = robots.sitemaps[0] if robots.sitemaps else base + "/sitemap.xml"
                elif not self.robots:  # else its finding says it already
                    findings.append(Finding("sitemap", False, f"sitemap unknown: {robots.finding.message}"))
        if self.sitemap and sitemap_url is not None:
            left = max(budget - (self._clock() - started), 0.1)
            finding, kept_sitemap = judge_sitemap(
                await get(sitemap_url, SITEMAP_MAX_BYTES, left), sitemap_url
            )
            findings.append(finding)
            keep = keep and kept_sitemap
        report = SiteReport(tuple(findings), datetime.now(UTC))
        self._kept = (started + self.every_seconds, report) if keep else None
        return report
