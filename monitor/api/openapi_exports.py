"""The OpenAPI description of the raw-data streams: ``listChecks`` and ``listIncidents`` also
answer CSV and NDJSON (``?format=`` or Accept), oldest first, resumable with ``after``."""

from __future__ import annotations

from typing import Any

from monitor.api.openapi import _Builder, _query

FORMAT = _query(
    "format",
    {"type": "string", "enum": ["json", "csv", "ndjson"], "default": "json"},
    "`csv` or `ndjson`: the whole range as a stream, oldest first (instead of pages; `limit` and "
    "`cursor` are refused); else the Accept header decides (`text/csv`, `application/x-ndjson`)",
)
AFTER = _query(
    "after",
    {"type": "string"},
    "streams only: resume after the row whose `cursor` this is (every row carries one)",
)
STREAMED = "The whole range, oldest first, each row with its `cursor`; complete when the chunked stream ends."


def add_streams(b: _Builder) -> None:
    for path, method in (("/api/v1/monitors/{id}/checks", "get"), ("/api/v1/monitors/{id}/incidents", "get")):
        operation: dict[str, Any] = b.paths[path][method]
        operation["parameters"] = [*operation["parameters"], FORMAT, AFTER]
        content = operation["responses"]["200"]["content"]
        content["text/csv"] = {"schema": {"type": "string"}, "example": "time,ok,...,cursor\r\n"}
        content["application/x-ndjson"] = {"schema": {"type": "string"}}
        operation["responses"]["200"]["description"] += " " + STREAMED
