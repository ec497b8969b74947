"""The JSON Schema of the file format (``monitor config schema``, monitor/ascode/schema.py) as a
real validator reads it (``jsonschema``, the draft the schema names): it is a valid schema, the
example documents of docs/config-as-code.md and README.md and every document of the apply tests'
cases validate against it (an editor must not flag a file that applies), and wrong documents do
not. Exported documents are validated by tests/integration/test_apply_roundtrip.py."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from support.ascode import CASES

from monitor.ascode.reading import SECTIONS
from monitor.ascode.schema import document_schema

ROOT = Path(__file__).parent.parent.parent
FENCED_YAML = re.compile(r"^```yaml\n(.*?)^```", re.MULTILINE | re.DOTALL)


@cache
def validator() -> Any:
    schema = document_schema()
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def errors_of(document: Any) -> list[str]:
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator().iter_errors(document)]


def documents_in(path: Path) -> list[tuple[str, Any]]:
    """The ```yaml blocks of ``path`` that are documents of the format (a mapping of sections)."""
    text = path.read_text(encoding="utf-8")
    found = []
    for match in FENCED_YAML.finditer(text):
        value = yaml.safe_load(match.group(1))
        if isinstance(value, dict) and value and set(value) <= {"version", *SECTIONS}:
            line = text[: match.start()].count("\n") + 1
            found.append((f"{path.name}:{line}", value))
    return found


EXAMPLES = [d for name in ("docs/config-as-code.md", "README.md") for d in documents_in(ROOT / name)]


def test_the_schema_is_a_valid_schema_of_its_draft() -> None:
    assert document_schema()["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    validator()


def test_both_documents_have_examples() -> None:
    assert {name.split(":")[0] for name, _ in EXAMPLES} == {"config-as-code.md", "README.md"}


@pytest.mark.parametrize("document", [d for _, d in EXAMPLES], ids=[n for n, _ in EXAMPLES])
def test_an_example_of_the_docs_validates(document: Any) -> None:
    assert errors_of(document) == []


# The schema refuses a key or tag named twice in a list (uniqueItems), which apply forgives.
APPLIED = [c for c in CASES if c[0] != "lists-with-repeats"]


@pytest.mark.parametrize("text", [c[1] for c in APPLIED], ids=[c[0] for c in APPLIED])
def test_a_document_that_applies_validates(text: str) -> None:
    # Written with ${VARIABLE} references, as the files are: the schema takes them where text goes.
    assert errors_of(yaml.safe_load(text)) == []


WEB = {"url": "https://example.com/"}
WRONG: list[tuple[str, dict[str, Any], str]] = [
    ("an unknown section", {"monitor": {"web": WEB}}, ""),
    ("another version", {"version": 2}, "version"),
    ("a section as a list", {"monitors": [WEB]}, "monitors"),
    ("a key with a space", {"monitors": {"my web": WEB}}, "monitors"),
    ("an unknown field", {"monitors": {"web": {**WEB, "colour": "red"}}}, "monitors.web"),
    ("a wrong type", {"monitors": {"web": {**WEB, "interval_seconds": "often"}}}, "monitors.web"),
    ("an unknown check type", {"monitors": {"x": {"type": "carrier-pigeon"}}}, "monitors.x"),
    ("a tcp monitor without a port", {"monitors": {"db": {"type": "tcp", "host": "db"}}}, "monitors.db"),
    ("the API's channel_ids", {"monitors": {"web": {**WEB, "channel_ids": [1]}}}, "monitors.web"),
    ("keys as a text", {"monitors": {"web": {**WEB, "depends_on": "db"}}}, "monitors.web"),
    ("a channel without its kind", {"channels": {"ops": {"config": {"url": "x"}}}}, "channels.ops"),
    ("a channel of no kind", {"channels": {"ops": {"kind": "pigeon", "config": {}}}}, "channels.ops"),
    ("a slack channel without a url", {"channels": {"ops": {"kind": "slack", "config": {}}}}, "channels.ops"),
    ("a window's monitor_ids", {"maintenance": {"w": {"monitor_ids": [1]}}}, "maintenance.w"),
    ("a group's monitor_ids", {"status_pages": {"p": {"slug": "p", "title": "P",
                                                      "groups": [{"name": "a", "monitor_ids": [1]}]}}},
     "status_pages.p.groups.0"),
    ("a page without groups", {"status_pages": {"p": {"slug": "p", "title": "P"}}}, "status_pages.p"),
]  # fmt: skip


@pytest.mark.parametrize(("document", "where"), [w[1:] for w in WRONG], ids=[w[0] for w in WRONG])
def test_a_wrong_document_does_not_validate(document: dict[str, Any], where: str) -> None:
    errors = list(validator().iter_errors(document))
    assert errors
    places = {".".join(map(str, e.absolute_path)) for e in errors}
    assert any(p == where or p.startswith(f"{where}.") for p in places), places
