"""An SLA report (``domain/reports.Report``) written out: a JSON object, CSV, an HTML page and
the same page as PDF.

JSON and CSV carry the figures as computed (seconds and percentages unrounded, so they compare
exactly with /uptime and /incidents); HTML and PDF show them rounded for people: percentages to
four decimals, durations to the second. The page is one Jinja2 template with autoescaping (a
monitor named ``<script>`` is text) and its stylesheet inline, made for print (A4, a header with
the scope, the period and the time zone, then the summary, the monitors and the incidents);
the HTML answer's Content-Security-Policy allows that one stylesheet by its hash and nothing
else. PDF is WeasyPrint's rendering of that page with Debian's DejaVu fonts: CPU work (0.15 s
for one monitor, 3.3 s for 50 monitors and 150 incidents on a loaded 2-core machine), which the
caller runs off the event loop.
"""

from __future__ import annotations

import base64
import csv
import dataclasses
import functools
import hashlib
import io
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import jinja2

from monitor import times

if TYPE_CHECKING:
    from monitor.reports.sla import Report, Summary

TEMPLATES = Path(__file__).with_name("templates")
STYLE = (TEMPLATES / "report.css").read_text()
STYLE_HASH = "sha256-" + base64.b64encode(hashlib.sha256(STYLE.encode()).digest()).decode()
HTML_CSP = (
    f"default-src 'none'; style-src '{STYLE_HASH}'; frame-ancestors 'self'; base-uri 'none'; "
    "form-action 'none'"
)
CSV_COLUMNS = (
    "monitor_id", "monitor_name", "from", "to", "timezone", "uptime_percent", "downtime_seconds",
    "counted_seconds", "maintenance_seconds", "unknown_seconds", "degraded_seconds", "checks", "checks_up",
    "incidents", "mttr_seconds", "mtbf_seconds", "p50_ms", "p95_ms", "target_percent", "breached",
    "budget_seconds", "budget_left_seconds", "budget_left_percent",
)  # fmt: skip


def as_json(report: Report) -> dict[str, Any]:
    p = report.period
    return {
        "scope": report.scope,
        "id": report.subject_id,
        "subject": report.subject,
        "period": {
            "kind": p.kind,
            "label": p.label,
            "from": times.rfc3339(p.start),
            "to": times.rfc3339(p.end),
            "timezone": p.timezone,
            "hours": p.hours,
        },
        "generated_at": times.rfc3339(report.now),
        "target_percent": report.total.target_percent,
        "summary": dataclasses.asdict(report.total),
        "monitors": [
            {"monitor_id": f.monitor_id, "name": f.name, **dataclasses.asdict(s)} for f, s in report.monitors
        ],
        "incidents": report.incidents,
        "incidents_complete": report.incidents_listed_all,
    }


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value  # a name a spreadsheet would run as a formula stays text
    return value


def as_csv(report: Report) -> bytes:
    """One row per monitor, then the total (no monitor id, named ``(all)``); RFC 4180, CRLF."""
    buffer = io.StringIO()
    out = csv.writer(buffer, lineterminator="\r\n")
    out.writerow(CSV_COLUMNS)
    p = report.period
    rows = [(f.monitor_id, f.name, s) for f, s in report.monitors] + [(None, "(all)", report.total)]
    for monitor_id, name, s in rows:
        values = {"monitor_id": monitor_id, "monitor_name": name, "from": times.rfc3339(p.start),
                  "to": times.rfc3339(p.end), "timezone": p.timezone, **dataclasses.asdict(s)}  # fmt: skip
        out.writerow([_cell(values[c]) for c in CSV_COLUMNS])
    return buffer.getvalue().encode()


# -- for people: HTML and PDF -------------------------------------------------------------------


NONE = "n/a"  # a figure without data


def percent_text(value: float | None) -> str:
    return NONE if value is None else f"{value:.4f} %"


def seconds_text(value: float | None) -> str:
    """Whole seconds, and the duration in words to two units: ``5400 s (1 h 30 min)``."""
    if value is None:
        return NONE
    whole = round(value)
    if whole == 0:
        return "0 s"
    sign, rest = ("-" if whole < 0 else ""), abs(whole)
    days, rest = divmod(rest, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{n} {unit}" for n, unit in ((days, "d"), (hours, "h"), (minutes, "min"), (secs, "s")) if n]
    return f"{whole} s ({sign}{' '.join(parts[:2])})"


def ms_text(value: float | None) -> str:
    return NONE if value is None else f"{value:.0f} ms"


@functools.cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True, undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True,
    )  # fmt: skip
    env.filters.update(percent=percent_text, seconds=seconds_text, ms=ms_text)
    return env


def as_html(report: Report) -> str:
    tz = ZoneInfo(report.period.timezone)

    def local(value: datetime | str | None) -> str:
        if value is None:
            return "ongoing"
        if isinstance(value, str):
            value = datetime.fromisoformat(value)
        return value.astimezone(tz).strftime("%Y-%m-%d %H:%M:%S %Z")

    return (
        _environment()
        .get_template("report.html")
        .render(report=report, style=STYLE, local=local, summary_rows=summary_rows(report.total))
    )


def summary_rows(s: Summary) -> list[tuple[str, str]]:
    rows = [
        ("Uptime", percent_text(s.uptime_percent)),
        ("Downtime", seconds_text(s.downtime_seconds)),
        ("Counted time", seconds_text(s.counted_seconds)),
        ("Maintenance (not counted)", seconds_text(s.maintenance_seconds)),
        ("Unknown (not counted)", seconds_text(s.unknown_seconds)),
        ("Degraded (counted as up)", seconds_text(s.degraded_seconds)),
        ("Incidents", str(s.incidents)),
        ("MTTR", seconds_text(s.mttr_seconds)),
        ("MTBF", seconds_text(s.mtbf_seconds)),
        ("Response time p50 / p95", f"{ms_text(s.p50_ms)} / {ms_text(s.p95_ms)}"),
        ("Checks (up / all)", f"{s.checks_up} / {s.checks}"),
    ]
    if s.target_percent is not None:
        rows += [
            ("SLA target", percent_text(s.target_percent)),
            ("Target met", {True: "no: breached", False: "yes", None: NONE}[s.breached]),
            ("Error budget", seconds_text(s.budget_seconds)),
            (
                "Error budget left",
                f"{seconds_text(s.budget_left_seconds)}; {percent_text(s.budget_left_percent)}",
            ),
        ]
    return rows


def as_pdf(report: Report) -> bytes:
    """The HTML page as PDF (blocking: call it in a thread)."""
    import weasyprint  # heavy (pango, fonts): loaded when the first PDF is asked for

    pdf: bytes = weasyprint.HTML(string=as_html(report)).write_pdf()
    return pdf
