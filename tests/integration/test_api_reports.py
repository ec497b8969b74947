"""SLA reports through a live api, against the uptime and incidents endpoints and the sums
worked out by hand: every figure of a report is what /uptime and /incidents answer for the same
range and monitor, to the second (exactly: the same floats), in JSON, in CSV and in the PDF's text.

The data set is rows written straight into the database, in the account's time zone
Europe/Berlin, around October 2026 (745 hours: the clocks go back at 01:00 UTC on the 25th):

``shop``  created 2026-09-01, checked every 30 min; outages 30 Sep 21:00-23:00 UTC (the month
          starts at 22:00 UTC: one hour in October), 25 Oct 00:30-01:30 UTC (across the DST
          change), 31 Oct 22:30 - 1 Nov 00:00 UTC (the month ends at 23:00 UTC: 30 min in), and
          10 Oct 10:00-10:30 inside a maintenance window 09:00-11:00 (no downtime, 2 h apart).
``api``   created 15 Oct 12:00 UTC (before that: unknown), paused 20 Oct 00:00 - 21 Oct 00:00
          (unknown), an outage 22 Oct 05:00-05:20.
``blog``  created 2026-09-01, never checked: its whole month is unknown.
"""

from __future__ import annotations

import asyncio
import csv
import io
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from support import ApiClient, rfc3339

from monitor import rollups

pytestmark = pytest.mark.timeout(120)

M, H, D = timedelta(minutes=1), timedelta(hours=1), timedelta(days=1)
OCT_START, OCT_END = datetime(2026, 9, 30, 22, tzinfo=UTC), datetime(2026, 10, 31, 23, tzinfo=UTC)
OCTOBER_S = 745 * 3600.0
SHOP_OUTAGES = [
    (datetime(2026, 9, 30, 21, tzinfo=UTC), datetime(2026, 9, 30, 23, tzinfo=UTC)),
    (datetime(2026, 10, 10, 10, tzinfo=UTC), datetime(2026, 10, 10, 10, 30, tzinfo=UTC)),
    (datetime(2026, 10, 25, 0, 30, tzinfo=UTC), datetime(2026, 10, 25, 1, 30, tzinfo=UTC)),
    (datetime(2026, 10, 31, 22, 30, tzinfo=UTC), datetime(2026, 11, 1, tzinfo=UTC)),
]
MAINTENANCE = (datetime(2026, 10, 10, 9, tzinfo=UTC), datetime(2026, 10, 10, 11, tzinfo=UTC))
API_CREATED = datetime(2026, 10, 15, 12, tzinfo=UTC)
API_PAUSE = (datetime(2026, 10, 20, tzinfo=UTC), datetime(2026, 10, 21, tzinfo=UTC))
API_OUTAGES = [(datetime(2026, 10, 22, 5, tzinfo=UTC), datetime(2026, 10, 22, 5, 20, tzinfo=UTC))]
CHECKS_END = datetime(2026, 11, 3, tzinfo=UTC)
PNG = Path("/work/wt/report-page1.png")


@dataclass(frozen=True)
class DataSet:
    ids: dict[str, int]
    page_id: int


async def write_checks(
    db: asyncpg.Connection, mid: int, start: datetime, outages: list[tuple[datetime, datetime]],
    skip: tuple[datetime, datetime] | None, latency: float,
) -> None:  # fmt: skip
    """A check every 30 minutes from ``start`` to CHECKS_END (failing inside ``outages``, none in
    ``skip``), and their hourly rollups as the scheduler's writer keeps them."""
    rows, hours = [], {}
    at = start
    while at < CHECKS_END:
        if skip is None or not skip[0] <= at < skip[1]:
            ok = not any(s <= at < e for s, e in outages)
            rows.append(
                (at, mid, ok, 200 if ok else 503, latency if ok else 40.0, None if ok else "HTTP 503")
            )
            hour = hours.setdefault(at.replace(minute=0), rollups.Rollup())
            hour.add(ok, latency if ok else 40.0)
        at += 30 * M
    await db.executemany(
        """INSERT INTO checks (time, monitor_id, ok, status_code, latency_ms, error)
           VALUES ($1, $2, $3, $4, $5, $6)""",
        rows,
    )
    await db.executemany(
        """INSERT INTO checks_hourly (monitor_id, hour, checks, checks_up, latency_n, latency_sum,
                                      latency_max, latency_hist) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)""",
        [
            (mid, h, r.checks, r.checks_up, r.latency_n, r.latency_sum, r.latency_max, r.hist)
            for h, r in hours.items()
        ],
    )


async def add_incidents(db: asyncpg.Connection, mid: int, outages: list[tuple[datetime, datetime]]) -> None:
    await db.executemany(
        """INSERT INTO incidents (monitor_id, started_at, ended_at, status_code, error)
           VALUES ($1, $2, $3, 503, 'HTTP 503 Service Unavailable')""",
        [(mid, s, e) for s, e in outages],
    )


@pytest.fixture
async def data(db: asyncpg.Connection, monitor_factory: Any, api: ApiClient) -> AsyncIterator[DataSet]:
    account = await db.fetchval("SELECT account_id FROM api_keys WHERE id = (SELECT max(id) FROM api_keys)")
    await db.execute("UPDATE accounts SET timezone = 'Europe/Berlin' WHERE id = $1", account)
    await db.execute("DELETE FROM monitors WHERE account_id = $1", account)
    created = datetime(2026, 9, 1, tzinfo=UTC)
    ids = {}
    for name, tags, since in [("shop", ["prod"], created), ("api", ["prod", "api"], API_CREATED),
                              ("blog", ["web"], created)]:  # fmt: skip
        made = await monitor_factory(url=f"http://{name}.example/", name=name, tags=tags, created_at=since)
        ids[name] = made["id"]
    await write_checks(db, ids["shop"], datetime(2026, 9, 28, tzinfo=UTC), SHOP_OUTAGES, None, 100.0)
    await write_checks(db, ids["api"], API_CREATED, API_OUTAGES, API_PAUSE, 300.0)
    await add_incidents(db, ids["shop"], SHOP_OUTAGES)
    await add_incidents(db, ids["api"], API_OUTAGES)
    await db.execute(
        "INSERT INTO monitor_pauses (monitor_id, started_at, ended_at) VALUES ($1, $2, $3)",
        ids["api"],
        *API_PAUSE,
    )
    window = await db.fetchval(
        """INSERT INTO maintenance_windows (account_id, name, kind, starts_at, ends_at, monitor_ids)
           VALUES ($1, 'database upgrade', 'once', $2, $3, $4) RETURNING id""",
        account, *MAINTENANCE, [ids["shop"]],
    )  # fmt: skip
    page = await api.post(
        "/api/v1/status-pages",
        json={"slug": "reported", "title": "Reported services",
              "groups": [{"name": "Shop", "monitor_ids": [ids["shop"]]}, {"name": "API", "tags": ["api"]}]},
    )  # fmt: skip
    assert page.status == 201, page
    yield DataSet(ids, page.json["id"])
    await api.delete(f"/api/v1/status-pages/{page.json['id']}")
    await db.execute("DELETE FROM maintenance_windows WHERE id = $1", window)
    await db.execute("UPDATE accounts SET timezone = 'UTC' WHERE id = $1", account)


async def report(api: ApiClient, **params: str) -> dict[str, Any]:
    answer = await api.get("/api/v1/reports/sla", params=params)
    assert answer.status == 200, answer
    body: dict[str, Any] = answer.json
    return body


async def endpoints(
    api: ApiClient, mid: int, start: str, end: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    uptime = await api.get(f"/api/v1/monitors/{mid}/uptime", params={"from": start, "to": end})
    incidents = await api.get(
        f"/api/v1/monitors/{mid}/incidents", params={"from": start, "to": end, "limit": "1000"}
    )
    assert uptime.status == incidents.status == 200, (uptime, incidents)
    return uptime.json, incidents.json["items"]


async def assert_adds_up(api: ApiClient, body: dict[str, Any]) -> None:
    """Every monitor's row is its /uptime and /incidents answer; the rows add up to the summary."""
    start, end = body["period"]["from"], body["period"]["to"]
    listed = {i["id"]: i for i in body["incidents"]}
    # A period that runs on past now is read again a few milliseconds later by the endpoints:
    # its figures then agree to the second, not to the bit.
    running = body["period"]["to"] > body["generated_at"]

    def same(value: float | None) -> Any:
        return pytest.approx(value, abs=1.0, rel=1e-9) if running and value is not None else value

    for row in body["monitors"]:
        uptime, incidents = await endpoints(api, row["monitor_id"], start, end)
        assert row["uptime_percent"] == same(uptime["uptime_percent"])
        assert row["downtime_seconds"] == same(uptime["downtime_seconds"] or 0.0)
        assert row["maintenance_seconds"] == same(uptime["maintenance_seconds"])
        assert row["degraded_seconds"] == same(uptime["degraded_seconds"] or 0.0)
        assert (row["checks"], row["checks_up"]) == (uptime["checks"], uptime["checks_up"])
        assert row["incidents"] == len(incidents)
        for item in incidents:
            mine = listed[item["id"]]
            if running and item["ongoing"]:
                assert mine["duration_seconds"] == pytest.approx(item["duration_seconds"], abs=1.0)
                item["duration_seconds"] = mine["duration_seconds"]
            assert {k: mine[k] for k in item} == item  # /incidents' own rendering, field for field
        if row["uptime_percent"] is not None:
            assert row["downtime_seconds"] == pytest.approx(
                row["counted_seconds"] * (1 - row["uptime_percent"] / 100), abs=1e-6
            )
        assert row["counted_seconds"] + row["maintenance_seconds"] + row["unknown_seconds"] == pytest.approx(
            row["period_seconds"], abs=1e-6
        )
        own = [i for i in body["incidents"] if i["monitor_id"] == row["monitor_id"]]
        assert sum(i["downtime_seconds"] for i in own) == pytest.approx(row["downtime_seconds"], abs=1e-6)
    total = body["summary"]
    for name in (
        "counted_seconds",
        "downtime_seconds",
        "maintenance_seconds",
        "unknown_seconds",
        "incidents",
    ):
        assert total[name] == pytest.approx(sum(r[name] for r in body["monitors"]), abs=1e-6), name


async def test_october_in_berlin_adds_up(api: ApiClient, data: DataSet) -> None:
    body = await report(api, scope="account", month="2026-10", target="99.9")
    period = {"kind": "month", "label": "2026-10", "from": rfc3339(OCT_START), "to": rfc3339(OCT_END),
              "timezone": "Europe/Berlin", "hours": 745.0}  # fmt: skip
    assert body["period"] == period
    await assert_adds_up(api, body)
    rows = {r["name"]: r for r in body["monitors"]}
    assert list(rows) == ["shop", "api", "blog"]
    # shop: 745 h less 2 h of maintenance counted; 1 h + 1 h + 30 min down; 4 incidents overlap
    shop = rows["shop"]
    assert shop["counted_seconds"] == OCTOBER_S - 7200
    assert shop["downtime_seconds"] == 9000.0
    assert shop["maintenance_seconds"] == 7200.0
    assert shop["unknown_seconds"] == 0.0
    assert shop["incidents"] == 4
    assert shop["mttr_seconds"] == 9000 / 4
    assert shop["mtbf_seconds"] == (OCTOBER_S - 7200 - 9000) / 4
    assert shop["uptime_percent"] == 100 * (1 - 9000 / (OCTOBER_S - 7200))
    assert 75 < shop["p50_ms"] <= 100
    # api: from 15 Oct 12:00 (16 d 11 h in October) less the paused day; 20 min down
    api_row = rows["api"]
    assert api_row["counted_seconds"] == (16 * 86400 + 11 * 3600) - 86400
    assert api_row["downtime_seconds"] == 1200.0
    assert api_row["unknown_seconds"] == OCTOBER_S - api_row["counted_seconds"]
    # blog: no checks: nothing counted, every second unknown
    assert rows["blog"]["uptime_percent"] is None
    assert rows["blog"]["unknown_seconds"] == OCTOBER_S
    # the account: time-weighted, not a mean of percentages; 99.9 % allows 0.1 % of the counted time
    total = body["summary"]
    counted = (OCTOBER_S - 7200) + api_row["counted_seconds"]
    assert total["counted_seconds"] == counted
    assert total["uptime_percent"] == pytest.approx(100 * (1 - 10200 / counted), abs=1e-12)
    assert total["unknown_seconds"] == api_row["unknown_seconds"] + OCTOBER_S
    assert total["budget_seconds"] == pytest.approx(0.001 * counted)
    assert total["budget_left_seconds"] == pytest.approx(0.001 * counted - 10200)
    assert total["breached"] is True
    assert total["mttr_seconds"] == 10200 / 5
    # the incidents, oldest first, each with its cause and its part of the downtime here
    shown = [
        (i["monitor_name"], i["started_at"], i["downtime_seconds"], i["error"]) for i in body["incidents"]
    ]
    assert shown == [
        ("shop", "2026-09-30T21:00:00Z", 3600.0, "HTTP 503 Service Unavailable"),
        ("shop", "2026-10-10T10:00:00Z", 0.0, "HTTP 503 Service Unavailable"),
        ("api", "2026-10-22T05:00:00Z", 1200.0, "HTTP 503 Service Unavailable"),
        ("shop", "2026-10-25T00:30:00Z", 3600.0, "HTTP 503 Service Unavailable"),
        ("shop", "2026-10-31T22:30:00Z", 1800.0, "HTTP 503 Service Unavailable"),
    ]


@pytest.mark.parametrize(
    ("params", "names", "hours"),
    [
        ({"scope": "tag", "tag": "prod", "quarter": "2026-Q4"}, ["shop", "api"], 2209.0),
        ({"scope": "page", "month": "2026-10"}, ["shop", "api"], 745.0),
        ({"scope": "monitor", "from": "2026-10-25", "to": "2026-10-26"}, ["shop"], 25.0),
        (
            {"scope": "monitor", "from": "2026-10-31T12:00:00", "to": "2026-11-01T12:00:00+01:00"},
            ["shop"],
            24.0,
        ),
    ],
)
async def test_scopes_and_periods_add_up(
    api: ApiClient, data: DataSet, params: dict[str, str], names: list[str], hours: float
) -> None:
    if params["scope"] in ("page", "monitor"):
        params = {**params, "id": str(data.page_id if params["scope"] == "page" else data.ids["shop"])}
    body = await report(api, **params, target="99.5")
    assert [r["name"] for r in body["monitors"]] == names
    assert body["period"]["hours"] == hours
    await assert_adds_up(api, body)
    if params["scope"] == "monitor":
        assert body["subject"] == "shop"
        row, total = body["monitors"][0], body["summary"]
        assert {k: total[k] for k in total} == {k: row[k] for k in total}


async def test_csv_carries_the_same_figures(api: ApiClient, data: DataSet) -> None:
    body = await report(api, month="2026-10", target="99.9")
    answer = await api.get(
        "/api/v1/reports/sla", params={"month": "2026-10", "target": "99.9", "format": "csv"}
    )
    assert answer.status == 200 and answer.headers["Content-Type"].startswith("text/csv")
    assert 'filename="sla-account-2026-10.csv"' in answer.headers["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(answer.text)))
    assert [r["monitor_name"] for r in rows] == ["shop", "api", "blog", "(all)"]
    for row, figures in zip(rows, [*body["monitors"], body["summary"]], strict=True):
        for name in CSV_FIGURES:
            expected = figures[name]
            assert (float(row[name]) if row[name] else None) == expected, name
        assert int(row["incidents"]) == figures["incidents"]
        assert row["timezone"] == "Europe/Berlin"


def read_pdf(pdf: bytes) -> str:
    """The PDF's text (pdftotext); its first page as PNG (pdftoppm at 60 dpi) kept for people
    in PNG's folder when there is one."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "report.pdf"
        path.write_bytes(pdf)
        text = subprocess.run(
            ["pdftotext", str(path), "-"], capture_output=True, text=True, check=True
        ).stdout
        page = Path(tmp) / "page"
        subprocess.run(
            ["pdftoppm", "-png", "-r", "60", "-f", "1", "-l", "1", str(path), str(page)], check=True
        )
        first = next(Path(tmp).glob("page*.png"))
        assert first.read_bytes().startswith(b"\x89PNG")
        if PNG.parent.is_dir():
            shutil.copyfile(first, PNG)
    return text


CSV_FIGURES = (
    "uptime_percent", "downtime_seconds", "counted_seconds", "maintenance_seconds", "unknown_seconds",
    "mttr_seconds", "mtbf_seconds", "budget_left_seconds", "p95_ms",
)  # fmt: skip


def _percent(value: float) -> str:
    return f"{value:.4f} %"


async def test_pdf_and_html_show_the_figures(api: ApiClient, data: DataSet) -> None:
    assert shutil.which("pdftotext") and shutil.which("pdftoppm"), "make test-tools installs poppler-utils"
    params = {"scope": "account", "month": "2026-10", "target": "99.9"}
    body = await report(api, **params)
    async with api.session.get(
        api.base_url + "/api/v1/reports/sla", params={**params, "format": "pdf"},
        headers={"Authorization": f"Bearer {api.key}"},
    ) as resp:  # fmt: skip
        assert resp.status == 200 and resp.content_type == "application/pdf"
        pdf = await resp.read()
    assert pdf.startswith(b"%PDF-")
    text = await asyncio.to_thread(read_pdf, pdf)
    shown = " ".join(text.split())
    total = body["summary"]
    for expected in [
        "SLA report: test", "Period: 2026-10", "Time zone: Europe/Berlin", "745 hours",
        _percent(total["uptime_percent"]), "10200 s (2 h 50 min)", f"{round(total['unknown_seconds'])} s",
        "7200 s (2 h)", f"{round(total['budget_left_seconds'])} s", "Target breached",
        *(_percent(r["uptime_percent"]) for r in body["monitors"] if r["uptime_percent"] is not None),
        "02:30:00 CEST", "02:30:00 CET", "HTTP 503: HTTP 503 Service Unavailable",
    ]:  # fmt: skip
        assert expected in shown, (expected, shown[:3000])
    html = await api.get("/api/v1/reports/sla", params={**params, "format": "html"})
    assert html.status == 200 and html.headers["Content-Type"].startswith("text/html")
    assert "default-src 'none'" in html.headers["Content-Security-Policy"]
    assert _percent(total["uptime_percent"]) in html.text and "<script" not in html.text


@pytest.mark.parametrize(
    ("params", "status", "field"),
    [
        ({"month": "2026-10", "target": "0"}, 400, "target"),
        ({"month": "2026-10", "target": "100.01"}, 400, "target"),
        ({"month": "2026-10", "target": "ninety"}, 400, "target"),
        ({"from": "2026-10-02", "to": "2026-10-01"}, 400, "to"),
        ({"from": "2026-10-02"}, 400, "to"),
        ({"month": "2026-13"}, 400, "month"),
        ({"quarter": "2026-Q0"}, 400, "quarter"),
        ({"month": "2026-10", "quarter": "2026-Q4"}, 400, "quarter"),
        ({"scope": "everything"}, 400, "scope"),
        ({"scope": "monitor"}, 400, "id"),
        ({"scope": "monitor", "id": "x"}, 400, "id"),
        ({"scope": "monitor", "id": "999999999"}, 404, "id"),
        ({"scope": "page", "id": "999999999"}, 404, "id"),
        ({"scope": "tag", "tag": "nobody-has-this"}, 404, "tag"),
        ({"scope": "tag"}, 400, "tag"),
        ({"format": "xml"}, 400, "format"),
    ],
)
async def test_bad_input_names_the_field(
    api: ApiClient, data: DataSet, params: dict[str, str], status: int, field: str
) -> None:
    answer = await api.get("/api/v1/reports/sla", params=params)
    assert answer.status == status, answer
    assert answer.json["error"]["field"] == field
    assert answer.json["error"]["message"].startswith(f"{field}: ")
