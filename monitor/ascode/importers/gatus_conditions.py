"""Gatus's conditions (README.md of TwiN/gatus, "Conditions") as our monitor settings: pure,
one condition at a time, so each is tested as a table row; what has no equivalent is answered
as the reason, which the importer reports (monitor/ascode/importers/gatus.py).
"""

from __future__ import annotations

import math
import re
from typing import Any

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
_CONDITION = re.compile(r"^\s*(.+?)\s*(==|!=|<=|>=|<|>)\s*(.+?)\s*$")


def duration_seconds(text: Any) -> float:
    """A Go duration (``30s``, ``5m``, ``1h30m``) in seconds; ValueError when it is not one."""
    value = str(text).strip()
    if not value or _DURATION.sub("", value):
        raise ValueError(f"not a duration: {value!r}")
    return sum(float(n) * _UNIT[u] for n, u in _DURATION.findall(value))


def _scalar(text: str) -> Any:
    """A condition's right-hand side as JSON: a number, a boolean, else the string unquoted."""
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text.strip('"')


def _glob(pattern: str) -> str:
    return "".join(".*" if c == "*" else re.escape(c) for c in pattern)


def _status(op: str, value: str) -> str | int:
    n = int(value)
    low, high = {"==": (n, n), "<": (100, n - 1), "<=": (100, n), ">": (n + 1, 599), ">=": (n, 599)}[op]
    return n if low == high else f"{low}-{high}"


def condition(text: str, kind: str) -> tuple[str, Any] | str:
    """One Gatus condition as ``(field, value)`` to set on the monitor (``assertion`` to append,
    ``expected_status`` to add, ``cert_warn_days``, ``none``), or the reason it cannot be."""
    match = _CONDITION.match(str(text))
    if not match:
        return "not a condition Gatus documents (PLACEHOLDER OP VALUE)"
    left, op, right = match.groups()
    if left == "[CONNECTED]" and op == "==" and right == "true" and kind in ("tcp", "ping", "tls"):
        return ("none", None)  # a connection is what every such check judges
    if left == "[DNS_RCODE]" and op == "==" and right == "NOERROR" and kind == "dns":
        return ("none", None)  # expect: answer
    if kind == "http" and left == "[STATUS]" and op != "!=" and right.isdigit():
        return ("expected_status", _status(op, right))
    if left == "[RESPONSE_TIME]" and op in ("<", "<=") and right.isdigit() and kind == "http":
        return ("assertion", {"type": "response_time", "below_ms": float(right)})
    if left == "[CERTIFICATE_EXPIRATION]" and op in (">", ">=") and kind in ("http", "tls"):
        try:
            return ("cert_warn_days", min(365, math.ceil(duration_seconds(right) / 86400)))
        except ValueError:
            return "the expiration is not a duration"
    if kind == "dns" and left == "[BODY]" and op == "==" and not right.startswith(("pat(", "any(")):
        return ("dns_value", right)
    if kind != "http":
        return f"no equivalent for a {kind} monitor"
    if left == "[BODY]" and op in ("==", "!="):
        if right.startswith("pat(") and right.endswith(")"):
            pattern = {"type": "regex", "pattern": "^" + _glob(right[4:-1]) + "$"}
            return ("assertion", pattern | ({"absent": True} if op == "!=" else {}))
        if right.startswith(("any(", "len(")):
            return "any() of the whole body has no equivalent"
        return (
            "assertion",
            {"type": "regex", "pattern": "^" + re.escape(right) + "$"}
            | ({"absent": True} if op == "!=" else {}),
        )
    if left.startswith("[BODY]."):
        path = "$." + left[len("[BODY].") :]
        if right.startswith(("pat(", "any(")):
            return "pat() and any() of a JSON value have no equivalent (json assertions compare)"
        return ("assertion", {"type": "json", "path": path, "op": op, "value": _scalar(right)})
    if left.startswith("len([BODY]"):
        return "len() has no equivalent"
    return "no equivalent among our assertions"
