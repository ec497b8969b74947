"""scripts/vendor.py (the integrity check before anything is written) and monitor.dashboard.vendored.

The registry here is a folder laid out as npm's (``NAME/-/NAME-VERSION.tgz``) behind a file://
URL: the real download path, no network. Tarballs are made by the tests, a few bytes each.
"""

from __future__ import annotations

import importlib.util
import io
import json
import sys
import tarfile
from pathlib import Path
from types import ModuleType

import pytest

from monitor.dashboard import vendored

REPO = Path(__file__).resolve().parents[2]


def _load() -> ModuleType:
    path = REPO / "scripts" / "vendor.py"
    spec = importlib.util.spec_from_file_location("vendor_script", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


vendor = _load()
JS = b"var lib=function(){return 1}();\n"
LICENSE = b"Zero-Clause BSD\n"


def tgz(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"package/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


GOOD = tgz({"dist/lib.min.js": JS, "dist/lib.min.css": b"a{}", "LICENSE": LICENSE, "README.md": b"x"})


class Registry:
    """A folder served as an npm registry through file:// URLs."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.url = root.as_uri() + "/"

    def publish(self, name: str, version: str, data: bytes) -> None:
        path = self.root / name / "-" / f"{name.rsplit('/', 1)[-1]}-{version}.tgz"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def manifest(path: Path, *, integrity: str, version: str = "1.0.0") -> Path:
    path.write_text(
        f"""
[[shipped]]
name = "lib"
version = "{version}"
integrity = "{integrity}"
license = "0BSD"
license_file = "LICENSE"
files = ["dist/lib.min.js", "dist/lib.min.css"]
""",
        encoding="utf-8",
    )
    return path


@pytest.fixture
def registry(tmp_path: Path) -> Registry:
    return Registry(tmp_path / "registry")


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    return {"shipped": tmp_path / "pkg" / "static" / "vendor", "test": tmp_path / "tests" / ".vendor"}


def test_vendors_the_named_files_with_licence_and_index(
    tmp_path: Path, registry: Registry, dirs: dict
) -> None:
    registry.publish("lib", "1.0.0", GOOD)
    path = manifest(tmp_path / "vendor.toml", integrity=vendor.sri("sha512", GOOD))
    said = vendor.run(path, dirs, tmp_path / "cache", registry=registry.url)
    assert said == [f"vendor: wrote {dirs['shipped']} (lib@1.0.0, from {registry.url})"]
    dest = dirs["shipped"]
    assert sorted(p.name for p in dest.iterdir()) == [
        "VENDORED.json",
        "lib-1.0.0-LICENSE.txt",
        "lib.min.css",
        "lib.min.js",
    ]
    assert (dest / "lib.min.js").read_bytes() == JS
    assert (dest / "lib-1.0.0-LICENSE.txt").read_bytes() == LICENSE
    index = json.loads((dest / "VENDORED.json").read_text())
    assert index["files"]["lib.min.js"] == {
        "package": "lib",
        "version": "1.0.0",
        "source": "dist/lib.min.js",
        "integrity": vendor.sri("sha384", JS),
        "size": len(JS),
        "license": "0BSD",
        "license_file": "lib-1.0.0-LICENSE.txt",
    }
    assert vendor.sri("sha384", JS).startswith("sha384-")


def test_a_second_run_reads_no_tarball_and_no_registry(
    tmp_path: Path, registry: Registry, dirs: dict
) -> None:
    registry.publish("lib", "1.0.0", GOOD)
    path = manifest(tmp_path / "vendor.toml", integrity=vendor.sri("sha512", GOOD))
    vendor.run(path, dirs, tmp_path / "cache", registry=registry.url)
    for tarball in [*registry.root.rglob("*.tgz"), *(tmp_path / "cache").iterdir()]:
        tarball.unlink()
    again = vendor.run(path, dirs, tmp_path / "cache", registry="http://127.0.0.1:9/")
    assert again == [f"vendor: {dirs['shipped']} is up to date (lib@1.0.0)"]
    assert vendor.run(path, dirs, tmp_path / "cache", check=True) == again


def test_a_tampered_tarball_is_refused_and_nothing_is_written(
    tmp_path: Path, registry: Registry, dirs: dict
) -> None:
    tampered = tgz(
        {"dist/lib.min.js": b"steal(document.cookie)", "dist/lib.min.css": b"", "LICENSE": LICENSE}
    )
    registry.publish("lib", "1.0.0", tampered)
    path = manifest(tmp_path / "vendor.toml", integrity=vendor.sri("sha512", GOOD))
    with pytest.raises(vendor.VendorError, match=r"lib@1\.0\.0: the tarball from .* has integrity sha512-"):
        vendor.run(path, dirs, tmp_path / "cache", registry=registry.url)
    assert not dirs["shipped"].parent.exists()
    assert not (tmp_path / "cache" / "lib-1.0.0.tgz").exists()  # never cached either


def test_a_refused_update_leaves_the_vendored_version_in_place(
    tmp_path: Path, registry: Registry, dirs: dict
) -> None:
    registry.publish("lib", "1.0.0", GOOD)
    path = manifest(tmp_path / "vendor.toml", integrity=vendor.sri("sha512", GOOD))
    vendor.run(path, dirs, tmp_path / "cache", registry=registry.url)
    before = {p.name: p.read_bytes() for p in dirs["shipped"].iterdir()}
    registry.publish("lib", "1.0.1", tgz({"dist/lib.min.js": b"evil", "LICENSE": LICENSE}))
    manifest(path, integrity=vendor.sri("sha512", GOOD), version="1.0.1")
    with pytest.raises(vendor.VendorError, match="refused, nothing written"):
        vendor.run(path, dirs, tmp_path / "cache", registry=registry.url)
    assert {p.name: p.read_bytes() for p in dirs["shipped"].iterdir()} == before
    assert sorted(p.name for p in dirs["shipped"].parent.iterdir()) == ["vendor"]


def test_a_corrupt_cached_tarball_is_fetched_again(tmp_path: Path, registry: Registry, dirs: dict) -> None:
    registry.publish("lib", "1.0.0", GOOD)
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "lib-1.0.0.tgz").write_bytes(b"not it")
    path = manifest(tmp_path / "vendor.toml", integrity=vendor.sri("sha512", GOOD))
    vendor.run(path, dirs, cache, registry=registry.url)
    assert (cache / "lib-1.0.0.tgz").read_bytes() == GOOD
    assert (dirs["shipped"] / "lib.min.js").read_bytes() == JS


def test_a_changed_file_on_disk_is_vendored_again(tmp_path: Path, registry: Registry, dirs: dict) -> None:
    registry.publish("lib", "1.0.0", GOOD)
    path = manifest(tmp_path / "vendor.toml", integrity=vendor.sri("sha512", GOOD))
    vendor.run(path, dirs, tmp_path / "cache", registry=registry.url)
    (dirs["shipped"] / "lib.min.js").write_bytes(b"edited")
    (dirs["shipped"] / "stray.js").write_bytes(b"left over")
    with pytest.raises(vendor.VendorError, match="run `make vendor`"):
        vendor.run(path, dirs, tmp_path / "cache", check=True)
    said = vendor.run(path, dirs, tmp_path / "cache", registry="http://127.0.0.1:9/")  # from the cache
    assert said == [f"vendor: wrote {dirs['shipped']} (lib@1.0.0, from the cache in {tmp_path / 'cache'})"]
    assert (dirs["shipped"] / "lib.min.js").read_bytes() == JS
    assert not (dirs["shipped"] / "stray.js").exists()


def test_main_exits_1_with_the_reason(
    tmp_path: Path,
    registry: Registry,
    dirs: dict,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
) -> None:
    registry.publish("lib", "1.0.0", tgz({"dist/lib.min.js": b"evil", "LICENSE": LICENSE}))
    path = manifest(tmp_path / "vendor.toml", integrity=vendor.sri("sha512", GOOD))
    monkeypatch.setattr(vendor, "DESTINATIONS", dirs)
    monkeypatch.setenv("npm_config_registry", registry.url)
    assert vendor.main(["--manifest", str(path), "--cache", str(tmp_path / "cache")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("vendor: error: lib@1.0.0: the tarball from file://")
    assert "but the manifest pins sha512-" in err
    assert not dirs["shipped"].parent.exists()


MANIFEST_ERRORS = [
    ("integrity not sha512", 'integrity = "sha1-abc"', "integrity must be the tarball's sha512"),
    ("a path out of the package", 'license_file = "../../etc/passwd"', "must be a relative path inside"),
    ("a file missing from the tarball", 'files = ["dist/nope.js"]', "the tarball has no file dist/nope.js"),
]


@pytest.mark.parametrize(
    ("line", "said"), [c[1:] for c in MANIFEST_ERRORS], ids=[c[0] for c in MANIFEST_ERRORS]
)
def test_manifest_errors(tmp_path: Path, registry: Registry, dirs: dict, line: str, said: str) -> None:
    registry.publish("lib", "1.0.0", GOOD)
    good = manifest(tmp_path / "good.toml", integrity=vendor.sri("sha512", GOOD)).read_text()
    key = line.split(" = ")[0]
    body = "\n".join(line if row.startswith(f"{key} = ") else row for row in good.splitlines())
    (tmp_path / "vendor.toml").write_text(body)
    with pytest.raises(vendor.VendorError, match=said):
        vendor.run(tmp_path / "vendor.toml", dirs, tmp_path / "cache", registry=registry.url)
    assert not dirs["shipped"].parent.exists()


def test_two_packages_writing_one_name_are_refused(tmp_path: Path) -> None:
    path = manifest(tmp_path / "vendor.toml", integrity="sha512-x")
    path.write_text(path.read_text() + path.read_text().replace('version = "1.0.0"', 'version = "2.0.0"'))
    with pytest.raises(vendor.VendorError, match=r"lib@1\.0\.0 both write lib\.min\.js"):
        vendor.load_manifest(path)


def test_the_project_manifest_pins_what_the_dashboard_and_tests_use() -> None:
    sections = vendor.load_manifest(vendor.MANIFEST)
    assert {p.name for p in sections["shipped"]} == {"htmx.org", "uplot"}
    assert {p.name for p in sections["test"]} == {"axe-core"}
    outputs = {name for p in sections["shipped"] for name in p.outputs()}
    assert {"htmx.min.js", "uPlot.iife.min.js", "uPlot.min.css"} <= outputs


def test_vendored_answers_path_integrity_and_version(tmp_path: Path, registry: Registry, dirs: dict) -> None:
    registry.publish("lib", "1.0.0", GOOD)
    vendor.run(
        manifest(tmp_path / "vendor.toml", integrity=vendor.sri("sha512", GOOD)),
        dirs,
        tmp_path / "cache",
        registry=registry.url,
    )
    found = vendored.load(dirs["shipped"])
    assert found.problem is None
    assert found.integrity("lib.min.js") == vendor.sri("sha384", JS)
    assert found.version("lib.min.js") == "1.0.0"
    assert found.path("lib.min.js") == dirs["shipped"] / "lib.min.js"
    asset = found.get("lib.min.js")
    assert asset is not None and (asset.package, asset.license_file) == ("lib", "lib-1.0.0-LICENSE.txt")
    assert found.get("htmx.min.js") is None


def test_vendored_says_what_is_missing(tmp_path: Path) -> None:
    missing = vendored.load(tmp_path / "vendor")
    assert missing.problem == f"{tmp_path / 'vendor' / 'VENDORED.json'} not found: run `make vendor`"
    assert (missing.assets, missing.integrity("htmx.min.js"), missing.path("htmx.min.js")) == ({}, None, None)

    (tmp_path / "vendor").mkdir()
    (tmp_path / "vendor" / "VENDORED.json").write_text("{")
    assert "unreadable" in str(vendored.load(tmp_path / "vendor").problem)

    entry = {"package": "lib", "version": "1", "integrity": "sha384-x", "size": 1, "license": "MIT"}
    (tmp_path / "vendor" / "VENDORED.json").write_text(
        json.dumps({"files": {"lib.js": entry | {"license_file": "L"}}})
    )
    gone = vendored.load(tmp_path / "vendor")
    assert gone.assets == {}
    assert gone.problem is not None and "lib.js is listed but not in" in gone.problem
