"""The OpenAPI description of SLA reports: ``getSlaReport`` (``GET /api/v1/reports/sla``), as
JSON, CSV, HTML or PDF (``monitor.api.reports``)."""

from __future__ import annotations

import dataclasses
from typing import Any

from monitor.api.openapi import _Builder, _query
from monitor.domain.reports import SCOPES
from monitor.domain.schemas.monitors import TAG
from monitor.reports.sla import Summary

NUMBER = {"type": ["number", "null"]}
_TYPES: dict[str, dict[str, Any]] = {
    "int": {"type": "integer", "minimum": 0},
    "float": {"type": "number"},
    "float | None": NUMBER,
    "bool | None": {"type": ["boolean", "null"]},
}
SUMMARY: dict[str, Any] = {
    "type": "object",
    "required": [f.name for f in dataclasses.fields(Summary)],
    "properties": {f.name: _TYPES[str(f.type)] for f in dataclasses.fields(Summary)},
}
TIME = {"type": "string", "format": "date-time"}
REPORT: dict[str, Any] = {
    "type": "object",
    "required": [
        "scope",
        "id",
        "subject",
        "period",
        "generated_at",
        "target_percent",
        "summary",
        "monitors",
        "incidents",
        "incidents_complete",
    ],
    "properties": {
        "scope": {"type": "string", "enum": list(SCOPES)},
        "id": {"type": ["integer", "null"]},
        "subject": {"type": "string"},
        "period": {
            "type": "object",
            "required": ["kind", "label", "from", "to", "timezone", "hours"],
            "properties": {
                "kind": {"type": "string", "enum": ["month", "quarter", "range"]},
                "label": {"type": "string"},
                "from": TIME,
                "to": TIME,
                "timezone": {"type": "string"},
                "hours": {"type": "number"},
            },
        },
        "generated_at": TIME,
        "target_percent": NUMBER,
        "summary": SUMMARY,
        "monitors": {
            "type": "array",
            "items": {
                **SUMMARY,
                "required": ["monitor_id", "name", *SUMMARY["required"]],
                "properties": {
                    "monitor_id": {"type": "integer"},
                    "name": {"type": "string"},
                    **SUMMARY["properties"],
                },
            },
        },
        "incidents": {"type": "array", "items": {"type": "object"}},
        "incidents_complete": {"type": "boolean"},
    },
}
PARAMETERS = (
    _query("scope", {"type": "string", "enum": list(SCOPES), "default": "account"},
           "what the report is of: a monitor (`id`), the monitors with a tag (`tag`), a status page's "
           "monitors (`id`), or every monitor of the account"),
    _query("id", {"type": "integer", "format": "int64", "minimum": 1}, "the monitor's or status page's id"),
    _query("tag", {"type": "string", "pattern": TAG.pattern}, "scope=tag: the tag"),
    _query("month", {"type": "string", "pattern": r"^\d{4}-\d{2}$", "examples": ["2026-10"]},
           "a calendar month in the account's time zone"),
    _query("quarter", {"type": "string", "pattern": r"^\d{4}-[Qq][1-4]$", "examples": ["2026-Q4"]},
           "a calendar quarter in the account's time zone"),
    _query("from", {"type": "string"}, "start of a range (ISO 8601 date or time; without an offset, in the "
           "account's time zone), with `to`; no period at all is the last whole month"),
    _query("to", {"type": "string"}, "end of the range (exclusive), after `from`; at most 400 days"),
    _query("target", {"type": "number", "exclusiveMinimum": 0, "maximum": 100, "examples": [99.9]},
           "the SLA target in percent: the summary and each monitor get its breach and error budget"),
    _query("format", {"type": "string", "enum": ["json", "csv", "html", "pdf"], "default": "json"},
           "`csv`: a row per monitor and the total; `html`: a printable page; `pdf`: that page as PDF"),
)  # fmt: skip


def add_reports(b: _Builder) -> None:
    b.add("get", "/api/v1/reports/sla", "getSlaReport",
          "An SLA report (viewer and up): uptime, downtime, maintenance and unknown time, incidents, MTTR, "
          "MTBF, response times and the error budget, every figure as /uptime and /incidents answer it",
          tag="reports", errors=(400, 404), parameters=PARAMETERS,
          ok={200: {"description": "The report.", "content": {
              "application/json": {"schema": REPORT},
              "text/csv": {"schema": {"type": "string"}},
              "text/html": {"schema": {"type": "string"}},
              "application/pdf": {"schema": {"type": "string", "format": "binary"}},
          }}})  # fmt: skip
