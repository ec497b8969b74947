"""Importers: another tool's configuration as our file format (docs/config-as-code.md), with a
report of every setting that could not be carried over, so nothing is dropped silently.

An importer is one module here with a ``convert(sources: list[Path]) -> Imported`` registered in
``IMPORTERS`` by its peer's name; ``monitor import PEER SOURCE`` (``monitor/cli_import.py``)
runs it, writes the document and its secrets, and prints the report. Converters are pure
(they read the source and return data); the CLI does the writing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monitor.ascode.keying import keyed as keyed  # importers make keys from names


@dataclass(frozen=True)
class Dropped:
    """One setting of the source not carried over: where it was (``monitor 'API' (id 7)``),
    which setting (``accepted_statuscodes``), and why, in words a user acts on."""

    where: str
    setting: str
    reason: str

    def line(self) -> str:
        return f"{self.where}: {self.setting}: {self.reason}"


@dataclass
class Imported:
    """What an importer made: the document (sections as docs/config-as-code.md describes them),
    the secrets its ``${VAR}`` references need (variable -> value), and what it dropped."""

    document: dict[str, Any] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)
    report: list[Dropped] = field(default_factory=list)

    def drop(self, where: str, setting: str, reason: str) -> None:
        self.report.append(Dropped(where, setting, reason))

    def secret(self, variable: str, value: str) -> str:
        """Keep ``value`` under ``variable`` and answer the reference the document holds; where
        an earlier secret has that name (keys alike: ops-slack, ops_slack), the next free
        ``variable_2``, ``_3``..., so no secret takes another's place."""
        name, n = variable, 1
        while name in self.secrets:
            n += 1
            name = f"{variable}_{n}"
        self.secrets[name] = value
        return "${" + name + "}"


class SourceError(Exception):
    """The source cannot be read as that tool's configuration: the message names the file and
    what is wrong (the CLI prints it and exits 1, no traceback)."""


Converter = Callable[[list[Path]], Imported]

# Each peer's module (its ``convert``), imported when used.
IMPORTERS: dict[str, str] = {
    "gatus": "monitor.ascode.importers.gatus",
    "uptimerobot": "monitor.ascode.importers.uptimerobot",
    "healthchecks": "monitor.ascode.importers.healthchecks",
    "kuma": "monitor.ascode.importers.kuma",
}
