"""What an apply would change: the plan, from what the files want and what is stored. Pure.

Objects are compared in canonical form (``objects.py``), field by field: a mapping is compared
key by key (``config.url``), a list or a value whole. A managed object keeps what the last
apply set (``applied``): a field where the stored value differs from it was changed since by
someone else (the API, the dashboard), and the plan says so (drift) beside putting it back.
Secret values never appear in a plan: a change to one reads ``(secret)``.

An object the files name and nothing stores is created; one whose type (or channel kind)
changed is replaced, as the API cannot change a type; a managed one the files no longer name is
deleted with ``prune`` and otherwise kept, and said to be; objects never applied are not
touched.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from monitor.ascode.objects import Shaped, leaves
from monitor.ascode.reading import SECTIONS, Place
from monitor.secrets import MASK

Action = Literal["create", "update", "replace", "delete", "adopt"]
# What a kind's objects are called in a plan's lines.
NOUNS = {"channels": "channel", "monitors": "monitor", "maintenance": "maintenance window",
         "status_pages": "status page"}  # fmt: skip
# The field whose change the API cannot make in place.
REPLACED_BY = {"channels": "kind", "monitors": "type"}


@dataclass(frozen=True)
class FieldChange:
    path: str
    old: Any
    new: Any
    secret: bool = False
    drift: bool = False  # the stored value is not what the last apply set

    def text(self) -> str:
        if self.secret:
            shown = "(secret changed)"
        else:
            shown = f"{_short(self.old)} -> {_short(self.new)}"
        return f"{self.path}: {shown}{'  (changed outside apply)' if self.drift else ''}"


@dataclass
class Change:
    section: str
    key: str
    action: Action
    object_id: int | None = None
    fields: list[FieldChange] = field(default_factory=list)
    place: Place | None = None
    note: str = ""

    def lines(self) -> list[str]:
        sign = {"create": "+", "update": "~", "replace": "-/+", "delete": "-", "adopt": "="}[self.action]
        head = f"{sign} {self.action} {NOUNS[self.section]} {self.key}"
        if self.object_id is not None:
            head += f" (id {self.object_id})"
        if self.note:
            head += f": {self.note}"
        return [head, *(f"    {f.text()}" for f in self.fields)]

    def as_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "kind": self.section,
            "key": self.key,
            "id": self.object_id,
            "note": self.note or None,
            "fields": [
                {
                    "field": f.path,
                    "old": MASK if f.secret else f.old,
                    "new": MASK if f.secret else f.new,
                    "drift": f.drift,
                }
                for f in self.fields
            ],
        }


@dataclass
class Plan:
    changes: list[Change] = field(default_factory=list)
    unchanged: int = 0
    kept: list[tuple[str, str]] = field(default_factory=list)  # managed, not in the files, no prune
    # Managed once, deleted by hand since, and no longer in the files: their records are dropped.
    forgotten: list[tuple[str, str]] = field(default_factory=list)
    applied: bool = False

    @property
    def empty(self) -> bool:
        return not self.changes

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(("create", "update", "replace", "delete", "adopt"), 0)
        for change in self.changes:
            counts[change.action] += 1
        return counts

    def text(self) -> str:
        lines = [line for change in self.changes for line in change.lines()]
        for section, key in self.kept:
            lines.append(f"  keep {NOUNS[section]} {key}: not in the files (--prune deletes it)")
        c = self.counts()
        if self.empty:
            lines.append(f"no changes ({self.unchanged} object(s) as the files say)")
        else:
            done = self.applied
            words = [
                (c[a], a, "d" if a.endswith("e") else "ed")
                for a in ("create", "update", "replace", "delete", "adopt")
                if a != "adopt" or c[a]
            ]
            told = ", ".join(f"{n} {a}{s}" if done else f"{n} to {a}" for n, a, s in words)
            lines.append(f"{'applied' if done else 'plan'}: {told}; {self.unchanged} unchanged")
        return "\n".join(lines) + "\n"

    def as_json(self) -> dict[str, Any]:
        return {
            "applied": self.applied,
            "changes": [c.as_json() for c in self.changes],
            "counts": self.counts() | {"unchanged": self.unchanged},
            "kept": [{"kind": s, "key": k} for s, k in self.kept],
        }


@dataclass(frozen=True)
class Stored:
    """A managed object as stored: its id, canonical form, and what the last apply set."""

    object_id: int
    shaped: Shaped | None  # None: the object is gone (deleted by hand)
    applied: Mapping[str, Any] | None


def diff(
    new: Mapping[str, Any],
    old: Mapping[str, Any],
    applied: Mapping[str, Any] | None,
    secrets: frozenset[str],
    ignored: frozenset[str] = frozenset(),
    prefix: str = "",
) -> list[FieldChange]:
    """The fields that differ between ``old`` and ``new``, deepest mapping first; those in
    ``ignored`` (dotted paths) are not compared."""
    changes: list[FieldChange] = []
    for name in [*new, *(k for k in old if k not in new)]:
        a, b = old.get(name), new.get(name)
        was = applied.get(name) if isinstance(applied, Mapping) else None
        path = f"{prefix}{name}"
        if path in ignored:
            continue
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            changes.extend(
                diff(b, a, was if isinstance(was, Mapping) else None, secrets, ignored, f"{path}.")
            )
            continue
        if a == b:
            continue
        secret = _holds(a, secrets) or _holds(b, secrets)
        drift = applied is not None and name in applied and was != a and was != MASK
        changes.append(FieldChange(path, a, b, secret, drift))
    return changes


def _holds(value: Any, secrets: frozenset[str]) -> bool:
    return any(leaf in secrets for leaf in leaves(value))


def masked(value: Any, secrets: frozenset[str]) -> Any:
    """``value`` with every secret leaf as ``MASK``: what ``applied`` keeps."""
    if isinstance(value, str):
        return MASK if value in secrets else value
    if isinstance(value, Mapping):
        return {k: masked(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [masked(v, secrets) for v in value]
    return value


def make_plan(
    desired: Mapping[str, Mapping[str, Shaped]],
    stored: Mapping[str, Mapping[str, Stored]],
    *,
    prune: bool,
    places: Mapping[tuple[str, str], Place] | None = None,
    adoptable: Mapping[str, Mapping[str, Stored]] | None = None,
) -> Plan:
    """The plan that makes ``stored`` (managed objects by kind and key) what ``desired`` says.

    ``adoptable`` (``--adopt``): objects made by hand under the keys an export gives them; a
    key of the files that names none of the managed ones but one of these takes that object
    under management (changed to what the files say) instead of making a second one."""
    plan = Plan()
    places = places or {}
    adoptable = adoptable or {}
    for section in SECTIONS:
        want, have = desired.get(section, {}), stored.get(section, {})
        for key, shaped in want.items():
            place = places.get((section, key))
            old = have.get(key)
            found = adoptable.get(section, {}).get(key)
            if (old is None or old.shaped is None) and found is not None and found.shaped is not None:
                secrets = shaped.secrets | found.shaped.secrets
                fields = diff(shaped.canonical, found.shaped.canonical, None, secrets, shaped.ignored)
                replaced = REPLACED_BY.get(section)
                if replaced and any(f.path == replaced for f in fields):
                    note = "made by hand, of another " + replaced
                    plan.changes.append(Change(section, key, "replace", found.object_id, fields, place, note))
                else:
                    note = "made by hand; managed from now on"
                    plan.changes.append(Change(section, key, "adopt", found.object_id, fields, place, note))
                continue
            if old is None or old.shaped is None:
                note = "deleted outside apply; made again" if old is not None else ""
                plan.changes.append(Change(section, key, "create", place=place, note=note))
                continue
            secrets = shaped.secrets | old.shaped.secrets
            fields = diff(shaped.canonical, old.shaped.canonical, old.applied, secrets, shaped.ignored)
            if not fields:
                plan.unchanged += 1
                continue
            replaced = REPLACED_BY.get(section)
            action: Action = "replace" if replaced and any(f.path == replaced for f in fields) else "update"
            plan.changes.append(Change(section, key, action, old.object_id, fields, place))
        for key, old in have.items():
            if key in want:
                continue
            if old.shaped is None:
                plan.forgotten.append((section, key))
                continue
            if prune:
                plan.changes.append(Change(section, key, "delete", old.object_id))
            else:
                plan.kept.append((section, key))
    return plan


def _short(value: Any, limit: int = 80) -> str:
    text = "(none)" if value is None else repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
