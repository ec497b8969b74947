"""The JSON Schema of the file format (``monitor config schema``, ``GET /api/v1/config/schema``),
made from the models the API validates with: each object's schema is its create body's, with
the fields that name objects by id turned into lists of keys and ``name`` optional (the key
stands for it). Editors (yaml-language-server, VS Code, JetBrains) complete and check files
with it; the files are still judged by the models themselves, which the schema follows.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import BaseModel

from monitor.ascode.keying import KEY_PATTERN
from monitor.domain.schemas.channels import ChannelCreate
from monitor.domain.schemas.maintenance import MaintenanceCreate
from monitor.domain.schemas.monitors import CREATE_BODIES
from monitor.domain.schemas.status_pages import StatusPageCreate

SCHEMA_ID = "https://monitor.invalid/schemas/config-v1.json"


def _keys(kind: str) -> dict[str, Any]:
    return {
        "type": "array",
        "items": {"type": "string", "pattern": KEY_PATTERN},
        "uniqueItems": True,
        "description": f"keys of {kind} in these files",
    }


def _rework(schema: dict[str, Any], refs: dict[str, tuple[str, str]]) -> dict[str, Any]:
    """``schema`` (an object's) with the id fields of ``refs`` (API field -> (file field, kind))
    as lists of keys, and ``name`` optional."""
    props = schema.get("properties", {})
    for api_field, (file_field, kind) in refs.items():
        props.pop(api_field, None)
        if file_field:
            props[file_field] = _keys(kind)
    props.pop("telegram_chat_id", None)
    required = [r for r in schema.get("required", []) if r != "name" and r not in refs]
    if required:
        schema["required"] = required
    else:
        schema.pop("required", None)
    return schema


def _collect(model: type[BaseModel] | Any, defs: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = model.model_json_schema(ref_template="#/$defs/{model}")
    defs.update(schema.pop("$defs", {}))
    return schema


@cache
def document_schema() -> dict[str, Any]:
    defs: dict[str, Any] = {}
    monitors = []
    for model in CREATE_BODIES.values():
        schema = _rework(_collect(model, defs), {"channel_ids": ("channels", "channels"),
                                                 "depends_on": ("depends_on", "monitors")})  # fmt: skip
        defs[f"File{model.__name__}"] = schema
        monitors.append({"$ref": f"#/$defs/File{model.__name__}"})
    channel_root = _collect(ChannelCreate, defs)
    for ref in channel_root.get("oneOf", channel_root.get("anyOf", [])):
        name = ref["$ref"].rsplit("/", 1)[-1]
        _rework(defs[name], {})
    window = _rework(_collect(MaintenanceCreate, defs), {"monitor_ids": ("monitors", "monitors")})
    page = _rework(_collect(StatusPageCreate, defs), {})
    # A page's groups are in defs only once the page's schema is collected.
    _rework(defs["Group"], {"monitor_ids": ("monitors", "monitors")})

    def section(item: dict[str, Any], what: str) -> dict[str, Any]:
        return {
            "type": "object",
            "description": f"{what} by key",
            "propertyNames": {"pattern": KEY_PATTERN},
            "additionalProperties": item,
        }

    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "monitor configuration (monitor apply)",
        "description": "docs/config-as-code.md. Secrets as ${VARIABLE} or file:/path references.",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "version": {"const": 1},
            "channels": section({k: v for k, v in channel_root.items() if k != "title"}, "alert channels"),
            "monitors": section({"anyOf": monitors}, "monitors"),
            "maintenance": section(window, "maintenance windows"),
            "status_pages": section(page, "status pages"),
        },
        "$defs": defs,
    }
