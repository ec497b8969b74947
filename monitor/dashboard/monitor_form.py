"""A monitor's form for one type: its fields from the type's create body (``schema_form``), in
sections (what a monitor of the type is first, the rest under "More options"), and what the
template needs to show it (values, rows, the account's channels as checkboxes).

Which fields come first is said by name only for the common fields every type has; a type's
own fields (its ``Settings``) follow the name, the ones it requires first (an http monitor's
URL before its method and headers), each group in the order the type declares them, so a type
added later is laid out without a change here.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from monitor.checks import REGISTRY as CHECKS
from monitor.checks.http_stored import is_secret_header
from monitor.dashboard import schema_body, schema_form
from monitor.dashboard.schema_form import Field
from monitor.domain.schemas.monitors import CREATE_BODIES
from monitor.secrets import MASK

FIRST = ("name",)
THEN = ("interval_seconds", "timeout_seconds", "tags", "channel_ids")
ON_EDIT_NOT = ("paused",)  # pause and resume are buttons of their own on the edit page
BLANK_ROWS = 2  # empty rows of an editor a page shows (a button adds one more)
ROWS_FIELD = "blank_rows."  # hidden: how many empty rows an editor shows


@dataclass(frozen=True)
class Kind:
    kind: str
    title: str
    about: str


def kinds() -> list[Kind]:
    """The types a monitor can be, with the first sentence of each one's description."""
    out = []
    for kind, model in CREATE_BODIES.items():
        about = (model.__doc__ or "").replace("``", "").strip().split(". ")[0].split("\n\n")[0]
        title = kind.upper() if kind.upper() in schema_form.CAPITALS else schema_form.label_of(kind, {})
        out.append(Kind(kind, title, " ".join(about.split())))
    return out


@functools.cache
def schema(kind: str) -> Mapping[str, Any]:
    return CREATE_BODIES[kind].model_json_schema()


def fields(kind: str, channels: Sequence[tuple[str, str]], *, editing: bool) -> list[Field]:
    """The form's fields for ``kind``, with the account's channels as checkboxes."""
    check = CHECKS.get(kind)
    return schema_form.fields_of(
        schema(kind),
        skip=ON_EDIT_NOT if editing else (),
        choices={"channel_ids": list(channels)},
        secrets=check.secrets,
    )


@dataclass(frozen=True)
class Section:
    title: str
    fields: list[Field]
    more: bool = False  # shown folded (``<details>``) unless a field in it has an error


def sections(kind: str, all_fields: Sequence[Field]) -> list[Section]:
    by_name = {f.name: f for f in all_fields}
    declared = list(CHECKS.get(kind).Settings.model_fields)
    own = sorted(declared, key=lambda n: not (n in by_name and by_name[n].required))  # stable
    first = [by_name[n] for n in (*FIRST, *own, *THEN) if n in by_name and by_name[n].widget != "hidden"]
    taken = {f.name for f in first}
    hidden = [f for f in all_fields if f.widget == "hidden"]
    rest = [f for f in all_fields if f.name not in taken and f.widget != "hidden"]
    return [Section("", hidden), Section("Monitor", first), Section("More options", rest, more=True)]


@dataclass(frozen=True)
class Rows:
    """How many rows each row editor shows: those with values, then the empty ones."""

    filled: Mapping[str, int] = field(default_factory=dict)
    blank: Mapping[str, int] = field(default_factory=dict)

    def count(self, name: str) -> int:
        return self.filled.get(name, 0) + self.blank.get(name, BLANK_ROWS)

    def blank_of(self, name: str) -> int:
        return self.blank.get(name, BLANK_ROWS)


def rows_for(all_fields: Sequence[Field], values: Mapping[str, Any], posted: Mapping[str, Any] | None = None,
             more: str = "") -> Rows:  # fmt: skip
    """The rows to show: every row with values, the empty ones the page showed (one more for the
    editor whose "Add a row" was pressed)."""
    filled, blank = {}, {}
    for f in _all_rows(all_fields):
        filled[f.name] = schema_body.rows_in(f, values)
        shown = BLANK_ROWS
        if posted is not None:
            given = str(posted.get(ROWS_FIELD + f.name, "")).strip()
            shown = int(given) if given.isdigit() and int(given) <= 20 else BLANK_ROWS
        blank[f.name] = shown + (1 if more == f.name else 0)
    return Rows(filled, blank)


def _all_rows(all_fields: Sequence[Field]) -> list[Field]:
    return [f for f in all_fields if f.widget == "rows"]


def with_blank_rows(all_fields: Sequence[Field], values: Mapping[str, Any], rows: Rows) -> dict[str, Any]:
    """``values`` and each empty row's defaults (its checkboxes that are on by default)."""
    out = dict(values)
    for f in _all_rows(all_fields):
        for i in range(rows.filled.get(f.name, 0), rows.count(f.name)):
            out.update(schema_body.blank_row(f, f"{f.name}.{i}."))
    return out


def defaults(all_fields: Sequence[Field]) -> dict[str, Any]:
    """A new monitor's values: each field's default."""
    return schema_body.values_of(all_fields, {f.name: f.default for f in all_fields if f.default is not None})


def names(all_fields: Sequence[Field]) -> list[str]:
    """The top-level names the form shows (an error on ``assertions.1.value`` is on one of them)."""
    return [f.name for f in all_fields if f.widget != "hidden"]  # an error on ``type``: at the top


def posted(form: Any) -> dict[str, Any]:
    """A posted form (a MultiDict) as ``schema_body`` reads it: one value per name, a list for a
    name sent several times (a set of checkboxes)."""
    out: dict[str, Any] = {}
    for key in form:
        got = form.getall(key)
        out[key] = got if len(got) > 1 or key == "channel_ids" else got[0]
    return out


def masked(all_fields: Sequence[Field], values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` to show again, with the secret headers' values of a secret ``Name: value``
    field as ``MASK`` (as a read of the monitor shows them: sent back on an edit, the stored
    value is kept; on a new form, the domain asks for the value again). A password field is
    never filled (``schema_body``); this is the same rule for the headers typed."""
    out = dict(values)
    for f in _leaves(all_fields):
        text = out.get(f.name)
        if f.widget != "pairs" or not f.secret or not isinstance(text, str):
            continue
        lines = []
        for line in text.splitlines():
            name, colon, _ = line.partition(":")
            lines.append(f"{name}: {MASK}" if colon and is_secret_header(name.strip()) else line)
        out[f.name] = "\n".join(lines)
    return out


def _leaves(all_fields: Sequence[Field]) -> list[Field]:
    return [leaf for f in all_fields for leaf in ([f, *_leaves(f.children)] if f.widget == "group" else [f])]
