"""SLA reports in the dashboard: a viewer asks for a monitor's October, sees the figures the
API's report gives (the same text its PDF shows), with links to the CSV and PDF that work with
the session; a bad field is shown next to it, the form kept as typed."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import aiohttp
import asyncpg
from support import ensure_account
from support.dashboard import Person, base_url_fixture, http_fixture  # noqa: F401
from support.inprocess import InProcessFactory, inprocess_api_fixture  # noqa: F401
from support.people import make_user

from monitor import rollups
from monitor.reports import documents

PASSWORD = "Dashboard-Pass-9c2d71"


async def test_a_viewer_reads_a_report_and_its_links(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession, monitor_factory: Any
) -> None:
    account = await ensure_account(db)
    await make_user(db, "viewer@example.com", PASSWORD, account, "viewer")
    created = datetime(2026, 9, 1, tzinfo=UTC)
    mid = (await monitor_factory(url="http://shop.example/", name="shop <b>", created_at=created))["id"]
    await db.execute(
        "INSERT INTO checks (time, monitor_id, ok, status_code, latency_ms) VALUES ($1, $2, true, 200, 90)",
        datetime(2026, 10, 3, 12, 5, tzinfo=UTC), mid,
    )  # fmt: skip
    await db.execute(  # its hour's rollup, as the writer keeps one beside the check
        """INSERT INTO checks_hourly (monitor_id, hour, checks, checks_up, latency_n, latency_sum,
                                      latency_max, latency_hist) VALUES ($1, $2, 1, 1, 1, 90, 90, $3)""",
        mid, datetime(2026, 10, 3, 12, tzinfo=UTC), [0] * 5 + [1] + [0] * (rollups.N_BUCKETS - 6),
    )  # fmt: skip
    await db.execute(
        """INSERT INTO incidents (monitor_id, started_at, ended_at, status_code, error)
           VALUES ($1, $2, $3, 500, 'HTTP 500 Internal Server Error')""",
        mid, datetime(2026, 10, 3, 12, tzinfo=UTC), datetime(2026, 10, 3, 13, 30, tzinfo=UTC),
    )  # fmt: skip
    person = await Person.sign_in(base_url, http, "viewer@example.com", PASSWORD)
    empty = await person.get("/reports")
    assert empty.status == 200 and 'name="target"' in empty.text and 'href="/reports"' in empty.text

    query = f"scope=monitor&id={mid}&month=2026-10&target=99.9"
    shown = await person.get(f"/reports?{query}")
    assert shown.status == 200, shown.text[:500]
    answer = await person.get(f"/api/v1/reports/sla?{query}")  # the session works for the API too
    assert answer.status == 200
    total = json.loads(answer.text)["summary"]
    assert total["downtime_seconds"] == 5400.0 and total["incidents"] == 1
    for text in (documents.percent_text(total["uptime_percent"]), documents.seconds_text(5400.0),
                 documents.seconds_text(total["budget_left_seconds"]), "Target breached",
                 "shop &lt;b&gt;", "HTTP 500 Internal Server Error"):  # fmt: skip
        assert (
            text.replace("&", "&amp;").replace("&amp;lt;", "&lt;").replace("&amp;gt;", "&gt;") in shown.text
        ), text
    assert f'href="/api/v1/reports/sla?{query.replace("&", "&amp;")}&amp;format=pdf"' in shown.text
    pdf = await person.get(f"/api/v1/reports/sla?{query}&format=csv")
    assert pdf.status == 200 and pdf.text.startswith("monitor_id,monitor_name,")

    bad = await person.get(f"/reports?scope=monitor&id={mid}&month=2026-10&target=101")
    assert bad.status == 400 and 'id="f-target-error"' in bad.text and 'value="101"' in bad.text
    missing = await person.get("/reports?scope=monitor&id=999999999&month=2026-10")
    assert missing.status == 404 and 'id="f-id-error"' in missing.text
