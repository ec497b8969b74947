"""The pure parts of ``monitor.browser.process``: the DevTools port file as Chromium writes it
(whole, or caught half-written) and the environment a browser gets."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.browser.process import MARKER, environment, read_devtools_port


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("43853\n/devtools/browser/0b6e-41\n", (43853, "/devtools/browser/0b6e-41")),
        ("43853\n/devtools/browser/0b6e-41", (43853, "/devtools/browser/0b6e-41")),
        ("43853\n", None),  # caught half-written
        ("43853", None),
        ("", None),
        ("port\n/devtools/browser/x\n", None),
        ("43853\n/elsewhere\n", None),
        (None, None),  # not written yet
    ],
)
def test_the_devtools_port_file(tmp_path: Path, text: str | None, expected: tuple[int, str] | None) -> None:
    if text is not None:
        (tmp_path / "DevToolsActivePort").write_text(text)
    assert read_devtools_port(tmp_path) == expected


@pytest.mark.parametrize(
    ("source", "kept"),
    [
        (
            {"PATH": "/usr/local/bin:/usr/bin", "LANG": "cs_CZ.UTF-8", "TZ": "Europe/Prague"},
            {"PATH": "/usr/local/bin:/usr/bin", "LANG": "cs_CZ.UTF-8", "TZ": "Europe/Prague"},
        ),
        (
            {"MONITOR_SECRET_KEY": "k", "MONITOR_DATABASE_URL": "postgresql://u:pw@db/m", "HOME": "/root"},
            {"PATH": "/usr/bin:/bin"},
        ),
        (
            {"AWS_SECRET_ACCESS_KEY": "x", "LD_PRELOAD": "/evil.so", "LC_ALL": "C"},
            {"PATH": "/usr/bin:/bin", "LC_ALL": "C"},
        ),
    ],
)
def test_a_browser_gets_an_environment_of_its_own(source: dict[str, str], kept: dict[str, str]) -> None:
    home = Path("/tmp/monitor-browser-x")
    assert environment(home, "m1", source) == {
        **kept,
        "HOME": "/tmp/monitor-browser-x",
        "XDG_CONFIG_HOME": "/tmp/monitor-browser-x/.config",
        "XDG_CACHE_HOME": "/tmp/monitor-browser-x/.cache",
        MARKER: "m1",
    }
