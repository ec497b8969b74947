"""The local site page-speed tests and the parity bench measure, and how their Lighthouse
fixtures were recorded.

``serve()`` starts an aiohttp server on 127.0.0.1 with:

- ``/``: a fast page (a heading and a paragraph; lang, title, description, viewport: every
  Lighthouse category scores 1 here);
- ``/slow``: the same page whose largest element, a 400x300 image, is answered ``slow`` seconds
  late by the server (4 s: Lighthouse's LCP reads about 4.8 s against 0.6 s for ``/``), and
  which lacks its description and the image's alt text (failed SEO and accessibility audits);
- ``/missing``: a 404 page.

``python -m support.lighthouse_pages`` (from tests/, with ``make browser-tools`` done) runs the
installed Lighthouse through ``Chromium.run`` against ``/slow`` and ``/missing`` and writes
``tests/unit/fixtures/lighthouse/{slow,missing}.json``, stripped (:func:`strip`) to what
``checks/lighthouse_report.py`` reads.
"""

from __future__ import annotations

import asyncio
import json
import struct
import sys
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from aiohttp import web

FIXTURES = Path(__file__).resolve().parents[1] / "unit/fixtures/lighthouse"
SLOW_SECONDS = 4.0

HEAD = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">{description}
<link rel="icon" href="data:,"></head><body>"""
FAST = HEAD.format(title="Fast", description='<meta name="description" content="A fast page.">') + (
    "<h1>A fast page</h1><p>Its largest element is this paragraph, here with the document.</p></body></html>"
)
SLOW = HEAD.format(title="Slow", description="") + (
    "<h1>A slow page</h1><p>Its largest element arrives late.</p>"
    '<img src="/hero.png" width="400" height="300">'
    "</body></html>"
)
MISSING = HEAD.format(title="Not found", description="") + "<h1>Not found</h1></body></html>"
PAGES = {"/": (FAST, 200), "/slow": (SLOW, 200), "/missing": (MISSING, 404)}


def png(width: int, height: int) -> bytes:
    """An RGB PNG of a gradient (nothing to decode but the image itself)."""
    row = bytes((x * 7) % 256 for x in range(width)) * 3
    raw = b"".join(b"\x00" + row for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


@asynccontextmanager
async def serve(slow: float = SLOW_SECONDS) -> AsyncIterator[str]:
    """The site on 127.0.0.1; its base URL (``http://127.0.0.1:PORT/``)."""
    hero = png(400, 300)

    def html(text: str, status: int = 200) -> web.Response:
        return web.Response(text=text, content_type="text/html", status=status)

    async def late_image(_request: web.Request) -> web.Response:
        await asyncio.sleep(slow)
        return web.Response(body=hero, content_type="image/png")

    async def page(request: web.Request) -> web.Response:
        found = PAGES.get(request.path)
        return html(found[0], found[1]) if found else html(MISSING, 404)

    app = web.Application()
    app.router.add_get("/hero.png", late_image)
    app.router.add_get("/{name:.*}", page)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/"
    finally:
        await runner.cleanup()


# What a stripped report keeps: the fields lighthouse_report reads, each audit without its
# description and details (the main document's request alone is kept of network-requests).
TOP = (
    "lighthouseVersion",
    "requestedUrl",
    "mainDocumentUrl",
    "finalDisplayedUrl",
    "runtimeError",
    "runWarnings",
)
AUDIT = (
    "id",
    "title",
    "score",
    "scoreDisplayMode",
    "numericValue",
    "numericUnit",
    "displayValue",
    "metricSavings",
)


def strip(report: dict[str, Any]) -> dict[str, Any]:
    """``report`` with only what ``checks/lighthouse_report.py`` reads."""
    kept: dict[str, Any] = {key: report[key] for key in TOP if key in report}
    kept["configSettings"] = {"formFactor": report.get("configSettings", {}).get("formFactor")}
    kept["categories"] = {
        cid: {
            "id": cid,
            "title": category.get("title"),
            "score": category.get("score"),
            "auditRefs": [{k: ref[k] for k in ("id", "weight") if k in ref} for ref in category["auditRefs"]],
        }
        for cid, category in report.get("categories", {}).items()
    }
    audits: dict[str, Any] = {}
    for aid, audit in report.get("audits", {}).items():
        audits[aid] = {k: audit[k] for k in AUDIT if k in audit}
    requests = report.get("audits", {}).get("network-requests", {}).get("details", {}).get("items", [])
    documents = [
        {k: item.get(k) for k in ("url", "statusCode", "resourceType")}
        for item in requests
        if item.get("resourceType") == "Document"
    ]
    if "network-requests" in audits:
        audits["network-requests"]["details"] = {"type": "table", "items": documents}
    kept["audits"] = audits
    return kept


async def record() -> None:
    from monitor.browser.chromium import Chromium
    from monitor.browser.lighthouse import LighthouseRun, find_cli, run_lighthouse
    from monitor.net import AddressPolicy, VettedResolver

    cli = find_cli()
    if cli is None:
        sys.exit("no Lighthouse CLI: make browser-tools")
    resolver = VettedResolver(AddressPolicy(["127.0.0.1/32"]))
    chromium = Chromium(resolver, memory_mb=1024)
    FIXTURES.mkdir(parents=True, exist_ok=True)
    try:
        async with serve() as base:
            for name in ("slow", "missing"):
                async with chromium.run(120) as run:
                    report = await run_lighthouse(cli, LighthouseRun(base + name), run.devtools_port)
                # The server's port is of this recording: the fixtures name a fixed one.
                text = json.dumps(strip(report), indent=1, sort_keys=True).replace(
                    base, "http://127.0.0.1:8000/"
                )
                (FIXTURES / f"{name}.json").write_text(text + "\n")
                print(name, len(text), "characters")
    finally:
        await chromium.close()
        await resolver.close()


if __name__ == "__main__":
    asyncio.run(record())
