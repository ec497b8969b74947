"""The whole run's log scan (leaks.py): a secret in a log is found and named by its kind and
file, never printed; a run with a deliberate leak fails, a clean one passes."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import leaks
from .inner_pytest import run_pytest

SECRET = "Leaky-Pass-9c2e7a1b5d"


def test_a_secret_in_a_log_is_found_by_kind_and_file(tmp_path: Path) -> None:
    clean, leaky, gone = tmp_path / "clean.log", tmp_path / "leaky.log", tmp_path / "gone.log"
    clean.write_text('{"event": "api.started"}\n')
    leaky.write_text(f'{{"event": "signin.failed", "password": "{SECRET}"}}\n')
    secrets = {SECRET: "password", "sess-1234567890": "session id"}
    found = leaks.findings([clean, leaky, gone], secrets)
    assert found == [f"{leaky}: a password"]
    assert SECRET not in "".join(found)


def test_the_setup_link_line_is_the_one_deliberate_exception(tmp_path: Path) -> None:
    token = "Setup-Token-3f9a0c7e1b2d4c6a8e"
    log = tmp_path / "api-1.log"
    link = f"http://127.0.0.1:8080/setup?token={token}"
    log.write_text(f'{{"event": "api.started"}}\n{{"event": "dashboard.setup_token", "url": "{link}"}}\n')
    assert leaks.findings([log], {token: "setup token"}) == []
    with log.open("a") as more:  # the same token on any other line is a leak
        more.write(f'{{"event": "api.request", "path": "/setup?token={token}"}}\n')
    assert leaks.findings([log], {token: "setup token"}) == [f"{log}: a setup token"]


def test_short_values_are_not_registered() -> None:
    leaks.secret("TOTP code", "123456")
    leaks.secret("password", None)
    assert "123456" not in leaks._secrets


INNER = """
from pathlib import Path
from support import leaks

def test_logs(tmp_path: Path) -> None:
    log = tmp_path / "api-1.log"
    log.write_text(LOGGED)
    leaks.log_file(log)
    leaks.secret("API key", SECRET)
"""


@pytest.mark.parametrize("leak", [True, False])
def test_a_run_with_a_leak_fails_naming_the_file_and_kind(tmp_path: Path, leak: bool) -> None:
    logged = f'{{"event": "x", "key": "{SECRET}"}}' if leak else '{"event": "x"}'
    tests = f"SECRET = {SECRET[::-1]!r}[::-1]\nLOGGED = {logged[::-1]!r}[::-1]\n" + INNER
    code, out = run_pytest(tmp_path, tests, {})
    assert "1 passed" in out, out  # the test itself passes either way
    if leak:
        assert code == 1, out
        assert "secrets found in the logs of this run" in out and "api-1.log: a API key" in out, out
    else:
        assert (code, "secrets found" in out) == (0, False), out
    assert SECRET not in out  # the scan never prints it
