"""A document as YAML text, the same way for ``monitor export`` and every importer: block style,
keys in the order given (the caller orders them), strings quoted only where YAML needs it, so
two exports of the same account are byte for byte the same."""

from __future__ import annotations

from typing import Any

import yaml


class _Dumper(yaml.SafeDumper):
    """SafeDumper that keeps mapping order and indents lists under their key."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> Any:
        return super().increase_indent(flow, False)


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # Text of several lines reads best as a literal block.
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump(document: dict[str, Any]) -> str:
    """``document`` as YAML text (UTF-8, unicode kept, no line wrapping)."""
    return yaml.dump(
        document, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=10_000
    )
