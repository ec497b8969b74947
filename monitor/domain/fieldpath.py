"""The field a pydantic error is about, named as the client wrote it.

pydantic puts the branch of a union in an error's location: the tag of a discriminated
union (``assertions.0.json.path``, ``auth.basic.password``) and the type of a plain one
(``expected_status.0.int``). A client never wrote those names, so :func:`field_path`
walks the model's core schema along the location and leaves every union branch out.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

Loc = tuple[int | str, ...]
# Schemas that wrap one other schema without a step of their own in an error's location.
_WRAPPERS = ("default", "nullable", "function-after", "function-before", "function-wrap", "model",
             "definitions")  # fmt: skip


def field_path(model: type[BaseModel], loc: Sequence[int | str]) -> str:
    """``loc`` without union branches, dotted (``expected_status.0``); ``loc`` as it is when it
    does not fit the model's schema (which it always should)."""
    found = _walk(model.__pydantic_core_schema__, tuple(loc), _refs(model))
    return ".".join(str(part) for part in (loc if found is None else found))


@functools.cache
def _refs(model: type[BaseModel]) -> dict[str, Mapping[str, Any]]:
    """The model's schemas that have a ``ref``, by it (what ``definition-ref`` points to)."""
    refs: dict[str, Mapping[str, Any]] = {}
    _collect_refs(model.__pydantic_core_schema__, refs)
    return refs


def _collect_refs(schema: Any, refs: dict[str, Mapping[str, Any]]) -> None:
    if isinstance(schema, Mapping):
        if "ref" in schema and "type" in schema:
            refs[schema["ref"]] = schema
        for value in schema.values():
            _collect_refs(value, refs)
    elif isinstance(schema, list | tuple):
        for value in schema:
            _collect_refs(value, refs)


def _walk(
    schema: Mapping[str, Any], loc: Loc, refs: Mapping[str, Mapping[str, Any]]
) -> list[int | str] | None:
    """The steps of ``loc`` that name fields, keys and items; None if ``loc`` does not fit."""
    if not loc:
        return []
    kind = schema["type"]
    head, rest = loc[0], loc[1:]
    if kind in _WRAPPERS:
        return _walk(schema["schema"], loc, refs)
    if kind == "definition-ref":
        return _walk(refs[schema["schema_ref"]], loc, refs)
    if kind == "model-fields":
        field = schema["fields"].get(head)
        if field is None:  # an unknown field (extra="forbid"): the location ends at its name
            return [head] if not rest else None
        return _then(head, _walk(field["schema"], rest, refs))
    if kind in ("list", "set", "frozenset") and isinstance(head, int):
        return _then(head, _walk(schema["items_schema"], rest, refs))
    if kind == "dict":
        if rest[:1] == ("[key]",):
            return [head, "[key]"] if len(rest) == 1 else None
        return _then(head, _walk(schema["values_schema"], rest, refs))
    if kind == "tagged-union":
        choice = schema["choices"].get(head)
        return None if choice is None else _walk(choice, rest, refs)
    if kind == "union":
        # head is the branch: its label, or a name pydantic-core makes up for its type. The
        # rest of the location belongs to the first branch it fits.
        for choice in schema["choices"]:
            branch, label = choice if isinstance(choice, tuple) else (choice, None)
            if label is not None and label != head:
                continue
            found = _walk(branch, rest, refs)
            if found is not None:
                return found
        return None
    return None


def _then(head: int | str, rest: list[int | str] | None) -> list[int | str] | None:
    return None if rest is None else [head, *rest]
