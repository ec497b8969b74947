"""Between a JSON body and the flat values of a form made by ``schema_form``: a body (a type's
defaults, a stored monitor) as the values its inputs show (``values_of``), and a posted form
back into a body (``body_of``), each value coerced per its schema.

Values are text by input name (``request.headers``, ``assertions.0.keyword``), a list for a set
of checkboxes. ``body_of`` leaves an empty optional field out so its default applies
(``skip_defaults``: a value equal to the default too), drops the empty rows and numbers the rest
again (the values it gives back are the rows as numbered, so an error on ``assertions.1`` is on
the second row shown). With ``current`` (a stored monitor, as ``monitors.get`` shows it), every
field shown is given, a cleared one as null or empty, a secret left empty as stored (masked:
the domain layer keeps what it stands for), and ``changed`` keeps only what differs, a PATCH.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from monitor.dashboard.schema_form import SPLIT, Field
from monitor.domain.errors import DomainError

Values = dict[str, Any]
MISSING: Any = object()


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def values_of(fields: Sequence[Field], body: Mapping[str, Any], prefix: str = "") -> Values:
    """The form's values showing ``body`` (secrets never)."""
    out: Values = {}
    for f in fields:
        value = body.get(f.name, MISSING)
        if value is MISSING or value is None:
            if f.widget == "checkbox" and f.default:
                out[prefix + f.name] = "true"
            continue
        _put(out, f, prefix + f.name, value)
    return out


def _put(out: Values, f: Field, name: str, value: Any) -> None:
    if f.widget == "password":
        return
    if f.widget == "checkbox":
        out[name] = "true" if value else ""
    elif f.widget == "lines":
        items = [_text(v) for v in value]
        out[name] = items if f.choices else "\n".join(items)
    elif f.widget == "pairs":
        out[name] = "\n".join(f"{k}: {v}" for k, v in dict(value).items())
    elif f.widget == "json":
        out[name] = value if isinstance(value, str) else json.dumps(value)
    elif f.widget == "group":
        out.update(values_of(f.children, value, name + "."))
    elif f.widget == "variant":
        out.update(_row_values(f, value, name + "."))
    elif f.widget == "rows":
        for i, row in enumerate(value):
            out.update(_row_values(f, row, f"{name}.{i}."))
    else:
        out[name] = _text(value)


def _row_values(f: Field, value: Mapping[str, Any], prefix: str) -> Values:
    out: Values = {}
    if f.discriminator:
        out[prefix + f.discriminator] = _text(value.get(f.discriminator, ""))
    out.update(values_of(f.children, value, prefix))
    return out


def blank_row(f: Field, prefix: str) -> Values:
    """An empty row's values: its checkboxes as their defaults (a row is empty without text)."""
    return {prefix + c.name: "true" for c in f.children if c.widget == "checkbox" and c.default}


def rows_in(f: Field, values: Mapping[str, Any]) -> int:
    """How many rows of ``f`` the values hold."""
    indexes = {k[len(f.name) + 1 :].split(".", 1)[0] for k in values if k.startswith(f.name + ".")}
    return len([i for i in indexes if i.isdigit()])


class _Reader:
    def __init__(
        self, form: Mapping[str, Any], skip_defaults: bool, current: Mapping[str, Any] | None
    ) -> None:
        self.form = form
        self.skip_defaults = skip_defaults
        self.current = current
        self.values: Values = {}  # as read, rows numbered again

    def raw(self, name: str) -> str:
        got = self.form.get(name, "")
        if isinstance(got, list):
            got = got[0] if got else ""
        return str(got)

    def fields(self, fields: Sequence[Field], prefix: str, kept: Mapping[str, Any] | None) -> dict[str, Any]:
        body: dict[str, Any] = {}
        for f in fields:
            value = self.read(f, prefix + f.name, (kept or {}).get(f.name, MISSING))
            if value is MISSING:
                continue
            if self.skip_defaults and f.widget != "hidden" and f.default is not None and value == f.default:
                continue
            body[f.name] = value
        return body

    def read(self, f: Field, name: str, kept: Any) -> Any:
        w = f.widget
        if w == "hidden":
            return f.default
        if w == "checkbox":
            value = self.raw(name) in ("true", "on")
            if value:
                self.values[name] = "true"
            return value
        if w == "lines" and f.choices:
            chosen = self.form.get(name, [])
            chosen = [chosen] if isinstance(chosen, str) else list(chosen)
            self.values[name] = chosen
            return [_item(f, name, c) for c in chosen if c] or MISSING
        if w == "group":
            inner = self.fields(f.children, name + ".", kept if isinstance(kept, Mapping) else None)
            return inner or MISSING
        if w == "variant":
            return self.row(f, name + ".", kept if isinstance(kept, Mapping) else None)
        if w == "rows":
            return self.rows(f, name)
        text = self.raw(name)
        if w == "password":
            if text == "":
                return kept if kept is not MISSING and kept is not None else MISSING
            return text
        if w not in ("textarea", "json"):
            text = text.strip()
        self.values[name] = text
        if text == "" or (w == "json" and not text.strip()):
            return MISSING
        return _coerce(f, name, text)

    def row(self, f: Field, prefix: str, kept: Mapping[str, Any] | None) -> Any:
        tag = self.raw(prefix + f.discriminator).strip() if f.discriminator else ""
        if f.discriminator:
            self.values[prefix + f.discriminator] = tag
        kids = f.variants.get(tag, f.children) if f.discriminator else f.children
        if kept is not None and f.discriminator and kept.get(f.discriminator) != tag:
            kept = None  # another variant: its secrets are not this one's
        body = self.fields(kids, prefix, kept)
        typed = any(v for v in body.values() if not isinstance(v, bool))
        if not tag and (f.widget == "variant" or not typed):
            return MISSING  # a variant of none; a row left empty (one with text but no kind: a 422)
        return {f.discriminator: tag, **body} if tag else body

    def rows(self, f: Field, name: str) -> Any:
        start = len(name) + 1
        heads = {k[start:].split(".")[0] for k in self.form if k.startswith(name + ".")}
        out: list[Any] = []
        for i in sorted(int(h) for h in heads if h.isdigit()):
            reader = _Reader(self.form, self.skip_defaults, None)
            row = reader.row(f, f"{name}.{i}.", None)
            if row is MISSING:
                continue
            n = len(out)
            # The rows numbered again, so an error's ``name.N`` is the N-th row as shown.
            self.values.update(
                {f"{name}.{n}." + k[len(f"{name}.{i}.") :]: v for k, v in reader.values.items()}
            )
            out.append(row)
        return out or MISSING


def _item(f: Field, name: str, text: str) -> Any:
    kinds = f.item.split("|")
    if "integer" in kinds and text.lstrip("-").isdigit():
        return int(text)
    if "number" in kinds:
        try:
            return _number(text)
        except ValueError:
            pass
    if "string" in kinds:
        return text
    raise DomainError(422, "invalid", f"{name}: {text[:40]!r} is not a number", name)


def _number(text: str) -> int | float:
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(text)
    return int(value) if value.is_integer() and "e" not in text.lower() else value


def _coerce(f: Field, name: str, text: str) -> Any:
    if f.widget == "number":
        try:
            if f.attrs.get("step") == "1":
                return int(text)
            return _number(text)
        except ValueError:
            whole = "a whole number" if f.attrs.get("step") == "1" else "a number"
            raise DomainError(422, "invalid", f"{name}: {text[:40]!r} is not {whole}", name) from None
    if f.widget == "lines":
        return [_item(f, name, part.strip()) for part in SPLIT.split(text) if part.strip()] or MISSING
    if f.widget == "pairs":
        pairs: dict[str, str] = {}
        for line in text.splitlines():
            if not line.strip():
                continue
            key, colon, value = line.partition(":")
            if not colon or not key.strip():
                raise DomainError(422, "invalid", f"{name}: {line[:40]!r} is not `Name: value`", name)
            pairs[key.strip()] = value.strip()
        return pairs or MISSING
    if f.widget == "json":
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def body_of(
    fields: Sequence[Field],
    form: Mapping[str, Any],
    *,
    skip_defaults: bool = False,
    current: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], Values]:
    """(the body the posted ``form`` makes, the form's values as read): see the module's note."""
    reader = _Reader(form, skip_defaults, current)
    body = reader.fields(fields, "", current)
    if current is not None:
        for f in fields:
            if f.name in body or f.widget == "hidden":
                continue
            if f.widget in ("lines", "rows"):
                body[f.name] = []
            elif f.widget == "pairs":
                body[f.name] = {}
            elif f.nullable:
                body[f.name] = None
            elif f.default is not None:
                body[f.name] = f.default
            elif f.widget in ("text", "url", "textarea"):
                body[f.name] = ""  # a required one cleared: the domain layer says it is required
    return body, reader.values


def changed(body: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of ``body`` that differ from ``current``: a PATCH."""
    return {k: v for k, v in body.items() if current.get(k, MISSING) != v}
