"""A monitor's screenshots through the API and the dashboard (real PostgreSQL, the api in
process): list, PNG, accepting a baseline and setting its masks; viewers read but do not
write, another account's are not found; the dashboard's page with its forms."""

from __future__ import annotations

import io
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import aiohttp
import asyncpg
import numpy as np
import pytest
from PIL import Image
from support import ensure_account, insert_monitor
from support.api import ApiClient
from support.dashboard import Person
from support.inprocess import InProcessFactory, inprocess_api_fixture  # noqa: F401
from support.people import make_user
from support.status_data import add_incident

from monitor.domain import keys as api_keys
from monitor.models import MonitorSpec
from monitor.visual import VisualSettings
from monitor.visual.store import ScreenshotStore
from monitor.web.keys import DEPS

PASSWORD = "Screenshots-Faces-4b7e1a"
COMPARE = VisualSettings(compare=True, threshold_percent=5)
T0 = datetime.now(UTC) - timedelta(hours=1)


def shot(block: bool = False) -> bytes:
    pixels = np.full((100, 200, 3), 255, dtype=np.uint8)
    if block:
        pixels[:40, :50] = 0  # 10 % of the page
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def planted(db: asyncpg.Connection, pool: asyncpg.Pool) -> tuple[int, dict[str, int]]:
    """A monitor with a baseline, a changed latest and an outage's screenshot of its incident."""
    row = await insert_monitor(db, url="https://shop.example/", name="Shop")
    monitor = MonitorSpec.from_row(row)
    store = ScreenshotStore(pool)
    await store.keep(monitor, shot(), at=T0, failed=False, visual=COMPARE)
    await add_incident(db, monitor.id, T0 + timedelta(minutes=5), T0 + timedelta(minutes=20))
    onset = await store.keep(monitor, shot(True), at=T0 + timedelta(minutes=5), failed=False, visual=COMPARE)
    latest = await store.keep(
        monitor, shot(True), at=T0 + timedelta(minutes=10), failed=False, visual=COMPARE
    )
    ids = {
        r["role"]: r["id"] for r in await db.fetch("SELECT id, role FROM screenshots WHERE role <> 'onset'")
    }
    return monitor.id, {"onset": onset["id"], "latest": latest["id"], "baseline": ids["baseline"]}


async def test_the_api_lists_serves_accepts_and_masks(
    db: asyncpg.Connection, inprocess_api: InProcessFactory, http: aiohttp.ClientSession
) -> None:
    served = await inprocess_api()
    monitor_id, ids = await planted(db, served.app[DEPS].pool)
    account = await ensure_account(db)
    owner = await api_keys.create_key(db, account, "owner")
    viewer = await api_keys.create_key(db, account, "viewer", role="viewer")
    stranger = await api_keys.create_key(db, await ensure_account(db, "other"), "other")
    base = f"/api/v1/monitors/{monitor_id}/screenshots"
    async with (
        ApiClient(served.base_url, key=owner.key) as api,
        ApiClient(served.base_url, key=viewer.key) as reader,
        ApiClient(served.base_url, key=stranger.key) as other,
    ):
        listed = (await reader.get(base)).json["screenshots"]
        assert [s["role"] for s in listed] == ["latest", "baseline", "onset"]
        latest, _baseline, onset = listed
        assert (latest["diff_percent"], latest["baseline_id"]) == (10.0, ids["baseline"])
        incident = await db.fetchval("SELECT id FROM incidents WHERE monitor_id = $1", monitor_id)
        assert onset["incident_id"] == incident and latest["incident_id"] is None
        assert latest["image"] == f"{base}/{ids['latest']}"
        async with http.get(
            served.base_url + latest["image"], headers={"Authorization": f"Bearer {viewer.key}"}
        ) as r:
            assert (r.status, r.content_type) == (200, "image/png")
            assert await r.read() == shot(True)
        # viewers do not write; strangers do not see
        assert (await reader.post(f"{base}/{ids['latest']}/baseline")).status == 403
        assert (await reader.request("PUT", f"{base}/masks", json={"masks": []})).status == 403
        for path in (base, f"{base}/{ids['latest']}"):
            assert (await other.get(path)).status == 404
        assert (await other.post(f"{base}/{ids['latest']}/baseline")).status == 404
        assert (await other.request("PUT", f"{base}/masks", json={"masks": []})).status == 404
        # a screenshot of another monitor is not found under this one
        second = await insert_monitor(db, url="https://blog.example/", name="Blog")
        assert (await api.get(f"/api/v1/monitors/{second['id']}/screenshots/{ids['latest']}")).status == 404
        # masks, then accept: the masks carry over
        bad = await api.request(
            "PUT", f"{base}/masks", json={"masks": [{"x": 0, "y": 0, "width": 0, "height": 1}]}
        )
        assert bad.status == 422 and bad.json["error"]["field"].startswith("masks"), bad.text
        masked = await api.request(
            "PUT", f"{base}/masks", json={"masks": [{"x": 0, "y": 0, "width": 50, "height": 40}]}
        )
        assert masked.status == 200 and masked.json["masks"] == [{"x": 0, "y": 0, "width": 50, "height": 40}]
        accepted = await api.post(f"{base}/{ids['latest']}/baseline")
        assert accepted.status == 200, accepted.text
        new = accepted.json
        assert new["role"] == "baseline" and new["accepted_at"] and new["masks"] == masked.json["masks"]
        assert (await api.post(f"{base}/{new['id']}/baseline")).status == 409
        assert await db.fetchval("SELECT count(*) FROM screenshots WHERE role = 'baseline'") == 1
        assert (
            await db.fetchval(
                "SELECT operation FROM audit_log WHERE resource = 'screenshots' ORDER BY id DESC LIMIT 1"
            )
            == "accept_baseline"
        )
        # no baseline: masks are refused with a 409 naming the field
        await db.execute("DELETE FROM screenshots WHERE role = 'baseline'")
        none = await api.request("PUT", f"{base}/masks", json={"masks": []})
        assert (none.status, none.json["error"]["code"]) == (409, "no_baseline")


async def test_the_dashboard_page_shows_and_changes_them(
    db: asyncpg.Connection, inprocess_api: InProcessFactory, http: aiohttp.ClientSession
) -> None:
    served = await inprocess_api()
    monitor_id, ids = await planted(db, served.app[DEPS].pool)
    account = await ensure_account(db)
    await make_user(db, "editor@example.com", PASSWORD, account, "editor")
    await make_user(db, "viewer@example.com", PASSWORD, account, "viewer")
    editor = await Person.sign_in(served.base_url, http, "editor@example.com", PASSWORD)
    page = await editor.get(f"/monitors/{monitor_id}/screenshots")
    assert page.status == 200, page.text
    assert f'src="/monitors/{monitor_id}/screenshots/{ids["latest"]}.png"' in page.text
    assert f'src="/monitors/{monitor_id}/screenshots/{ids["baseline"]}.png"' in page.text
    assert "10.0 % of the page" in page.text and "Accept as baseline" in page.text
    assert f'href="/monitors/{monitor_id}#incident-' in page.text
    cookie = {"Cookie": "; ".join(f"{k}={v}" for k, v in editor.cookies.items())}
    for path in (f"{ids['latest']}.png", f"{ids['latest']}/diff.png"):
        async with http.get(
            f"{served.base_url}/monitors/{monitor_id}/screenshots/{path}", headers=cookie
        ) as r:
            assert (r.status, r.content_type) == (200, "image/png")
            assert (await r.read()).startswith(b"\x89PNG")
    # masks as lines; a bad line is shown on the form
    wrong = await editor.post(f"/monitors/{monitor_id}/screenshots/masks", {"masks": "0 0 50"})
    assert wrong.status == 422 and "line 1 is not four whole numbers" in wrong.text
    saved = await editor.post(
        f"/monitors/{monitor_id}/screenshots/masks", {"masks": "0 0 50 40\n\n10,10,5,5"}
    )
    assert saved.status == 303, saved.text
    masks = await db.fetchval("SELECT masks FROM screenshots WHERE role = 'baseline'")
    assert masks == [{"x": 0, "y": 0, "width": 50, "height": 40}, {"x": 10, "y": 10, "width": 5, "height": 5}]
    shown = await editor.get(f"/monitors/{monitor_id}/screenshots")
    assert "0 0 50 40\n10 10 5 5" in shown.text
    accepted = await editor.post(f"/monitors/{monitor_id}/screenshots/{ids['latest']}/baseline", {})
    assert accepted.status == 303 and accepted.location == f"/monitors/{monitor_id}/screenshots?done=accepted"
    assert "baseline now" in (await editor.get(accepted.location)).text
    # without the CSRF token: refused
    forged = await editor.post(f"/monitors/{monitor_id}/screenshots/{ids['latest']}/baseline", {}, csrf=False)
    assert forged.status == 403
    # a viewer sees the pictures, not the forms
    viewer = await Person.sign_in(served.base_url, http, "viewer@example.com", PASSWORD)
    seen = await viewer.get(f"/monitors/{monitor_id}/screenshots")
    assert seen.status == 200 and "Accept as baseline" not in seen.text
    assert not re.search(r"<form[^>]+screenshots/masks", seen.text)
