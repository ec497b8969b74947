"""axe-core in the browser tests: the accessibility audit of the page a ``support.browser``
Browser has open, as a list of violations.

axe-core is vendored for the tests only (``make vendor`` writes ``tests/.vendor/axe.min.js``
from the npm tarball pinned in ``monitor/dashboard/vendor.toml``; the wheel never ships it).
It is put into the page with WebDriver's ``execute_script``, which the page's Content Security
Policy does not govern (a CSP of ``script-src 'self'`` refuses inline and foreign scripts, not
the ones the automation evaluates), and run with ``execute_async_script``::

    from support import axe

    browser.open(url, width=360)
    axe.assert_clean(browser, "overview 360 px light")   # no serious or critical violation

Every rule axe runs by default counts (WCAG 2.x A and AA, and its best practices); only the
impact decides what fails: ``serious`` and ``critical``. The message names each violation's
rule, impact and the nodes it found (their CSS selectors), enough to find the template line.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from monitor.dashboard import vendored

from .browser import Browser

REPO = Path(__file__).resolve().parents[2]
VENDOR = REPO / "tests" / ".vendor"
FAILING = ("serious", "critical")
SCRIPT_TIMEOUT = 30.0  # axe over a long page on a loaded machine takes a few seconds

# Runs axe over the whole document; answers its violations, trimmed to what a message needs.
RUN = """
const done = arguments[arguments.length - 1];
axe.run(document, {resultTypes: ["violations"]}).then(
  (result) => done({violations: result.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map((n) => ({target: n.target.map(String).join(" "), summary: n.failureSummary || ""})),
  }))}),
  (error) => done({error: String(error)}),
);
"""


@dataclass(frozen=True)
class Node:
    target: str  # the element's CSS selector (inside frames: joined by spaces)
    summary: str  # axe's "Fix any of the following: ..."


@dataclass(frozen=True)
class Violation:
    id: str  # the rule: "color-contrast", "label", ...
    impact: str  # "minor" | "moderate" | "serious" | "critical"
    help: str
    nodes: tuple[Node, ...]

    def describe(self) -> str:
        lines = [f"{self.id} ({self.impact}): {self.help}"]
        lines += [f"    {n.target}: {' '.join(n.summary.split())}" for n in self.nodes[:8]]
        if len(self.nodes) > 8:
            lines.append(f"    ... and {len(self.nodes) - 8} more")
        return "\n".join(lines)


@cache
def source() -> str:
    """axe.min.js as ``make vendor`` wrote it (its SHA-384 checked against VENDORED.json's)."""
    found = vendored.load(VENDOR)
    path = found.path("axe.min.js")
    if path is None:
        raise AssertionError(f"axe-core is not vendored in {VENDOR} ({found.problem}): run `make vendor`")
    return path.read_text()


def inject(browser: Browser) -> None:
    """axe into the open page (once per document: a new page needs it again)."""
    if browser.script("return typeof window.axe === 'object'"):
        return
    browser.script(source() + "\n;window.axe = axe;")
    assert browser.script("return typeof window.axe === 'object'"), "axe-core did not load into the page"


def run(browser: Browser) -> list[Violation]:
    """Every violation axe finds in the open page, whatever its impact."""
    inject(browser)
    browser.driver.set_script_timeout(SCRIPT_TIMEOUT)
    answer: dict[str, Any] = browser.driver.execute_async_script(RUN)
    if "error" in answer:
        raise AssertionError(f"axe.run failed: {answer['error']}")
    return [
        Violation(
            id=v["id"],
            impact=v["impact"] or "minor",
            help=v["help"],
            nodes=tuple(Node(n["target"], n["summary"]) for n in v["nodes"]),
        )
        for v in answer["violations"]
    ]


def serious(violations: list[Violation]) -> list[Violation]:
    return [v for v in violations if v.impact in FAILING]


def assert_clean(browser: Browser, where: str) -> list[Violation]:
    """Fail naming each serious or critical violation of the open page; the others, returned."""
    found = run(browser)
    bad = serious(found)
    assert not bad, f"{where}: axe-core found {len(bad)} serious or critical violation(s):\n" + "\n".join(
        v.describe() for v in bad
    )
    return found
