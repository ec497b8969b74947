"""``monitor export``: an account as the file format, in a stable order.

Each object is its canonical form (``objects.py``) less what its model would fill in anyway
(a field at its default is left out, within assertions, steps and schedules too, and a name
that is the key), under its key (managed: the files'; made by hand: from its name), in key
order, fields in the model's order. Secrets are written as ``${VARIABLE}``
references (``CHANNEL_OPS_SLACK_URL``); their values go, only when asked for, into an env
file. So export, apply on an empty account, export again gives the same text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args, get_origin

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
    if obj.get("name") == key:
        del obj["name"]  # left out, the name is the key
    return _referenced(obj, shaped.secrets, f"{_PREFIX[section]}_{key}", out)


def _trimmed(values: Mapping[str, Any], model: type[BaseModel] | None) -> dict[str, Any]:
    """``values`` less the fields at their model's default, and so within each field that is
    a model or a list of them (an assertion, a step, a schedule)."""
    if model is None:
        return dict(values)
    out = {}
    for name, value in values.items():
        info = model.model_fields.get(name)
        if info is None:
            info = next((f for f in model.model_fields.values() if f.alias == name), None)
        if info is not None and not info.is_required():
            default = info.get_default(call_default_factory=True)
            if default is not PydanticUndefined and plain(default) == value:
                continue
        out[name] = _within(value, info.annotation) if info is not None else value
    return out


def _within(value: Any, annotation: Any) -> Any:
    """``value`` (of a field of ``annotation``) with its models' defaults left out."""
    models = _models(annotation)
    if not models:
        return value
    if isinstance(value, list):
        return [_within(item, annotation) for item in value]
    if isinstance(value, Mapping):
        # The one model the value can be: a union's member is told by its Literal fields (type:, action:).
        fitting = [m for m in models if all(value.get(n) in get_args(f.annotation)
                                            for n, f in m.model_fields.items()
                                            if get_origin(f.annotation) is Literal)]  # fmt: skip
        return _trimmed(value, fitting[0]) if len(fitting) == 1 else dict(value)
    return value


def _models(annotation: Any) -> list[type[BaseModel]]:
    """The models within an annotation (``list[Annotated[Keyword | Regex, ...]]``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _models(arg)]


def _referenced(value: Any, secrets: frozenset[str], path: str, out: Exported) -> Any:
    """``value`` with each secret leaf as a ``${VARIABLE}`` named after its path."""
    if isinstance(value, str) and value in secrets:
        base = variable = _VARIABLE.sub("_", path.upper()).strip("_")
        n = 1
        # Keys alike (ops-hook, ops_hook) make one name: the later secret takes the next free one.
        while out.secrets.get(variable, value) != value:
            n += 1
            variable = f"{base}_{n}"
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
