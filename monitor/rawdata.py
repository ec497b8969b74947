"""Rows of an export as bytes: CSV (RFC 4180, by the ``csv`` module) or NDJSON, batch by batch.

Shared by the API's streams (``api/exports.py``) and ``monitor export-checks``, so the two write
the same bytes for the same rows. The rows are the JSON pages' objects (``domain/history.py``)
with a ``cursor``; NDJSON writes each as it is, one JSON object a line; CSV flattens it: the
``timings`` object becomes its four columns, ``details`` (any nested value) a cell of compact
JSON, true/false in lower case, null an empty cell. CSV has a header row; lines end in CRLF.

How a reader tells a complete export from a cut one is the HTTP stream's end (the last,
empty chunk of ``Transfer-Encoding: chunked``; curl exits 0, a cut makes it exit 18): a failure
after the first byte closes the connection without it. NDJSON says so in the data too: its last
line is then ``{"error": {...}}`` (``cut``) naming the cursor to resume after.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping
from typing import Any, Literal

Format = Literal["csv", "ndjson"]
FORMATS: tuple[Format, ...] = ("csv", "ndjson")
MEDIA_TYPES: dict[Format, str] = {"csv": "text/csv", "ndjson": "application/x-ndjson"}
CONTENT_TYPES: dict[Format, str] = {
    "csv": "text/csv; charset=utf-8; header=present",
    "ndjson": "application/x-ndjson; charset=utf-8",
}

TIMINGS = ("dns_ms", "connect_ms", "tls_ms", "ttfb_ms")
CHECK_COLUMNS = ("time", "ok", "status_code", "latency_ms", "error", "location", "checked_from",
                 *TIMINGS, "details", "cursor")  # fmt: skip
ACCOUNT_CHECK_COLUMNS = ("monitor_id", "monitor_name", *CHECK_COLUMNS)
INCIDENT_COLUMNS = ("id", "monitor_id", "started_at", "ended_at", "ongoing", "duration_seconds",
                    "status_code", "error", "acknowledged_at", "acknowledged_by", "acknowledged_note",
                    "cursor")  # fmt: skip


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, dict | list):
        return _compact(value)
    return value


def flat(row: Mapping[str, Any], columns: Iterable[str]) -> list[Any]:
    """One row as CSV cells in ``columns``' order (``timings`` spread into its columns)."""
    timings = row.get("timings") or {}
    return [_cell(timings.get(c) if c in TIMINGS and "timings" in row else row.get(c)) for c in columns]


class Encoder:
    """Bytes of one export in one format: ``head()`` once, ``rows(batch)`` per batch, and on a
    failure after the first byte ``cut(...)`` (NDJSON's error line; nothing for CSV)."""

    def __init__(self, format: Format, columns: tuple[str, ...]) -> None:
        self.format = format
        self.columns = columns
        self._buffer = io.StringIO()
        # RFC 4180: CRLF after each record, fields quoted when they hold a comma, quote or newline.
        self._csv = csv.writer(self._buffer, lineterminator="\r\n")

    @property
    def content_type(self) -> str:
        return CONTENT_TYPES[self.format]

    def head(self) -> bytes:
        if self.format == "ndjson":
            return b""
        self._csv.writerow(self.columns)
        return self._take()

    def rows(self, batch: Iterable[Mapping[str, Any]]) -> bytes:
        if self.format == "ndjson":
            return "".join(_compact(row) + "\n" for row in batch).encode()
        self._csv.writerows(flat(row, self.columns) for row in batch)
        return self._take()

    def cut(self, message: str, after: str | None) -> bytes:
        """What ends a stream that failed midway: NDJSON's last line says so and where to resume
        (``after``: the last row's cursor, None when no row was written); CSV has only the
        connection closed without the stream's end."""
        if self.format == "csv":
            return b""
        return (
            _compact({"error": {"code": "export_cut", "message": message, "after": after}}) + "\n"
        ).encode()

    def _take(self) -> bytes:
        text = self._buffer.getvalue()
        self._buffer.seek(0)
        self._buffer.truncate()
        return text.encode()
