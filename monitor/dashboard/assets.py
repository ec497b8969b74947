"""The dashboard's static files: its stylesheet and script, and the vendored libraries
(``static/vendor/``, fetched by ``scripts/vendor.py`` at build time). Each is read and
compressed once when the api starts (``monitor.status.bodies``) and linked at a URL carrying
its content hash, so a browser keeps it for a year and fetches it again only when it changes.

A vendored file that is missing (a checkout where ``make vendor`` has not run) is left out of
the pages: the dashboard still works, without its enhancements, and the api logs that once.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from importlib import resources

from monitor.status.bodies import Body, body

PREFIX = "/static/dashboard/"
TYPES = {".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".svg": "image/svg+xml"}


@dataclass(frozen=True)
class Asset:
    name: str  # its path under static/
    body: Body
    integrity: str  # Subresource Integrity: sha384 of the bytes

    @property
    def path(self) -> str:
        return PREFIX + self.name

    @property
    def version(self) -> str:
        return self.body.etag.strip('"')

    @property
    def url(self) -> str:
        return f"{self.path}?v={self.version}"


def _load(name: str) -> Asset | None:
    file = resources.files("monitor.dashboard").joinpath(f"static/{name}")
    if not file.is_file():
        return None
    content = file.read_bytes()
    suffix = name[name.rfind(".") :]
    digest = base64.b64encode(hashlib.sha384(content).digest()).decode()
    return Asset(name, body(content, TYPES[suffix], codings=("br", "gzip"), best=True), f"sha384-{digest}")


# What every page links, in order; the vendored ones when present.
OWN = ("dashboard.css", "dashboard.js", "favicon.svg", "overview.js")
VENDORED = ("vendor/htmx.min.js", "vendor/uPlot.iife.min.js", "vendor/uPlot.min.css")


def load_all() -> dict[str, Asset]:
    found = {}
    for name in (*OWN, *VENDORED):
        asset = _load(name)
        if asset is not None:
            found[name] = asset
    return found


ASSETS = load_all()
BY_PATH = {asset.path: asset for asset in ASSETS.values()}
MISSING = tuple(name for name in VENDORED if name not in ASSETS)
