"""The dashboard's static files: its stylesheet and script, and the vendored libraries
(``static/vendor/``, fetched by ``scripts/vendor.py`` at build time). Each is read and
compressed once when the api starts (``monitor.status.bodies``) and linked at a URL carrying
its content hash, so a browser keeps it for a year and fetches it again only when it changes.

A vendored file that is missing (a checkout where ``make vendor`` has not run), or whose bytes
no longer match the SHA-384 ``make vendor`` recorded, is left out of the pages: the dashboard
still works, without its enhancements, and the api logs why once.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from importlib import resources

from monitor.dashboard import vendored
from monitor.status import assets as status_assets
from monitor.status.bodies import body

PREFIX = "/static/dashboard/"
TYPES = {
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
    ".txt": "text/plain; charset=utf-8",  # the vendored libraries' licences, served beside them
}


@dataclass(frozen=True)
class Asset(status_assets.Asset):
    """A static file as the public side serves one (its path, its body, its versioned URL), with
    its name under static/ and its Subresource Integrity (sha384 of the bytes)."""

    name: str = ""
    integrity: str = ""


def _asset(name: str, content: bytes) -> Asset:
    suffix = name[name.rfind(".") :]
    digest = base64.b64encode(hashlib.sha384(content).digest()).decode()
    made = body(content, TYPES[suffix], codings=("br", "gzip"), best=True)
    return Asset(PREFIX + name, made, name=name, integrity=f"sha384-{digest}")


# The dashboard's own files (static/), and the vendored ones (static/vendor/, by VENDORED.json).
OWN = ("dashboard.css", "dashboard.js", "favicon.svg", "chart.js", "monitor_forms.js", "overview.js")


def load_all() -> tuple[dict[str, Asset], str | None]:
    """Every static file by its name under static/ (``vendor/htmx.min.js``), and why the
    vendored ones are missing, if they are."""
    package = resources.files("monitor.dashboard")
    found = {name: _asset(name, package.joinpath(f"static/{name}").read_bytes()) for name in OWN}
    libraries = vendored.load()
    for name, lib in libraries.assets.items():
        asset = _asset(f"vendor/{name}", lib.path.read_bytes())
        if asset.integrity != lib.integrity:  # changed since `make vendor` checked it
            return found, f"{lib.path} does not match VENDORED.json: run `make vendor`"
        found[asset.name] = asset
    return found, libraries.problem


ASSETS, MISSING = load_all()
BY_PATH = {asset.path: asset for asset in ASSETS.values()}
