"""``GET /api/v1/reports/sla``: an SLA report (``monitor.domain.reports`` reads it) as JSON, CSV,
HTML or PDF (``monitor.reports.documents`` writes it; the PDF is rendered in a thread, off the
event loop).

``?scope=monitor&id=`` | ``scope=tag&tag=`` | ``scope=page&id=`` | ``scope=account`` (the
default); the period by ``month=2026-10``, ``quarter=2026-Q4`` or ``from=``/``to=`` (ISO 8601;
without an offset in the account's time zone), none: the last whole month; ``target=99.9`` for
the error budget; ``format=json|csv|html|pdf``.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from monitor.api.context import DEPS
from monitor.api.errors import ApiError
from monitor.api.guard import actor
from monitor.domain import reports
from monitor.domain.paging import MAX_ID
from monitor.reports import documents

FORMATS = ("json", "csv", "html", "pdf")
PARAMS = ("scope", "id", "tag", "month", "quarter", "from", "to", "target", "format")


def _id(raw: str | None) -> int | None:
    if raw is None or raw == "":
        return None
    if not (raw.isascii() and raw.isdigit()) or not 0 < int(raw) <= MAX_ID:
        raise ApiError(400, "invalid", f"id: must be an id (1 to {MAX_ID})", "id")
    return int(raw)


async def sla(request: web.Request) -> web.StreamResponse:
    q = request.query
    kind = q.get("format", "json")
    if kind not in FORMATS:
        raise ApiError(400, "invalid", f"format: one of {', '.join(FORMATS)}", "format")
    report = await reports.sla_report(
        request.app[DEPS], actor(request), scope=q.get("scope", "account"), subject_id=_id(q.get("id")),
        tag=q.get("tag"), month=q.get("month"), quarter=q.get("quarter"), start=q.get("from"),
        end=q.get("to"), target=q.get("target"),
    )  # fmt: skip
    name = f"sla-{report.scope}-{report.period.label if report.period.kind != 'range' else 'range'}"
    attachment = {"Content-Disposition": f'attachment; filename="{name}.{kind}"', "Cache-Control": "no-store"}
    if kind == "csv":
        body = documents.as_csv(report)
        return web.Response(body=body, content_type="text/csv", charset="utf-8", headers=attachment)
    if kind == "pdf":
        pdf = await asyncio.to_thread(documents.as_pdf, report)
        return web.Response(body=pdf, content_type="application/pdf", headers=attachment)
    if kind == "html":
        headers = {"Content-Security-Policy": documents.HTML_CSP, "Cache-Control": "no-store"}
        return web.Response(text=documents.as_html(report), content_type="text/html", headers=headers)
    return web.json_response(documents.as_json(report), headers={"Cache-Control": "no-store"})


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/api/v1/reports/sla", sla)
