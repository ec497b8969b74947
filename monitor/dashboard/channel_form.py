"""A channel kind's settings as form fields, read from its pydantic model's JSON schema by the
monitor forms' walker (``schema_form``), so a kind added to ``monitor.channels`` gets its form
without a template of its own.

Each property of the kind's ``config`` model becomes one field named ``config.<property>`` (the
name a domain error gives, so the message lands next to it): a string is a text input (a
password input when the kind names it a secret or the schema says ``format: password``), an
integer a number input, an ``enum`` a select, a list of strings a textarea of one item a line
(or comma-separated),
a map of strings (extra headers) a textarea of ``Name: value`` lines. An optional field left
empty is left out (the model's default applies).

Secrets are never put back into a form. On an edit, a secret left empty is left out of the
patch, which ``domain.channels.patched`` reads as "keep the stored one"; an optional one whose
"clear" checkbox (``config.<property>.clear``) is ticked is sent as ``null``: removed, or made
anew when the kind makes it (a webhook's signing secret), and then shown once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from monitor.channels.base import ChannelKind
from monitor.dashboard import schema_form

PREFIX = "config."
# An edit form's checkbox beside an optional secret: remove the stored value.
CLEAR = ".clear"
# The widgets the channel form draws; any other (a URL, a long text, a JSON value) is a text input.
WIDGETS = frozenset({"text", "password", "number", "select", "lines", "pairs"})


@dataclass(frozen=True)
class Field:
    name: str  # the form's field: config.<prop>
    prop: str
    label: str
    hint: str
    widget: str  # text | password | number | select | lines | pairs
    required: bool
    secret: bool
    options: tuple[tuple[str, str], ...] = ()
    default: Any = None
    minimum: int | None = None
    maximum: int | None = None


def _bound(attrs: Mapping[str, str], name: str) -> int | None:
    return int(float(attrs[name])) if name in attrs else None


def fields(kind: ChannelKind) -> list[Field]:
    """The kind's config model walked as a monitor type's is (``schema_form``: the same labels,
    hints, widgets and secrets), named ``config.<property>``."""
    found = []
    for f in schema_form.fields_of(kind.config.model_json_schema(), secrets=kind.secrets):
        widget = f.widget if f.widget in WIDGETS else "text"
        found.append(
            Field(
                name=PREFIX + f.name,
                prop=f.name,
                label=f.label,
                hint=f.hint,
                widget="password" if f.secret and widget == "text" else widget,
                required=f.required,
                secret=f.secret,
                options=f.options,
                default=f.default,
                minimum=_bound(f.attrs, "min"),
                maximum=_bound(f.attrs, "max"),
            )
        )
    return found


def _value(field: Field, text: str) -> Any:
    if field.widget == "number":
        try:
            return int(text)
        except ValueError:
            return text  # the model says what is wrong with it, next to the field
    if field.widget == "lines":  # one per line or comma-separated, as a monitor form's
        return [item.strip() for item in schema_form.SPLIT.split(text) if item.strip()]
    if field.widget == "pairs":
        pairs: dict[str, str] = {}
        for line in text.splitlines():
            if not line.strip():
                continue
            name, _, value = line.partition(":")
            pairs[name.strip()] = value.strip()
        return pairs
    return text


def config_of(kind: ChannelKind, posted: Mapping[str, str], *, editing: bool) -> dict[str, Any]:
    """The ``config`` a form posted: empty optional fields left out (their default applies; an
    empty secret on an edit keeps the stored one)."""
    config: dict[str, Any] = {}
    for field in fields(kind):
        if editing and field.secret and not field.required and posted.get(field.name + CLEAR) == "true":
            config[field.prop] = None  # removed; one the kind makes is made anew, shown once
            continue
        text = posted.get(field.name, "")
        text = text if field.widget in ("lines", "pairs") else text.strip()
        if not text.strip():
            if field.required and not (editing and field.secret):
                config[field.prop] = "" if field.widget not in ("lines", "pairs") else []
            continue
        config[field.prop] = _value(field, text)
    return config


def defaults(kind: ChannelKind) -> dict[str, str]:
    """A new form's values: each field's default (a secret has none to show)."""
    return {f.name: str(f.default) for f in fields(kind) if f.default is not None and not f.secret}


def values_of(kind: ChannelKind, config: Mapping[str, Any]) -> dict[str, str]:
    """A stored config as the edit form's values: never a secret."""
    shown: dict[str, str] = {}
    for field in fields(kind):
        value = config.get(field.prop)
        if field.secret or value is None:
            continue
        if field.widget == "lines":
            shown[field.name] = "\n".join(str(v) for v in value)
        elif field.widget == "pairs":
            shown[field.name] = "\n".join(f"{k}: {v}" for k, v in value.items())
        else:
            shown[field.name] = str(value)
    return shown


def posted_values(kind: ChannelKind, posted: Mapping[str, str]) -> dict[str, str]:
    """What a failed post shows again: what was typed, but no secret."""
    secret = {f.name for f in fields(kind) if f.secret}
    return {k: v for k, v in posted.items() if k not in secret and k != "csrf"}
