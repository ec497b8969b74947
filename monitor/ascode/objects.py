"""The four kinds of object a document holds, each as the plan and the export see it.

For each kind (:class:`Kind`): how a file's object becomes the API's body (references by key
turned into the field of ids), how it is validated (by the domain's own ``prepare``, so a file
is judged by exactly the rules of the API: the same models, the same vetting of targets), and
its **canonical form**: the create body as its model dumps it, every default filled in,
references as keys. A desired object and a stored one are compared in that form, so a file that
leaves a field at its default and a monitor made with it stated are the same.

Secrets are found by value: the secret strings of what the kind stores sealed (of a monitor's
``Check.to_stored`` secrets, ``secrets.monitor_secret_strings``: not auth's type and username
nor a secret header's name; a channel kind's ``secrets`` fields). A plan never shows them, an
export writes them as references, and the file must have written them as references.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, time
from enum import Enum
from typing import Any

from pydantic import BaseModel, SecretStr

from monitor.channels import REGISTRY as CHANNEL_KINDS
from monitor.channels.base import config_values
from monitor.checks import REGISTRY as CHECKS
from monitor.domain import channels, maintenance, monitors, status_pages
from monitor.domain.context import Deps
from monitor.domain.monitor_types import validation_context
from monitor.domain.schemas.monitors import validate_create
from monitor.secrets import SecretBox, monitor_secret_strings, open_monitor_secrets

# What a reference to an object the files do not name (an unmanaged channel attached by hand)
# reads as in a plan: its id.
UNKEYED = "#"


_SCALARS = frozenset({str, int, float, bool, type(None)})


def plain(value: Any) -> Any:
    """``value`` as JSON values: models dumped, secrets in clear, times as ISO text."""
    # The common shapes first, by exact type (every stored monitor goes through here).
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict:
        return {str(k): plain(v) for k, v in value.items()}
    if kind is list:
        return [plain(v) for v in value]
    if isinstance(value, BaseModel):
        return plain(value.model_dump(by_alias=True))
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(v) for v in value]
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    return value


def leaves(value: Any) -> Iterable[str]:
    """The strings within ``value`` (a secret's parts)."""
    if isinstance(value, str):
        if value:
            yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from leaves(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from leaves(item)


@dataclass
class Shaped:
    """An object in canonical form, the values in it that are secrets, and (desired only) the
    API body it is created with, references still keys."""

    canonical: dict[str, Any]
    secrets: frozenset[str] = frozenset()
    refs: dict[str, list[str]] = field(default_factory=dict)  # by file field: the keys it names
    # Fields the file leaves to the system (a generated signing secret, a window's first start
    # when not given): kept as stored, never compared.
    ignored: frozenset[str] = frozenset()


class Ids:
    """Key <-> id of each kind, for references both ways."""

    def __init__(self) -> None:
        self.by_key: dict[str, dict[str, int]] = {}
        self.by_id: dict[str, dict[int, str]] = {}

    def add(self, kind: str, key: str, object_id: int) -> None:
        self.by_key.setdefault(kind, {})[key] = object_id
        self.by_id.setdefault(kind, {})[object_id] = key

    def keys(self, kind: str, ids: Iterable[int]) -> list[str]:
        known = self.by_id.get(kind, {})
        return [known.get(i, f"{UNKEYED}{i}") for i in ids]

    def ids(self, kind: str, keys: Iterable[str]) -> list[int]:
        known = self.by_key.get(kind, {})
        out = []
        for key in keys:
            if key.startswith(UNKEYED) and key[1:].isdigit():
                out.append(int(key[1:]))
            else:
                out.append(known[key])
        return out


# -- channels ---------------------------------------------------------------------------------------


async def channel_desired(deps: Deps, key: str, obj: dict[str, Any]) -> Shaped:
    body = {"name": key, **obj}
    spec = await channels.prepare(deps, body)
    kind = CHANNEL_KINDS[spec.kind]
    config = config_values(spec.config)
    # A secret the kind makes itself (a webhook's signing secret) left out of the file is not
    # the file's: it is made once and kept, never compared.
    given = obj.get("config") or {}
    ignored = frozenset(f"config.{n}" for n in kind.secrets if n not in given)
    for name in ignored:
        config.pop(name.removeprefix("config."), None)
    secrets = frozenset(s for n in kind.secrets for s in leaves(config.get(n)))
    return Shaped({"kind": spec.kind, "name": spec.name, "config": config}, secrets, ignored=ignored)


def channel_current(box: SecretBox, row: Mapping[str, Any]) -> Shaped:
    kind = CHANNEL_KINDS.get(row["kind"])
    config = dict(row["config"])
    if kind is None:
        return Shaped({"kind": row["kind"], "name": row["name"], "config": config})
    for name in kind.secrets:
        if isinstance(config.get(name), str):
            config[name] = box.open(config[name])
    try:
        spec: Any = kind.config.model_validate(config)
        config = config_values(spec)
    except ValueError:
        pass  # stored under older rules: compared as stored
    secrets = frozenset(s for n in kind.secrets for s in leaves(config.get(n)))
    return Shaped({"kind": row["kind"], "name": row["name"], "config": config}, secrets)


# -- monitors ---------------------------------------------------------------------------------------

_REF_FIELDS = {"channels": "channel_ids", "depends_on": "depends_on"}
_API_ONLY = ("channel_ids", "telegram_chat_id", "depends_on")


def _keys(value: Any, *, ordered: bool = True) -> list[Any]:
    """A file's list of keys as the database keeps it: each once, first place kept (the order
    of ``depends_on``, a window's or a group's monitors); ``ordered=False``: sorted, where the
    database keeps no order (a monitor's channels are rows of monitor_channels). A value that
    is no list of keys is kept as given (``applying._references`` reports it)."""
    if not isinstance(value, list) or not all(isinstance(k, str) for k in value):
        return list(value) if isinstance(value, list) else []
    unique = list(dict.fromkeys(value))
    return unique if ordered else sorted(unique)


def _monitor_canonical(spec: Any) -> dict[str, Any]:
    return plain(spec.model_dump(by_alias=True, exclude=set(_API_ONLY)))


async def monitor_desired(deps: Deps, key: str, obj: dict[str, Any]) -> Shaped:
    # A monitor's channels are a set (stored in a join table, read back in id order): compared,
    # planned and exported sorted by key, so a file listing them in another order is not a change.
    refs = {"channels": _keys(obj.get("channels"), ordered=False), "depends_on": _keys(obj.get("depends_on"))}
    body = {"name": key, **{k: v for k, v in obj.items() if k not in _REF_FIELDS}}
    # Stand-in ids, as many as the file names, so the API's limits on these lists (at most 20)
    # are judged with the rest; a dry run passed 21 channels that the apply then refused.
    body |= {api: list(range(1, len(refs[f]) + 1)) for f, api in _REF_FIELDS.items() if refs[f]}
    prepared = await monitors.prepare(deps, body)
    canonical = _monitor_canonical(prepared.spec) | refs
    return Shaped(canonical, monitor_secret_strings(prepared.secrets), refs)


def monitor_current(deps: Deps, row: Mapping[str, Any], ids: Ids, channel_ids: list[int]) -> Shaped:
    check = CHECKS.get(row["type"])
    secrets = open_monitor_secrets(deps.secret_box, row["sealed"]) if row["sealed"] else None
    body: dict[str, Any] = {
        c: row[c] for c in monitors.COLUMNS if c not in ("url", "depends_on")
    } | check.whole(row["url"], row["settings"], secrets)
    refs = {
        "channels": sorted(ids.keys("channels", channel_ids), key=str),
        "depends_on": ids.keys("monitors", row["depends_on"]),
    }
    try:
        spec = validate_create(plain(body), validation_context(deps.settings))
        canonical = _monitor_canonical(spec)
    except ValueError:
        canonical = plain(body)  # stored under older rules: compared as stored
    return Shaped(canonical | refs, monitor_secret_strings(secrets), refs)


# -- maintenance windows ----------------------------------------------------------------------------


async def window_desired(deps: Deps, key: str, obj: dict[str, Any]) -> Shaped:
    refs = {"monitors": _keys(obj.get("monitors"))}
    body = {"name": key, **{k: v for k, v in obj.items() if k != "monitors"}}
    spec, columns = await maintenance.prepare(body)
    # Tags kept once each, as maintenance.create stores them.
    tags = list(dict.fromkeys(spec.tags))
    shown = {"name": spec.name, "tags": tags, "notify": spec.notify, "public_text": spec.public_text,
             "announce_hours": spec.announce_hours}  # fmt: skip
    canonical = maintenance.as_body(columns | shown)
    ignored: frozenset[str] = frozenset()
    if spec.recurring is not None and spec.recurring.starts_at is None:
        # Left out, the first start is the day it is made: not the file's to compare.
        canonical["recurring"].pop("starts_at", None)
        ignored = frozenset({"recurring.starts_at"})
    canonical.pop("monitor_ids", None)
    return Shaped(canonical | refs, refs=refs, ignored=ignored)


def window_current(row: Mapping[str, Any], ids: Ids) -> Shaped:
    canonical = maintenance.as_body(row)
    canonical.pop("monitor_ids", None)
    refs = {"monitors": ids.keys("monitors", row["monitor_ids"])}
    return Shaped(canonical | refs, refs=refs)


# -- status pages -----------------------------------------------------------------------------------


def _page_groups(groups: list[dict[str, Any]], named: list[list[str]]) -> list[dict[str, Any]]:
    return [
        {"name": g["name"], "monitors": keys, "tags": g["tags"]}
        for g, keys in zip(groups, named, strict=True)
    ]


async def page_desired(deps: Deps, key: str, obj: dict[str, Any]) -> Shaped:
    groups = obj.get("groups")
    named: list[list[str]] = []
    body = dict(obj)
    if isinstance(groups, list):
        body["groups"] = []
        for group in groups:
            if isinstance(group, dict):
                named.append(_keys(group.get("monitors")))
                group = {k: v for k, v in group.items() if k != "monitors"}
            body["groups"].append(group)
    spec = status_pages.prepare(deps, body)
    canonical = plain(spec.model_dump(by_alias=True, exclude={"groups"}))
    stored = status_pages.groups_of(spec.groups)
    canonical["groups"] = _page_groups(stored, named)
    return Shaped(canonical, refs={f"groups.{i}.monitors": k for i, k in enumerate(named)})


def page_current(row: Mapping[str, Any], ids: Ids) -> Shaped:
    canonical = {f: row[f] for f in status_pages.FIELDS if f != "groups"}
    groups = list(row["groups"])
    named = [ids.keys("monitors", g.get("monitor_ids", [])) for g in groups]
    canonical["groups"] = _page_groups(groups, named)
    return Shaped(canonical, refs={f"groups.{i}.monitors": k for i, k in enumerate(named)})
