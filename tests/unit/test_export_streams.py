"""The streams' pure parts and their cut: the format a request asks for (a table), the CSV and
NDJSON bytes, and a failure after the first byte, which ends the connection without the
chunked stream's end (NDJSON: an error line last) so a client sees the export is cut."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from monitor import rawdata
from monitor.api.errors import ApiError
from monitor.api.exports import choose_format, stream
from monitor.domain.exports import Export


@pytest.mark.parametrize(
    ("param", "accept", "chosen"),
    [
        (None, None, "json"),
        (None, "*/*", "json"),
        (None, "text/csv", "csv"),
        (None, "application/x-ndjson", "ndjson"),
        (None, "text/csv, */*", "csv"),
        (None, "application/json, text/csv;q=0.5", "json"),
        (None, "text/csv;q=0.2, application/x-ndjson;q=0.9", "ndjson"),
        (None, "text/csv;q=0", "json"),
        (None, "text/html", "json"),
        ("csv", "application/json", "csv"),
        ("json", "text/csv", "json"),
    ],
)
def test_the_format_chosen(param: str | None, accept: str | None, chosen: str) -> None:
    assert choose_format(param, accept) == chosen


def test_an_unknown_format_is_a_400_naming_it() -> None:
    with pytest.raises(ApiError) as caught:
        choose_format("xml", None)
    assert (caught.value.status, caught.value.field) == (400, "format")


ROW = {"time": "2026-11-01T00:00:00Z", "ok": False, "status_code": None, "latency_ms": 1.5,
       "error": 'a, "b"\nc', "location": None, "checked_from": None,
       "timings": {"dns_ms": 1.0, "connect_ms": None, "tls_ms": None, "ttfb_ms": 2.0},
       "details": {"x": [1]}, "cursor": "WzEsMl0"}  # fmt: skip


def test_csv_is_rfc_4180_and_flat() -> None:
    encoder = rawdata.Encoder("csv", rawdata.CHECK_COLUMNS)
    text = (encoder.head() + encoder.rows([ROW])).decode()
    assert text.endswith("\r\n") and '"a, ""b""\nc"' in text
    (row,) = csv.DictReader(io.StringIO(text, newline=""))
    assert row == {"time": "2026-11-01T00:00:00Z", "ok": "false", "status_code": "", "latency_ms": "1.5",
                   "error": 'a, "b"\nc', "location": "", "checked_from": "", "dns_ms": "1.0",
                   "connect_ms": "", "tls_ms": "", "ttfb_ms": "2.0", "details": '{"x":[1]}',
                   "cursor": "WzEsMl0"}  # fmt: skip
    assert encoder.cut("x", "c") == b""


def test_ndjson_is_the_row_itself() -> None:
    encoder = rawdata.Encoder("ndjson", rawdata.CHECK_COLUMNS)
    assert encoder.head() == b""
    assert json.loads(encoder.rows([ROW])) == ROW
    assert json.loads(encoder.cut("failed", "c"))["error"] == {
        "code": "export_cut",
        "message": "failed",
        "after": "c",
    }


async def _failing() -> AsyncIterator[list[dict[str, Any]]]:
    yield [{**ROW, "cursor": "second"}]
    raise ConnectionRefusedError("the database went away")


@pytest.mark.parametrize("fmt", rawdata.FORMATS)
async def test_a_failure_midway_cuts_the_stream_visibly(fmt: rawdata.Format) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        export = Export([{**ROW, "cursor": "first"}], _failing())
        return await stream(request, export, rawdata.Encoder(fmt, rawdata.CHECK_COLUMNS))

    app = web.Application()
    app.router.add_get("/", handler)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    got = b""
    try:
        async with aiohttp.ClientSession() as session, session.get(server.make_url("/")) as resp:
            assert resp.status == 200
            with pytest.raises(aiohttp.ClientPayloadError):
                async for chunk in resp.content.iter_any():
                    got += chunk
    finally:
        await server.close()
    lines = got.decode().splitlines()
    if fmt == "ndjson":
        assert [json.loads(line).get("cursor") for line in lines[:2]] == ["first", "second"]
        assert json.loads(lines[-1])["error"]["after"] == "second"
    else:
        assert lines[0].startswith("time,ok,") and lines[-1].endswith(",second")
