"""Which skips stand under ``make test``, and which fail the run.

A test that cannot run here skips, saying why: run by hand, on a laptop without root or
iproute2, the rest of a file still runs. Under ``make test``, which installs every tool the
suite needs (scripts/services.sh, the Makefile's ``test-tools``), a skip can only mean that
the Makefile missed something, and the tests it hides would never run in CI; so there a skip
fails, naming its reason (:func:`enforce`, called by tests/conftest.py's report hook).

Strict when ``TEST_STRICT_SKIPS`` is set and not 0 (scripts/test.sh sets it, so every
``make test`` is strict), or else when ``CI`` is set and not false/0 (what CI systems set);
``TEST_STRICT_SKIPS=0`` turns it off either way.

A skip whose cause no install can change is raised with :func:`skip_beyond_make`, and stands
everywhere. The ones left (each where it is raised):

- tests/integration/test_ping_netns.py, "IPv6 literal": the kernel has IPv6 turned off
  (``net.ipv6.conf.all.disable_ipv6``); the Makefile does not reconfigure the host's network.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

PREFIX = "beyond make test: "


def strict() -> bool:
    """Whether a skip fails here (see the module docstring)."""
    value = os.environ.get("TEST_STRICT_SKIPS")
    if value is not None:
        return value.strip() not in ("", "0")
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def skip_beyond_make(reason: str) -> NoReturn:
    """Skip for a cause no install can change (a kernel setting): it stands under ``make test``."""
    pytest.skip(PREFIX + reason)


def reason(report: pytest.TestReport) -> str:
    """The reason of a skipped report, as pytest prints it."""
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return text.removeprefix("Skipped: ")


def enforce(report: pytest.TestReport) -> None:
    """Under strict skips, turn a skip that ``make test`` could have avoided into a failure."""
    if not report.skipped or hasattr(report, "wasxfail") or not strict():
        return
    why = reason(report)
    if why.startswith(PREFIX):
        return
    report.outcome = "failed"
    report.longrepr = (
        f"skipped under make test: {why}\n"
        "`make test` installs what the tests need (Makefile: test-tools, nginx; scripts/services.sh), so "
        "this skip hides a test CI would never run: install what it names from the Makefile, or, for a "
        "cause no install can change, skip with support.skips.skip_beyond_make. TEST_STRICT_SKIPS=0 "
        "lets it skip."
    )
