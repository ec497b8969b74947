"""Each importer's document, made of its fixtures (tests/fixtures/import/), is one ``monitor
apply`` takes: converted, dumped as ``monitor import`` writes it, read with its secrets as the
variables (those the importer leaves empty for the user to fill in, and the source's own
``${VAR}``, filled with a value of the right shape), judged against a real account with no
problem, valid against the format's JSON Schema, applied, and a second apply is no changes."""

from __future__ import annotations

import importlib
import re
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest
import yaml
from support.domain import Callers, callers_fixture, deps_fixture  # noqa: F401

from monitor.ascode import applying
from monitor.ascode.dumping import dump
from monitor.ascode.importers import IMPORTERS, Imported
from monitor.ascode.reading import REFERENCE, Invalid, Secrets, read_texts
from monitor.ascode.schema import document_schema
from monitor.domain.context import Deps

FIXTURES = Path(__file__).parent.parent / "fixtures" / "import"
SOURCES = [
    # Gatus's client.insecure is tls_verify: false, which the operator must allow (docs/config-as-code.md).
    ("gatus", ["gatus/config.yaml"]),
    ("uptimerobot", ["uptimerobot/getMonitors.json", "uptimerobot/getAlertContacts.json",
                     "uptimerobot/getMWindows.json"]),
    ("uptimerobot", ["uptimerobot/v3-monitors.json"]),
    ("uptimerobot", ["uptimerobot/v3-monitors.json", "uptimerobot/v3-integrations.json",
                     "uptimerobot/v3-alert-contacts.json"]),
    ("healthchecks", ["healthchecks/checks.json", "healthchecks/channels.json"]),
]  # fmt: skip

# What a variable left for the user holds, by the end of its name: a value valid for its field.
PLACEHOLDERS = [
    ("_URL", "https://hooks.example.test/in"),
    ("_TO", "ops@example.test"),
    ("_FROM", "monitor@example.test"),
    ("_SMTP_HOST", "smtp.example.test"),
    ("_HOST", "smtp.example.test"),
    ("CHAT_ID", "123456789"),
    ("_KEY", "R0UTINGKEY0123456789012345678901"),
    ("_TOKEN", "tk_placeholder"),
]


def placeholder(variable: str) -> str:
    return next((value for end, value in PLACEHOLDERS if variable.endswith(end)), "placeholder")


def variables(imported: Imported, text: str) -> dict[str, str]:
    """The imported secrets, each empty one and each reference to the source's own environment
    filled in with a placeholder."""
    found = {name: value or placeholder(name) for name, value in imported.secrets.items()}
    for name in REFERENCE.findall(text):
        found.setdefault(name, placeholder(name))
    return found


IDS = [f"{peer}-{len(files)}-{files[0].split('/')[1]}" for peer, files in SOURCES]


@pytest.mark.parametrize(("peer", "sources"), SOURCES, ids=IDS)
async def test_an_imported_document_applies(
    deps: Deps, callers: Callers, peer: str, sources: list[str]
) -> None:
    if peer == "gatus":
        deps = replace(deps, settings=deps.settings.model_copy(update={"allow_insecure_tls": True}))
    convert = importlib.import_module(IMPORTERS[peer]).convert
    imported: Imported = convert([FIXTURES / s for s in sources])
    text = dump(imported.document)
    assert imported.document.get("monitors"), text
    jsonschema.validate(yaml.safe_load(text), document_schema())
    secrets = Secrets(variables(imported, text))
    doc = read_texts([(f"{peer}.yaml", text)], secrets)
    try:
        desired = await applying.judge(deps, doc)
    except Invalid as exc:
        pytest.fail("\n".join(str(p) for p in exc.problems), pytrace=False)
    assert sum(len(v) for v in desired.values()) == sum(len(v) for v in doc.sections.values())

    made = await applying.apply(deps, callers.owner, doc, prune=False, dry_run=False)
    assert made.counts()["create"] == sum(len(v) for v in doc.sections.values()), made.text()
    again = await applying.apply(deps, callers.owner, read_texts([(f"{peer}.yaml", text)], secrets),
                                 prune=False, dry_run=False)  # fmt: skip
    assert again.empty, again.text()
    assert not re.search(r"\$\{", " ".join(str(v) for v in secrets.variables.values()))
