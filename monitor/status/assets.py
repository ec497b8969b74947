"""The public side's static files and ``robots.txt``, made once when the api starts.

The files (the stylesheet and the default favicon, as SVG and as ICO for the clients that ask
``/favicon.ico`` without reading the page) ship in the package's ``static/``; each is read
once, compressed once (``bodies``: brotli and gzip where it pays), and linked under a URL that
carries its content hash, so it is cached for a year and changes with a new version.

``robots.txt`` lets crawlers read the status pages (``/status/...``, a page's own domain) and
keeps them off the JSON API and the paths that carry a secret token (badges, heartbeat
pings) and the probes; with ``MONITOR_STATUS_PAGES_INDEXED=false`` it keeps them off
everything, as Uptime Kuma's "discourage search engine indexing" does.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

from monitor.status.bodies import Body, body

# Paths a crawler is kept off even while status pages may be indexed.
PRIVATE_PATHS = ("/api/", "/badge/", "/ping/", "/healthz", "/readyz", "/metrics")
# The dashboard's pages (monitor/dashboard/): people's, never a search engine's. ``/`` stays open
# (a status page's own domain), and so do ``/status/`` and the static files.
DASHBOARD_PATHS = ("/signin", "/setup", "/monitors", "/channels", "/maintenance", "/status-pages",
                   "/keys", "/members", "/profile")  # fmt: skip


@dataclass(frozen=True)
class Asset:
    path: str  # where it is served
    body: Body

    @property
    def version(self) -> str:
        return self.body.etag.strip('"')

    @property
    def url(self) -> str:
        """Its URL for this version's content: cached for a year (``immutable``)."""
        return f"{self.path}?v={self.version}"


def _load(name: str, content_type: str, path: str) -> Asset:
    content = resources.files("monitor.status").joinpath(f"static/{name}").read_bytes()
    return Asset(path, body(content, content_type, codings=("br", "gzip"), best=True))


CSS = _load("status.css", "text/css; charset=utf-8", "/static/status.css")
FAVICON_SVG = _load("favicon.svg", "image/svg+xml", "/static/favicon.svg")
# At the root, where browsers and feed readers look for a site's icon unasked.
FAVICON_ICO = _load("favicon.ico", "image/x-icon", "/favicon.ico")
ASSETS = {asset.path: asset for asset in (CSS, FAVICON_SVG, FAVICON_ICO)}


def robots_txt(indexed: bool) -> str:
    """``robots.txt``: status pages open to crawlers when ``indexed``, nothing otherwise."""
    lines = ["User-agent: *"]
    if indexed:
        lines += ["Allow: /status/", *(f"Disallow: {path}" for path in (*PRIVATE_PATHS, *DASHBOARD_PATHS))]
    else:
        lines.append("Disallow: /")
    return "\n".join(lines) + "\n"
