#!/usr/bin/env python3
"""Vendor the dashboard's front-end libraries from the npm registry (``make vendor``).

``monitor/dashboard/vendor.toml`` pins each package: its version, the SHA-512 of its tarball
(the registry's ``dist.integrity``), the files to take from it and its licence file. For each
section of the manifest this script:

1. gets every tarball, from the cache (``~/.cache/monitor-vendor``) or else from the registry
   that npm uses (``npm config get registry``; https://registry.npmjs.org/ without npm);
2. refuses any tarball whose SHA-512 is not the pinned one, *before* reading anything from it:
   a cached one is dropped and fetched again, a fetched one ends the run with status 1 and
   nothing written;
3. writes the named files, flat, and each licence as ``NAME-VERSION-LICENSE.txt`` into a new
   folder, then puts it in place of the old one whole, with ``VENDORED.json`` listing every
   file with its SHA-384 in SRI form (what a ``<script integrity=...>`` attribute holds).

A section whose ``VENDORED.json`` already matches the manifest, with every file on disk
hashing as listed, is left alone without any network, so ``make vendor`` costs a few
milliseconds once done. ``--check`` only says whether that is so (status 1 if not).

Standard library only: it runs before anything is installed, with the venv's python.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MANIFEST = REPO / "monitor" / "dashboard" / "vendor.toml"
# Section of the manifest -> the folder it is vendored into (each wholly owned by this script).
DESTINATIONS = {
    "shipped": REPO / "monitor" / "dashboard" / "static" / "vendor",
    "test": REPO / "tests" / ".vendor",
}
INDEX = "VENDORED.json"
DEFAULT_REGISTRY = "https://registry.npmjs.org/"
DOWNLOAD_TIMEOUT_SECONDS = 60
# No front-end tarball we pin comes near this; a registry answering more is not one to trust.
MAX_TARBALL_BYTES = 64 * 1024 * 1024
PACKAGE_KEYS = {"name", "version", "integrity", "license", "license_file", "files"}


class VendorError(Exception):
    """A problem the person running ``make vendor`` must fix; the message says what and where."""


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    integrity: str
    license: str
    license_file: str
    files: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def tarball_name(self) -> str:
        # The registry names a scoped package's tarball after the part behind the slash.
        return f"{self.name.rsplit('/', 1)[-1]}-{self.version}.tgz"

    @property
    def cache_name(self) -> str:
        return f"{self.name.lstrip('@').replace('/', '+')}-{self.version}.tgz"

    @property
    def license_out(self) -> str:
        return f"{self.name.lstrip('@').replace('/', '+')}-{self.version}-LICENSE.txt"

    def url(self, registry: str) -> str:
        return f"{registry.rstrip('/')}/{self.name}/-/{self.tarball_name}"

    def outputs(self) -> dict[str, str]:
        """Output name (flat) -> the path inside the tarball's ``package/``."""
        named = {Path(f).name: f for f in self.files}
        return named | {self.license_out: self.license_file}

    def recorded(self) -> dict[str, object]:
        return {
            "name": self.name,
            "version": self.version,
            "integrity": self.integrity,
            "license": self.license,
            "license_file": self.license_file,
            "files": list(self.files),
        }


def sri(algorithm: str, data: bytes) -> str:
    """Subresource Integrity form: ``sha384-<base64 digest>``."""
    return f"{algorithm}-{base64.b64encode(hashlib.new(algorithm, data).digest()).decode()}"


def _package(section: str, index: int, raw: object) -> Package:
    where = f"[[{section}]] #{index + 1}"
    if not isinstance(raw, dict):
        raise VendorError(f"{where}: not a table")
    unknown, missing = set(raw) - PACKAGE_KEYS, PACKAGE_KEYS - set(raw)
    if unknown or missing:
        raise VendorError(f"{where}: unknown keys {sorted(unknown)}, missing keys {sorted(missing)}")
    where = f"[[{section}]] {raw['name']!r}"
    files = raw["files"]
    if not isinstance(files, list) or not files or not all(isinstance(f, str) and f for f in files):
        raise VendorError(f"{where}: files must be a non-empty list of paths in the tarball")
    for key in PACKAGE_KEYS - {"files"}:
        if not isinstance(raw[key], str) or not raw[key]:
            raise VendorError(f"{where}: {key} must be a non-empty string")
    if not raw["integrity"].startswith("sha512-"):
        raise VendorError(
            f"{where}: integrity must be the tarball's sha512 (sha512-...), as npm view prints it"
        )
    for path in [*files, raw["license_file"]]:
        if path.startswith("/") or ".." in Path(path).parts:
            raise VendorError(f"{where}: {path!r} must be a relative path inside the package")
    return Package(
        name=raw["name"],
        version=raw["version"],
        integrity=raw["integrity"],
        license=raw["license"],
        license_file=raw["license_file"],
        files=tuple(files),
    )


def load_manifest(path: Path) -> dict[str, list[Package]]:
    """The manifest's sections, checked whole: every package valid, no two outputs alike."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise VendorError(f"{path}: {exc}") from exc
    unknown = set(raw) - set(DESTINATIONS)
    if unknown:
        raise VendorError(f"{path}: unknown sections {sorted(unknown)} (known: {sorted(DESTINATIONS)})")
    sections: dict[str, list[Package]] = {}
    for section, entries in raw.items():
        if not isinstance(entries, list):
            raise VendorError(f"{path}: {section} must be an array of tables ([[{section}]])")
        packages = [_package(section, i, e) for i, e in enumerate(entries)]
        seen: dict[str, str] = {}
        for package in packages:
            for out in package.outputs():
                if out in seen:
                    raise VendorError(f"[[{section}]]: {package.label} and {seen[out]} both write {out}")
                seen[out] = package.label
        sections[section] = packages
    return sections


def npm_registry() -> str:
    """The registry npm itself uses here (its config, the environment), else npm's default."""
    for var in ("npm_config_registry", "NPM_CONFIG_REGISTRY"):
        if os.environ.get(var):
            return os.environ[var]
    try:
        done = subprocess.run(
            ["npm", "config", "get", "registry"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return DEFAULT_REGISTRY
    answer = done.stdout.strip()
    return answer if done.returncode == 0 and answer.startswith(("https://", "http://")) else DEFAULT_REGISTRY


def _download(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_SECONDS) as answer:
            data: bytes = answer.read(MAX_TARBALL_BYTES + 1)
    except OSError as exc:  # URLError, HTTPError and timeouts are all OSError
        raise VendorError(f"could not download {url}: {exc}") from exc
    if len(data) > MAX_TARBALL_BYTES:
        raise VendorError(f"{url}: larger than {MAX_TARBALL_BYTES} bytes, refused")
    return data


def tarball(package: Package, cache: Path, registry: Callable[[], str]) -> bytes:
    """The package's tarball, its SHA-512 checked against the manifest: cached, else fetched."""
    cached = cache / package.cache_name
    if cached.is_file():
        data = cached.read_bytes()
        if sri("sha512", data) == package.integrity:
            return data
        print(f"vendor: {cached} does not match the manifest's integrity; fetching it again", file=sys.stderr)
        cached.unlink()
    url = package.url(registry())
    data = _download(url)
    got = sri("sha512", data)
    if got != package.integrity:
        raise VendorError(
            f"{package.label}: the tarball from {url} has integrity {got}, but the manifest pins "
            f"{package.integrity}; refused, nothing written"
        )
    cache.mkdir(parents=True, exist_ok=True)
    partial = cached.with_name(f".{cached.name}.{os.getpid()}")
    partial.write_bytes(data)
    partial.replace(cached)
    return data


def extract(package: Package, data: bytes) -> dict[str, bytes]:
    """Output name -> content, for the named files only (a verified tarball; nothing else read)."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        members = {m.name.removeprefix("./"): m for m in tar.getmembers()}
        # npm packs everything under package/; a few old tarballs use another top folder.
        tops = {name.split("/", 1)[0] for name in members}
        top = "package" if "package" in tops or len(tops) != 1 else tops.pop()
        out: dict[str, bytes] = {}
        for name, inner in package.outputs().items():
            member = members.get(f"{top}/{inner}")
            if member is None or not member.isfile():
                raise VendorError(
                    f"{package.label}: the tarball has no file {inner} (manifest files/license_file)"
                )
            reader = tar.extractfile(member)
            assert reader is not None  # a regular file always has a reader
            out[name] = reader.read()
        return out


def index_for(packages: list[Package], contents: dict[str, dict[str, bytes]]) -> dict[str, object]:
    files: dict[str, dict[str, object]] = {}
    for package in packages:
        for name, inner in package.outputs().items():
            data = contents[package.label][name]
            files[name] = {
                "package": package.name,
                "version": package.version,
                "source": inner,
                "integrity": sri("sha384", data),
                "size": len(data),
                "license": package.license,
                "license_file": package.license_out,
            }
    return {
        "written_by": "scripts/vendor.py from monitor/dashboard/vendor.toml (do not edit)",
        "packages": [p.recorded() for p in packages],
        "files": files,
    }


def up_to_date(packages: list[Package], dest: Path) -> bool:
    """Whether ``dest`` holds exactly what the manifest asks, each file hashing as listed."""
    try:
        index = json.loads((dest / INDEX).read_text(encoding="utf-8"))
        if index.get("packages") != [p.recorded() for p in packages]:
            return False
        files = index["files"]
        wanted = {name for p in packages for name in p.outputs()}
        if set(files) != wanted or {p.name for p in dest.iterdir()} != wanted | {INDEX}:
            return False
        return all(
            sri("sha384", (dest / name).read_bytes()) == entry["integrity"] for name, entry in files.items()
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def _replace(dest: Path, contents: dict[str, bytes]) -> None:
    """Write the new folder beside ``dest``, then swap it in, so ``dest`` is never half-written."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    new = dest.with_name(f".{dest.name}.new-{os.getpid()}")
    old = dest.with_name(f".{dest.name}.old-{os.getpid()}")
    shutil.rmtree(new, ignore_errors=True)
    new.mkdir()
    for name, data in contents.items():
        (new / name).write_bytes(data)
        (new / name).chmod(0o644)
    if dest.exists():
        dest.rename(old)
    new.rename(dest)
    shutil.rmtree(old, ignore_errors=True)


def vendor_section(packages: list[Package], dest: Path, cache: Path, registry: Callable[[], str]) -> bool:
    """Bring ``dest`` up to date; False when it already was (then nothing is read but ``dest``)."""
    if up_to_date(packages, dest):
        return False
    # Every tarball is fetched and checked before anything of any of them is written.
    tarballs = {p.label: tarball(p, cache, registry) for p in packages}
    contents = {p.label: extract(p, tarballs[p.label]) for p in packages}
    index = index_for(packages, contents)
    flat = {name: data for files in contents.values() for name, data in files.items()}
    flat[INDEX] = (json.dumps(index, indent=2, sort_keys=True) + "\n").encode()
    _replace(dest, flat)
    return True


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "monitor-vendor"


def _show(path: Path) -> str:
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def run(
    manifest: Path,
    destinations: dict[str, Path],
    cache: Path,
    *,
    only: str | None = None,
    check: bool = False,
    registry: str | None = None,
) -> list[str]:
    """Vendor (or with ``check``, verify) each section; one line per section. Raises VendorError."""
    sections = load_manifest(manifest)
    found: list[str] = []
    fetched: list[str] = []  # one entry per download, for the summary lines

    def lookup() -> str:  # asked once, and only if something must be fetched
        if not found:
            found.append(registry or npm_registry())
        fetched.append(found[0])
        return found[0]

    said = []
    for section, packages in sections.items():
        if only is not None and section != only:
            continue
        dest = destinations[section]
        shown = _show(dest)
        what = ", ".join(p.label for p in packages)
        if check:
            if not up_to_date(packages, dest):
                raise VendorError(f"{shown} is not what {manifest.name} asks ({what}): run `make vendor`")
            said.append(f"vendor: {shown} is up to date ({what})")
        elif vendor_section(packages, dest, cache, lookup):
            source = f"from {fetched[0]}" if fetched else f"from the cache in {cache}"
            fetched.clear()
            said.append(f"vendor: wrote {shown} ({what}, {source})")
        else:
            said.append(f"vendor: {shown} is up to date ({what})")
    return said


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--manifest", type=Path, default=MANIFEST)
    parser.add_argument("--only", choices=sorted(DESTINATIONS), help="one section of the manifest")
    parser.add_argument("--cache", type=Path, default=None, help="tarball cache (~/.cache/monitor-vendor)")
    parser.add_argument("--check", action="store_true", help="verify only, no network; status 1 if stale")
    args = parser.parse_args(argv)
    try:
        lines = run(
            args.manifest, DESTINATIONS, args.cache or default_cache(), only=args.only, check=args.check
        )
    except VendorError as exc:
        print(f"vendor: error: {exc}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
