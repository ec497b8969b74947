"""Configuration as code over HTTP (``POST /api/v1/apply``): the body that carries the files and
the values of their references, and the answers: the plan, and each problem of files that
cannot be applied.

The files are the text a user keeps in a repository, sent as they are (not stripped: a line
and column must be the file's own). The server never reads its own environment or files for a
request's references: ``secrets`` holds the value of each ``${NAME}``, and ``file:`` is refused.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, field_validator

from monitor.domain.schemas.common import Body, Out

MAX_FILES = 200
MAX_SECRETS = 1000
# What a reference's name may be (ascode/reading.py's ${NAME}).
VARIABLE = r"^[A-Za-z_][A-Za-z0-9_]{0,199}$"
FILE_NAME = r"^[^\x00-\x1f/\\]{1,255}$"

FileName = Annotated[str, Field(pattern=FILE_NAME)]
Variable = Annotated[str, Field(pattern=VARIABLE)]


class ApplyRequest(Body):
    """The files to apply and the values of their ``${NAME}`` references."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)

    files: dict[FileName, str] = Field(
        min_length=1,
        max_length=MAX_FILES,
        description="file name -> its YAML (or JSON) text, merged in name order; the names are "
        "only where problems are placed (`monitors.yaml:14:5`)",
    )
    secrets: dict[Variable, str] = Field(
        default_factory=dict,
        max_length=MAX_SECRETS,
        description="the value of each `${NAME}` the files refer to (the server's environment is "
        "never read; `file:` references are refused); never part of an answer",
    )
    dry_run: bool = Field(False, description="answer the plan and change nothing (viewer and up)")
    prune: bool = Field(False, description="delete the managed objects the files no longer name")

    @field_validator("files", "secrets")
    @classmethod
    def _no_nul_text(cls, value: dict[str, str]) -> dict[str, str]:
        if any("\x00" in text for text in value.values()):
            raise ValueError("may not contain NUL characters")
        return value


# -- answers -----------------------------------------------------------------------------------

Kind = Literal["channels", "monitors", "maintenance", "status_pages"]


class FieldChange(Out):
    field: str = Field(description="dotted path of the field in the file's terms (`config.url`)")
    old: Any = Field(description="the stored value; `********` for a secret")
    new: Any = Field(description="the files' value; `********` for a secret")
    drift: bool = Field(description="the stored value is not what the last apply set")


class Change(Out):
    action: Literal["create", "update", "replace", "delete"]
    kind: Kind
    key: str
    id: int | None = Field(description="the object's id; null for one still to create")
    note: str | None
    fields: list[FieldChange]


class Counts(Out):
    create: int
    update: int
    replace: int
    delete: int
    unchanged: int


class Kept(Out):
    kind: Kind
    key: str


class ApplyPlan(Out):
    """What the files change, made against the account as stored: applied unless a dry run
    (or nothing to change). An empty ``changes`` is "no changes"."""

    applied: bool
    changes: list[Change]
    counts: Counts
    kept: list[Kept] = Field(description="managed objects the files no longer name, kept without prune")


class ConfigProblem(Out):
    """One thing wrong with the files, at its place (1-based line and column)."""

    file: str | None
    line: int | None
    column: int | None
    field: str | None = Field(description="dotted path in the files (`monitors.web.interval_seconds`)")
    message: str
