"""A form made from a JSON schema (a pydantic model's ``model_json_schema()``), and the form's
post read back into a JSON body: so a monitor type added later gets its form without template
work. Pure: no request, no database.

Fields are named by their JSON path with dots (``request.headers``, ``assertions.1.value``), so
a 422 of the domain layer, whose ``field`` is that path, lands next to its input. What a schema
property becomes:

- ``string`` (``url`` named or formatted: a URL input; a long one: a text area; a secret's name:
  a password input, never filled), ``integer``, ``number`` (with its min and max), ``boolean``
  (a checkbox), ``enum`` (a select), ``const`` (hidden);
- an array of strings or numbers: a text area, one per line or comma-separated;
- an object of string values (headers): a text area of ``Name: value`` lines;
- an object with properties: a fieldset of its fields, ``parent.child``;
- one of several objects told apart by a discriminator (``auth``: basic or bearer): a select of
  the variant and the fields of every variant, each marked with the variants it belongs to;
- an array of objects (``assertions``): rows ``name.0.field`` ... with ``rows`` of them shown;
- anything else (a JSON value of any type): a text input read as JSON, else as text.

Read back (``body_of``), each value is coerced per its schema; an empty optional field is left
out so its default applies (``skip_defaults``: a value equal to the default too); a row whose
fields are all empty is dropped and the rows numbered again (``compact``), so an error's
``assertions.1`` names the row as the page shows it. A value that cannot be coerced is a 422
naming its field, as the domain layer's would be.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

SECRET_NAMES = frozenset({"password", "token", "secret"})
# Words of a property name written as capitals in its label (a label, not a check type).
CAPITALS = frozenset({"URL", "TLS", "DNS", "ID", "JSON", "HTTP", "TCP"})
LONG_TEXT = 2000  # a string allowed longer than this is a text area
SPLIT = re.compile(r"[\n,]")


@dataclass(frozen=True)
class Field:
    """One input (or group of them) of a form."""

    name: str  # its property's name: the input's is the dotted path from the top (``parent.name``)
    label: str
    widget: (
        str  # text url password textarea number checkbox select hidden lines pairs json group variant rows
    )
    required: bool = False
    hint: str = ""
    default: Any = None
    nullable: bool = False
    secret: bool = False
    item: str = ""  # lines: "integer", "number", "string" or "integer|string"
    attrs: Mapping[str, str] = field(default_factory=dict)  # min, max, step, maxlength, pattern
    options: tuple[tuple[str, str], ...] = ()  # select, variant, and ``choices``
    children: tuple[Field, ...] = ()  # group, variant, rows
    kinds: tuple[str, ...] = ()  # the variants a variant's or a row's child belongs to
    discriminator: str = ""  # variant and rows of a union: the property that tells them apart
    # variant and rows of a union: each tag's own fields (read with these: the shown ``children``
    # merge the fields of one name that the variants share)
    variants: Mapping[str, tuple[Field, ...]] = field(default_factory=dict)
    choices: bool = False  # lines given a list of options: a checkbox each

    def child(self, name: str) -> Field:
        return next(c for c in self.children if c.name == name)


def label_of(name: str, schema: Mapping[str, Any]) -> str:
    words = [w.upper() if w.upper() in CAPITALS else "IDs" if w == "ids" else w for w in name.split("_")]
    text = " ".join(words)
    return text[:1].upper() + text[1:]


def _resolve(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return {**defs[ref.removeprefix("#/$defs/")], **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _hint(schema: Mapping[str, Any], outer: Mapping[str, Any]) -> str:
    parts = [str(outer.get("description") or schema.get("description") or "").strip()]
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum")
    if low is not None and high is not None and high < 2**53:
        parts.append(f"{'more than ' if 'exclusiveMinimum' in schema else ''}{low:g} to {high:g}")
    elif low is not None and "exclusiveMinimum" in schema:
        parts.append(f"more than {low:g}")
    return "; ".join(p for p in parts if p)


def _attrs(schema: Mapping[str, Any], widget: str) -> dict[str, str]:
    attrs: dict[str, str] = {}
    if widget == "number":
        integer = schema.get("type") == "integer"
        attrs["step"] = "1" if integer else "any"
        if "minimum" in schema:
            attrs["min"] = f"{schema['minimum']:g}"
        if "maximum" in schema and schema["maximum"] < 2**53:
            attrs["max"] = f"{schema['maximum']:g}"
    elif widget in ("text", "url", "password", "textarea") and "maxLength" in schema:
        attrs["maxlength"] = str(schema["maxLength"])
    return attrs


def _merged(shown: Field, other: Field) -> Field:
    """One input for a property two variants share: a select of both's options, else text."""
    if shown.widget == other.widget == "select":
        extra = tuple(o for o in other.options if o not in shown.options)
        return replace(shown, options=shown.options + extra, hint="")
    if shown.widget == other.widget:
        return replace(shown, hint="")
    return replace(shown, widget="text", hint="", attrs={})


def _rank(f: Field, needed: bool) -> int:
    """Where a variant's field goes in its row: what it is about (a keyword, a path, a header's
    name), then the operator, then the value and the rest, the switches last."""
    if f.widget == "checkbox":
        return 3
    if f.widget == "select":
        return 1
    return 0 if needed else 2


def _union(schema: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    branches = schema.get("oneOf") or schema.get("anyOf")
    return list(branches) if isinstance(branches, list) else None


def fields_of(
    schema: Mapping[str, Any],
    *,
    skip: Iterable[str] = (),
    choices: Mapping[str, list[tuple[str, str]]] | None = None,
    secrets: Iterable[str] = (),
    rows: Mapping[str, int] | None = None,
) -> list[Field]:
    """The fields of an object schema, in its order, without ``skip``; an array named in
    ``choices`` is a checkbox for each option; a property named in ``secrets`` (or whose name is
    a secret's) is never filled in."""
    defs = schema.get("$defs", {})
    required = set(schema.get("required", ()))
    walker = _Walker(defs, dict(choices or {}), frozenset(secrets) | SECRET_NAMES)
    return [
        walker.field(name, prop, name in required)
        for name, prop in schema.get("properties", {}).items()
        if name not in set(skip)
    ]


@dataclass(frozen=True)
class _Walker:
    defs: Mapping[str, Any]
    choices: Mapping[str, list[tuple[str, str]]]
    secret_names: frozenset[str]

    def field(self, name: str, outer: Mapping[str, Any], required: bool) -> Field:
        schema = _resolve(outer, self.defs)
        nullable = False
        branches = _union(schema)
        if branches is not None and "discriminator" not in schema:
            real = [b for b in branches if b.get("type") != "null"]
            nullable = len(real) < len(branches)
            if len(real) == 1:
                schema = {**_resolve(real[0], self.defs), **{k: v for k, v in schema.items() if k != "anyOf"}}
        leaf = name.rsplit(".", 1)[-1]
        base = Field(
            name=name,
            label=str(label_of(leaf, schema)),
            widget="json",
            required=required,
            hint=_hint(schema, outer),
            default=outer.get("default", schema.get("default")),
            nullable=nullable,
            secret=leaf in self.secret_names or schema.get("format") == "password",
        )
        kind = schema.get("type")
        if "const" in schema:
            return replace(base, widget="hidden", default=schema["const"])
        if "enum" in schema:
            options = [(str(v), str(v)) for v in schema["enum"]]
            if not required and base.default is None:
                options.insert(0, ("", "(none)"))
            return replace(base, widget="select", options=tuple(options))
        union = self._variants(schema)
        if union is not None:
            return self._variant(base, *union)
        if kind == "boolean":
            return replace(base, widget="checkbox")
        if kind in ("integer", "number"):
            return replace(base, widget="number", attrs=_attrs(schema, "number"))
        if kind == "string":
            if base.secret:
                widget = "password"
            elif leaf == "url" or schema.get("format") in ("uri", "url"):
                widget = "url"
            elif schema.get("maxLength", 0) > LONG_TEXT:
                widget = "textarea"
            else:
                widget = "text"
            return replace(base, widget=widget, attrs=_attrs(schema, widget))
        if kind == "array":
            return self._array(base, _resolve(schema.get("items", {}), self.defs))
        if kind == "object":
            if "properties" in schema:
                inner = set(schema.get("required", ()))
                kids = tuple(self.field(k, v, k in inner) for k, v in schema["properties"].items())
                return replace(base, widget="group", children=kids)
            return replace(
                base,
                widget="pairs",
                hint=base.hint + ("; " if base.hint else "") + "one per line: Name: value",
            )
        return replace(base, hint=base.hint or "a JSON value, or text")

    def _variants(self, schema: Mapping[str, Any]) -> tuple[str, dict[str, Mapping[str, Any]]] | None:
        """(the discriminator, each tag's object schema) of a union of objects, or None."""
        branches = _union(schema)
        if branches is None:
            return None
        found = [_resolve(b, self.defs) for b in branches]
        if not found or not all(b.get("type") == "object" and "properties" in b for b in found):
            return None
        key = (schema.get("discriminator") or {}).get("propertyName", "type")
        tags = {}
        for branch in found:
            tag = branch["properties"].get(key, {}).get("const")
            if tag is None:
                return None
            tags[str(tag)] = branch
        return key, tags

    def _variant(
        self,
        base: Field,
        key: str,
        tags: Mapping[str, Mapping[str, Any]],
        widget: str = "variant",
    ) -> Field:
        kids: dict[str, Field] = {}
        users: dict[str, list[str]] = {}
        variants: dict[str, tuple[Field, ...]] = {}
        for tag, branch in tags.items():
            inner = set(branch.get("required", ()))
            own = tuple(self.field(p, sub, p in inner) for p, sub in branch["properties"].items() if p != key)
            variants[tag] = own
            for one in own:
                users.setdefault(one.name, []).append(tag)
                kids[one.name] = _merged(kids[one.name], one) if one.name in kids else one
        needed = {one.name for own in variants.values() for one in own if one.required}
        ordered = sorted(kids.values(), key=lambda k: _rank(k, k.name in needed))
        children = tuple(replace(k, kinds=tuple(users[k.name]), required=False) for k in ordered)
        options = [(tag, label_of(tag, {})) for tag in tags]
        if widget == "variant" and (base.nullable or not base.required):
            options.insert(0, ("", "(none)"))
        return replace(
            base,
            widget=widget,
            children=children,
            discriminator=key,
            options=tuple(options),
            variants=variants,
        )

    def _array(self, base: Field, items: Mapping[str, Any]) -> Field:
        union = self._variants(items)
        if union is not None:
            return self._variant(base, *union, widget="rows")
        if items.get("type") == "object" and "properties" in items:
            inner = set(items.get("required", ()))
            kids = tuple(
                replace(self.field(k, v, k in inner), required=False) for k, v in items["properties"].items()
            )
            return replace(base, widget="rows", children=kids)
        kinds = sorted({b.get("type", "string") for b in (_union(items) or [items])})
        item = "|".join(k for k in ("integer", "number", "string") if k in kinds) or "string"
        if base.name in self.choices:
            return replace(
                base, widget="lines", item=item, choices=True, options=tuple(self.choices[base.name])
            )
        hint = base.hint + ("; " if base.hint else "") + "one per line or comma-separated"
        return replace(base, widget="lines", item=item, hint=hint)
