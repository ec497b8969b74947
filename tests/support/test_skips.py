"""Strict skips: under ``make test`` (or CI) a skip fails, unless no install could avoid it."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest

from . import skips
from .inner_pytest import run_pytest


def skipped(reason: str, when: Literal["setup", "call"] = "call") -> pytest.TestReport:
    return pytest.TestReport("t::x", ("t.py", 1, "x"), {}, "skipped", ("t.py", 1, f"Skipped: {reason}"), when)


@pytest.mark.parametrize(
    ("env", "strict"),
    [
        ({}, False),
        ({"TEST_STRICT_SKIPS": "1"}, True),
        ({"TEST_STRICT_SKIPS": "0", "CI": "true"}, False),
        ({"CI": "true"}, True),
        ({"CI": "false"}, False),
        ({"CI": ""}, False),
    ],
)
def test_strict_under_make_test_or_ci(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], strict: bool
) -> None:
    monkeypatch.delenv("TEST_STRICT_SKIPS", raising=False)
    monkeypatch.delenv("CI", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert skips.strict() is strict


def test_a_strict_skip_fails_naming_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_STRICT_SKIPS", "1")
    report = skipped("cannot create a network namespace host: iproute2's ip is not installed", "setup")
    skips.enforce(report)
    assert report.outcome == "failed"
    assert "skipped under make test: cannot create a network namespace host" in str(report.longrepr)


def test_a_skip_beyond_make_and_any_skip_by_hand_stand(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_STRICT_SKIPS", "1")
    with pytest.raises(pytest.skip.Exception) as caught:
        skips.skip_beyond_make("IPv6 is disabled on this machine")
    report = skipped(str(caught.value.msg))
    skips.enforce(report)
    assert report.outcome == "skipped"

    monkeypatch.setenv("TEST_STRICT_SKIPS", "0")
    report = skipped("no PostgreSQL pair of the test's own: needs root")
    skips.enforce(report)
    assert report.outcome == "skipped"


SKIPPING = """
import pytest
from support.skips import skip_beyond_make


def test_wants_a_tool():
    pytest.skip("the tool is not installed")


def test_wants_a_kernel_setting():
    skip_beyond_make("IPv6 is disabled on this machine")
"""


@pytest.mark.parametrize(("strict", "summary"), [("1", "1 failed, 1 skipped"), ("0", "2 skipped")])
def test_the_report_hook_fails_a_strict_skip(tmp_path: Path, strict: str, summary: str) -> None:
    code, out = run_pytest(tmp_path, SKIPPING, {"TEST_STRICT_SKIPS": strict})
    assert summary in out, out
    assert code == (1 if strict == "1" else 0), out
    if strict == "1":
        assert "skipped under make test: the tool is not installed" in out, out
