"""``monitor export``: an account as the file format, in a stable order.

Each object is its canonical form (``objects.py``) less what its model would fill in anyway
(a field at its default is left out), under its key (managed: the files'; made by hand: from
its name), in key order, fields in the model's order. Secrets are written as ``${VARIABLE}``
references (``CHANNEL_OPS_SLACK_URL``); their values go, only when asked for, into an env
file. So export, apply on an empty account, export again gives the same text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from monitor.ascode.objects import Shaped, plain
from monitor.ascode.state import Account
from monitor.channels import REGISTRY as CHANNEL_KINDS
from monitor.domain.schemas.maintenance import MaintenanceCreate
from monitor.domain.schemas.monitors import CREATE_BODIES
from monitor.domain.schemas.status_pages import StatusPageCreate

_VARIABLE = re.compile(r"[^A-Z0-9]+")
_PREFIX = {"channels": "CHANNEL", "monitors": "MONITOR", "maintenance": "MAINTENANCE", "status_pages": "PAGE"}
# A reference field left out when it names nothing.
_EMPTY_REFS = ("channels", "depends_on", "monitors")


@dataclass
class Exported:
    document: dict[str, Any] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)  # variable -> value


def export(account: Account) -> Exported:
    out = Exported({"version": 1})
    for section in ("channels", "monitors", "maintenance", "status_pages"):
        items = {key: _object(section, key, shaped, out) for key, shaped in account.keyed(section)}
        if items:
            out.document[section] = items
    return out


def _object(section: str, key: str, shaped: Shaped, out: Exported) -> dict[str, Any]:
    canonical = shaped.canonical
    if section == "monitors":
        model = CREATE_BODIES.get(canonical.get("type", ""))
        rest = _trimmed(canonical, model)
        # Type and name first, as a person writes them; the type always, though http is the default.
        obj = {"type": canonical["type"], "name": canonical["name"]}
        obj.update((k, v) for k, v in rest.items() if k not in obj)
    elif section == "channels":
        obj = dict(canonical)
        kind = CHANNEL_KINDS.get(canonical["kind"])
        obj["config"] = _trimmed(canonical["config"], kind.config if kind else None)
    elif section == "maintenance":
        obj = _trimmed(canonical, MaintenanceCreate)
    else:
        obj = _trimmed(canonical, StatusPageCreate)
    for name in _EMPTY_REFS:
        if obj.get(name) == []:
            del obj[name]
    return _referenced(obj, shaped.secrets, f"{_PREFIX[section]}_{key}", out)


def _trimmed(values: Mapping[str, Any], model: type[BaseModel] | None) -> dict[str, Any]:
    """``values`` less the fields at their model's default."""
    if model is None:
        return dict(values)
    defaults = _defaults(model)
    return {name: value for name, value in values.items() if defaults.get(name, _NONE) != value}


_NONE = object()


@cache
def _defaults(model: type[BaseModel]) -> dict[str, Any]:
    """The defaults of ``model``'s optional fields as JSON values, by name (or, for a name no
    field has, by alias): made once per model, as a default factory's signature is inspected
    each time one is asked for (half of an export's CPU, with 10,000 monitors)."""
    by_name: dict[str, Any] = {}
    by_alias: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        default = PydanticUndefined if info.is_required() else info.get_default(call_default_factory=True)
        if default is PydanticUndefined:
            by_name[name] = _NONE
            continue
        by_name[name] = plain(default)
        if info.alias:
            by_alias.setdefault(info.alias, by_name[name])
    return {**{a: d for a, d in by_alias.items() if a not in by_name}, **by_name}


def _referenced(value: Any, secrets: frozenset[str], path: str, out: Exported) -> Any:
    """``value`` with each secret leaf as a ``${VARIABLE}`` named after its path."""
    if isinstance(value, str) and value in secrets:
        variable = _VARIABLE.sub("_", path.upper()).strip("_")
        out.secrets[variable] = value
        return "${" + variable + "}"
    if isinstance(value, Mapping):
        # A channel's config is where its secrets are: CHANNEL_OPS_SLACK_URL, not ..._CONFIG_URL.
        return {
            k: _referenced(v, secrets, path if k == "config" else f"{path}_{k}", out)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_referenced(v, secrets, f"{path}_{i}", out) for i, v in enumerate(value)]
    return value
