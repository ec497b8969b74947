"""README.md and docs/*.md: every relative link points at a file that exists, and at a heading
of it when it names one; docs/configuration.md names every MONITOR_* setting there is."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

from monitor.config import PREFIX, TOOL_VARIABLES, Settings

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[(?:[^\]]|\][^(])*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
HEADING = re.compile(r"^#{1,6} +(.+?) *#*$", re.M)


def _prose(text: str) -> str:
    """The text outside fenced code blocks (where [x](y) is code, not a link)."""
    return FENCE.sub("", text)


def anchor(heading: str) -> str:
    """The id GitHub gives a heading: lower case, punctuation but - and _ dropped, spaces to
    hyphens (a link in it counts as its text)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(_prose(page.read_text())):
        slug = anchor(heading)
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        found.add(slug if n == 0 else f"{slug}-{n}")
    return found


def _links(page: Path) -> list[str]:
    return [t for t in LINK.findall(_prose(page.read_text())) if not re.match(r"[a-z][a-z+.-]*:", t)]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO)) for p in PAGES])
def test_every_relative_link_points_at_a_file_and_a_heading(page: Path) -> None:
    broken = []
    for target in _links(page):
        path, _, fragment = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no file {file.relative_to(REPO) if REPO in file.parents else file}")
        elif fragment and file.suffix == ".md" and fragment not in anchors(file):
            broken.append(f"{target}: no heading #{fragment} in {file.relative_to(REPO)}")
    assert not broken, f"{page.relative_to(REPO)}: " + "; ".join(broken)


def test_the_link_checker_sees_links_and_headings() -> None:
    readme = REPO / "README.md"
    assert "docs/api.md" in _links(readme)
    assert anchor("Trying it on your own machine") == "trying-it-on-your-own-machine"
    assert anchor("7. Alert channels") == "7-alert-channels"
    assert anchor("The development machine: make run and make test") == (
        "the-development-machine-make-run-and-make-test"
    )
    assert anchor("`monitor_url` and *more*") == "monitor_url-and-more"


def test_configuration_names_every_setting() -> None:
    named = set(re.findall(rf"{PREFIX}[A-Z0-9_]+", (REPO / "docs" / "configuration.md").read_text()))
    settings = {PREFIX + name.upper() for name in Settings.model_fields}
    assert settings - named == set(), "settings missing from docs/configuration.md"
    assert named - settings - TOOL_VARIABLES == set(), "docs/configuration.md names what is no setting"
