"""``GET /api/v1/monitors/{id}/checks`` and ``/incidents`` as CSV or NDJSON streams.

Chosen by ``?format=csv|ndjson|json`` (it wins) or the Accept header (``text/csv``,
``application/x-ndjson``, by q-value; anything else is JSON pages, as before). The domain opens
the export (``domain/exports.py``: role, ownership, first batch) before the first byte, so every
refusal is the usual JSON error; the rows then go out batch by batch through a
``StreamResponse``, each write awaited (aiohttp waits for the socket to drain), so memory stays
one batch whatever the range. A failure after the first byte closes the connection without the
chunked stream's end (NDJSON's last line names the error and the cursor to resume after).
"""

from __future__ import annotations

from aiohttp import web

from monitor import logging as mlog
from monitor import rawdata
from monitor.api.errors import ApiError
from monitor.domain.exports import Export

log = mlog.get(__name__)

_BY_MEDIA = {"application/json": "json", "text/csv": "csv", "application/x-ndjson": "ndjson",
             "application/ndjson": "ndjson", "*/*": "json", "application/*": "json"}  # fmt: skip


def choose_format(param: str | None, accept: str | None) -> str:
    """``json``, ``csv`` or ``ndjson``: ``?format=`` if given, else the best of Accept."""
    if param is not None:
        if param not in ("json", *rawdata.FORMATS):
            raise ApiError(400, "invalid", "format: json, csv or ndjson", "format")
        return param
    best, rank = "json", (-1.0, 0)
    for entry in (accept or "").split(","):
        media, *params = (p.strip() for p in entry.split(";"))
        kind = _BY_MEDIA.get(media.lower())
        if kind is None:
            continue
        q = 1.0
        for p in params:
            name, _, value = p.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        specific = 0 if "*" in media else 1
        if q > 0 and (q, specific) > rank:
            best, rank = kind, (q, specific)
    return best


def refuse_page_params(request: web.Request) -> None:
    for name in ("cursor", "limit"):
        if name in request.query:
            raise ApiError(400, "invalid", f"{name}: a stream has no pages; resume it with after=", name)


async def stream(request: web.Request, export: Export, encoder: rawdata.Encoder) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": encoder.content_type, "Cache-Control": "no-store"})
    await response.prepare(request)
    rows, after = 0, None
    try:
        await response.write(encoder.head())
        async for batch in export.batches():
            await response.write(encoder.rows(batch))
            rows += len(batch)
            after = batch[-1]["cursor"]
    except ConnectionResetError:  # the client went away: nobody to tell
        log.info("api.export_abandoned", path=request.path, rows=rows)
        return response
    except Exception as exc:  # the database failed midway (or a bug): the stream is cut, visibly
        log.warning("api.export_cut", path=request.path, rows=rows, error=type(exc).__name__)
        last = encoder.cut("the export failed midway; resume with after= the cursor given", after)
        try:
            if last:
                await response.write(last)
        except ConnectionResetError:
            pass
        # close() sends what is buffered (NDJSON's error line), then ends the connection without
        # the chunked stream's last chunk; aiohttp's own write_eof then fails quietly.
        if request.transport is not None:
            request.transport.close()
        return response
    await response.write_eof()
    log.info("api.export_done", path=request.path, rows=rows)
    return response
