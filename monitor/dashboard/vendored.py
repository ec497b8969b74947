"""The vendored front-end files (htmx, uPlot) that ``make vendor`` puts in ``static/vendor/``.

``scripts/vendor.py`` writes them from the npm tarballs pinned in ``vendor.toml`` with
``VENDORED.json`` beside them: for each file its package, version, size, licence file and
SHA-384 in Subresource Integrity form, what a page puts in ``<script integrity=...>``.
``load()`` reads that index once; it never raises. A checkout where ``make vendor`` has not run
(or a package built without it) has none of them: then ``problem`` says so in one line for the
log, every lookup answers ``None``, and the pages are served without their scripts (the
dashboard reads without JavaScript).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

DIRECTORY = Path(__file__).resolve().parent / "static" / "vendor"
INDEX = "VENDORED.json"


@dataclass(frozen=True)
class Asset:
    """One vendored file."""

    name: str  # as served and stored: "htmx.min.js"
    path: Path
    package: str  # npm package: "htmx.org"
    version: str
    integrity: str  # "sha384-..."
    size: int
    license: str  # SPDX id from the manifest: "0BSD"
    license_file: str  # the licence's name beside it: "htmx.org-2.0.11-LICENSE.txt"


@dataclass(frozen=True)
class Vendored:
    directory: Path
    assets: dict[str, Asset] = field(default_factory=dict)
    # Why there are no assets (one line for a log event), or None when the index was read.
    problem: str | None = None

    def get(self, name: str) -> Asset | None:
        return self.assets.get(name)

    def integrity(self, name: str) -> str | None:
        asset = self.assets.get(name)
        return asset.integrity if asset else None

    def version(self, name: str) -> str | None:
        asset = self.assets.get(name)
        return asset.version if asset else None

    def path(self, name: str) -> Path | None:
        asset = self.assets.get(name)
        return asset.path if asset else None


def _asset(directory: Path, name: str, entry: object) -> Asset:
    if not isinstance(entry, dict):
        raise ValueError(f"{name}: not an object")
    path = directory / name
    if Path(name).name != name or not path.is_file():
        raise ValueError(f"{name} is listed but not in {directory}")
    return Asset(
        name=name,
        path=path,
        package=str(entry["package"]),
        version=str(entry["version"]),
        integrity=str(entry["integrity"]),
        size=int(entry["size"]),
        license=str(entry["license"]),
        license_file=str(entry["license_file"]),
    )


def load(directory: Path = DIRECTORY) -> Vendored:
    """The vendored files of ``directory``; none, with ``problem`` set, if any is missing."""
    index = directory / INDEX
    try:
        raw = json.loads(index.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Vendored(directory, problem=f"{index} not found: run `make vendor`")
    except (OSError, ValueError) as exc:
        return Vendored(directory, problem=f"{index} unreadable ({exc}): run `make vendor`")
    try:
        files = raw["files"]
        assets = {name: _asset(directory, name, entry) for name, entry in files.items()}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        return Vendored(directory, problem=f"{index} does not match the files ({exc}): run `make vendor`")
    return Vendored(directory, assets)
