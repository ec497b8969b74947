"""The OpenAPI description of configuration as code over HTTP: applying files (or planning them,
with ``dry_run``) and the JSON Schema of their format (the routes of ``api/apply.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode

from monitor.api.apply import MAX_BODY_BYTES, PATH, SCHEMA_PATH
from monitor.domain.schemas import config as models

if TYPE_CHECKING:  # openapi.py imports this module for its MODELS
    from monitor.api.openapi import _Builder as Builder

MODELS: list[tuple[type[BaseModel], JsonSchemaMode]] = [
    (models.ApplyRequest, "validation"),
    (models.ApplyPlan, "serialization"),
]
EXAMPLE = {
    "files": {
        "monitors.yaml": "version: 1\nmonitors:\n  homepage:\n    name: Homepage\n"
        "    url: https://example.com/\n    interval_seconds: 60\n    tags: [web]\n"
    },
    "secrets": {},
    "dry_run": False,
    "prune": False,
}
INVALID = (
    "The body breaks the schema (`invalid`, `field` naming the field at fault), or the files cannot "
    "be applied (`invalid`, nothing applied): `problems` lists each, at its file, line and column, "
    "with the field (an unknown field, a wrong type, a key that does not exist, an unset "
    "`${NAME}`, a `file:` reference, a secret written inline, YAML that does not parse)."
)


def add_config(b: Builder) -> None:
    from monitor.api.openapi import _json

    r = b.refs
    # fmt: off
    b.add("post", PATH, "applyConfig",
          "Make the account what the files say (docs/config-as-code.md): judge them whole, plan, and "
          "apply the plan in one transaction (editor and up; a dry run, viewer and up). The body may "
          f"be up to {MAX_BODY_BYTES // 2**20} MiB", tag="config",
          ok={200: _json(r["ApplyPlan"], "The plan, applied unless a dry run (`applied`); no secret "
                         "value sent appears in it.")},
          body=("ApplyRequest", EXAMPLE))
    b.add("get", SCHEMA_PATH, "getConfigSchema",
          "The JSON Schema (draft 2020-12) of the files `POST /api/v1/apply` and `monitor apply` read, "
          "for editors (viewer and up)", tag="config",
          ok={200: _json({"type": "object"}, "The schema; the same as `monitor config schema` prints.")})
    # fmt: on
    b.paths[PATH]["post"]["responses"]["422"]["description"] = INVALID
