"""SLA reports in the dashboard, ``/reports``: a form (scope, period, target) sent by GET, so a
report has an address to bookmark and share; the report's summary, monitors and incidents on
the page, and links to the same report as CSV, PDF and a printable page
(``/api/v1/reports/sla``, which takes the session as it takes a key).

``domain/reports.sla_report`` reads it, as for the API; a bad field is shown next to it, the
form kept as typed.
"""

from __future__ import annotations

from urllib.parse import urlencode

from aiohttp import web

from monitor.dashboard import render
from monitor.dashboard.forms import Form, failed
from monitor.dashboard.views import page
from monitor.dashboard.web import Viewer, deps
from monitor.domain import reports
from monitor.domain.errors import DomainError
from monitor.reports import documents

FIELDS = ("scope", "id", "tag", "month", "quarter", "from", "to", "target")
SCOPES = [("account", "The whole account"), ("monitor", "A monitor (by id)"), ("tag", "A tag"),
          ("page", "A status page (by id)")]  # fmt: skip


def _id(raw: str) -> int | None:
    if not raw:
        return None
    if not (raw.isascii() and raw.isdigit()) or not 0 < int(raw) < 2**63:
        raise DomainError(400, "invalid", "id: must be an id (a whole number)", "id")
    return int(raw)


async def show(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    values = {name: request.query.get(name, "").strip() for name in FIELDS}
    form, report, status = Form(values), None, 200
    if request.query.get("scope"):
        try:
            report = await reports.sla_report(
                deps(request), viewer.actor, scope=values["scope"], subject_id=_id(values["id"]),
                tag=values["tag"] or None, month=values["month"] or None, quarter=values["quarter"] or None,
                start=values["from"] or None, end=values["to"] or None, target=values["target"] or None,
            )  # fmt: skip
        except DomainError as exc:
            if exc.status >= 500:
                raise
            form, status = failed(values, exc, FIELDS), exc.status
    query = urlencode({k: v for k, v in values.items() if v})
    return render.page(
        request,
        viewer,
        "reports.html",
        status=status,
        title="SLA reports",
        form=form,
        scopes=SCOPES,
        report=report,
        summary=documents.summary_rows(report.total) if report else [],
        links={kind: f"/api/v1/reports/sla?{query}&format={kind}" for kind in ("pdf", "csv", "html")},
        percent=documents.percent_text,
        seconds=documents.seconds_text,
    )


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/reports", page(show))
