"""What the public side sends: the coding a client's Accept-Encoding takes, the compressed
copies made once (where they pay), and robots.txt."""

from __future__ import annotations

import gzip
import os
import urllib.robotparser

import brotli
import pytest

from monitor.status import assets
from monitor.status.bodies import body, choose

BOTH = ("br", "gzip")


@pytest.mark.parametrize(
    ("accept", "offered", "chosen"),
    [
        ("", BOTH, None),  # no header: the bytes as they are
        ("identity", BOTH, None),
        ("deflate", BOTH, None),
        ("gzip", BOTH, "gzip"),
        ("gzip, deflate", BOTH, "gzip"),
        ("x-gzip", BOTH, "gzip"),
        ("gzip, deflate, br, zstd", BOTH, "br"),  # what browsers send: ours first among equals
        ("br, gzip", ("gzip",), "gzip"),  # only what a copy exists of
        ("BR", BOTH, "br"),
        ("gzip;q=1, br;q=0.5", BOTH, "gzip"),  # the client's weights first
        ("gzip; q=0.8, br; q=0.9", BOTH, "br"),
        ("gzip;q=0, br;q=0", BOTH, None),  # refused
        ("gzip;q=0.0, identity", BOTH, None),
        ("*", BOTH, "br"),
        ("*;q=0.1, gzip", BOTH, "gzip"),
        ("gzip;q=0, *", BOTH, "br"),  # * is any coding not named
        ("br;q=0, *;q=0.5", BOTH, "gzip"),
        ("br;q=nonsense, gzip", BOTH, "gzip"),  # a weight that is none counts as 0
        ("gzip", (), None),
    ],
)
def test_the_coding_a_client_takes(accept: str, offered: tuple[str, ...], chosen: str | None) -> None:
    assert choose(accept, offered) == chosen


def test_copies_are_made_where_they_pay() -> None:
    text = "body { margin: 0; }\n" * 200
    made = body(text, "text/css", codings=BOTH, best=True)
    assert [name for name, _ in made.encoded] == ["br", "gzip"]
    assert brotli.decompress(made.coded("br") or b"") == made.content == text.encode()
    assert gzip.decompress(made.gzipped or b"") == made.content
    # Each copy its own ETag.
    assert len({made.etag_of(None), made.etag_of("br"), made.etag_of("gzip")}) == 3
    assert made.etag_of("gzip") == made.etag[:-1] + '-gz"'
    # Small bodies, and bodies that do not shrink (an icon's PNG data), are sent as they are.
    assert body("tiny", "text/plain", codings=BOTH).encoded == ()
    assert body(os.urandom(4096), "image/x-icon", codings=BOTH).encoded == ()


def test_static_files_are_compressed_once_and_linked_by_version() -> None:
    css = assets.CSS
    assert css.url == f"/static/status.css?v={css.version}"
    packed = dict(css.body.encoded)
    assert set(packed) == {"br", "gzip"} and len(packed["br"]) < len(packed["gzip"]) < len(css.body.content)
    assert assets.FAVICON_ICO.body.content[:4] == b"\x00\x00\x01\x00"  # an ICO
    assert assets.FAVICON_SVG.body.content.startswith(b"<svg")


@pytest.mark.parametrize(
    ("indexed", "path", "allowed"),
    [
        (True, "/status/shop", True),
        (True, "/status/shop.json", True),
        (True, "/", True),  # a page's own domain
        (True, "/api/v1/monitors", False),
        (True, "/api/v1/keys", False),
        (True, "/badge/3fJQk/status.svg", False),
        (True, "/ping/abc123", False),
        (True, "/metrics", False),
        (True, "/signin", False),  # the dashboard's
        (True, "/setup?token=x", False),
        (True, "/monitors/7", False),
        (True, "/status-pages/1", False),
        (False, "/status/shop", False),
        (False, "/", False),
        (False, "/api/v1/monitors", False),
    ],
)
def test_robots_txt(indexed: bool, path: str, allowed: bool) -> None:
    parser = urllib.robotparser.RobotFileParser()
    parser.parse(assets.robots_txt(indexed).splitlines())
    assert parser.can_fetch("Googlebot", f"https://status.example.com{path}") is allowed
