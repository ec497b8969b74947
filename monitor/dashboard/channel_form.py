"""A channel kind's settings as form fields, read from its pydantic model's JSON schema, so a
kind added to ``monitor.channels`` gets its form without a template of its own.

Each property of the kind's ``config`` model becomes one field named ``config.<property>`` (the
name a domain error gives, so the message lands next to it): a string is a text input (a
password input when the kind names it a secret or the schema says ``format: password``), an
integer a number input, an ``enum`` a select, a list of strings a textarea of one item a line,
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

PREFIX = "config."
# An edit form's checkbox beside an optional secret: remove the stored value.
CLEAR = ".clear"


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


def _branch(schema: Mapping[str, Any]) -> tuple[Mapping[str, Any], bool]:
    """The schema without its ``null`` branch, and whether null was allowed."""
    options = schema.get("anyOf")
    if not options:
        return schema, False
    real = [o for o in options if o.get("type") != "null"]
    return (real[0] if len(real) == 1 else {"type": "string"}), len(real) < len(options)


def _widget(schema: Mapping[str, Any], secret: bool) -> str:
    kind = schema.get("type")
    if "enum" in schema:
        return "select"
    if kind == "integer":
        return "number"
    if kind == "array":
        return "lines"
    if kind == "object":
        return "pairs"
    if secret or schema.get("format") == "password":
        return "password"
    return "text"


def fields(kind: ChannelKind) -> list[Field]:
    schema = kind.config.model_json_schema()
    required = set(schema.get("required", ()))
    found = []
    for prop, raw in schema.get("properties", {}).items():
        inner, _nullable = _branch(raw)
        secret = prop in kind.secrets or inner.get("format") == "password"
        widget = _widget(inner, secret)
        hint = raw.get("description") or inner.get("description") or ""
        if widget == "lines":
            hint = (hint + "; " if hint else "") + "one a line"
        elif widget == "pairs":
            hint = (hint + "; " if hint else "") + "one 'Name: value' a line"
        found.append(
            Field(
                name=PREFIX + prop,
                prop=prop,
                label=raw.get("title") or prop.replace("_", " ").capitalize(),
                hint=hint,
                widget=widget,
                required=prop in required,
                secret=secret,
                options=tuple((str(v), str(v)) for v in inner.get("enum", ())),
                default=raw.get("default"),
                minimum=inner.get("minimum"),
                maximum=inner.get("maximum"),
            )
        )
    return found


def _value(field: Field, text: str) -> Any:
    if field.widget == "number":
        try:
            return int(text)
        except ValueError:
            return text  # the model says what is wrong with it, next to the field
    if field.widget == "lines":
        return [line.strip() for line in text.splitlines() if line.strip()]
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
