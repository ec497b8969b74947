"""The screenshot store (monitor/visual/store.py) on the real database: latest replaced, the
first baseline taken by itself, a change over the threshold judged, an outage's first
screenshot kept apart for its incident, masks honoured, the size cap and the retention sweep."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta

import asyncpg
import numpy as np
import pytest
from PIL import Image

from monitor import db as monitor_db
from monitor.models import MonitorSpec
from monitor.visual import VisualSettings, verdict_of
from monitor.visual.store import ScreenshotStore, sweep

MonitorFactory = Callable[..., Awaitable[asyncpg.Record]]  # the conftest fixture
T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
COMPARE = VisualSettings(compare=True, threshold_percent=5)


def shot(block: tuple[int, int, int, int] | None = None, size: tuple[int, int] = (200, 100)) -> bytes:
    """A white page, with a black block (x, y, w, h) when given."""
    pixels = np.full((size[1], size[0], 3), 255, dtype=np.uint8)
    if block:
        x, y, w, h = block
        pixels[y : y + h, x : x + w] = 0
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture
async def pool(migrated: str, db: asyncpg.Connection) -> AsyncIterator[asyncpg.Pool]:
    made = await monitor_db.create_pool(migrated, min_size=1, max_size=2)
    try:
        yield made
    finally:
        await made.close()


async def spec(monitor_factory: MonitorFactory) -> MonitorSpec:
    row = await monitor_factory(url="https://shop.example/", name="Shop")
    return MonitorSpec.from_row(row)


async def roles(db: asyncpg.Connection, monitor_id: int) -> list[tuple[str, datetime]]:
    rows = await db.fetch(
        "SELECT role, taken_at FROM screenshots WHERE monitor_id = $1 ORDER BY id", monitor_id
    )
    return [(r["role"], r["taken_at"]) for r in rows]


async def test_the_first_becomes_baseline_the_same_page_passes_a_change_is_judged(
    pool: asyncpg.Pool, db: asyncpg.Connection, monitor_factory: MonitorFactory
) -> None:
    monitor = await spec(monitor_factory)
    store = ScreenshotStore(pool)
    first = await store.keep(monitor, shot(), at=T0, failed=False, visual=COMPARE)
    assert first["became_baseline"] is True and first["diff_percent"] is None and first["changed"] is False
    same = await store.keep(monitor, shot(), at=T0 + timedelta(minutes=5), failed=False, visual=COMPARE)
    assert (same["diff_percent"], same["changed"], same["became_baseline"]) == (0.0, False, False)
    baseline_id = await db.fetchval("SELECT id FROM screenshots WHERE role = 'baseline'")
    assert same["baseline_id"] == baseline_id
    assert verdict_of(same) == (None, None)
    # one latest (replaced) and the baseline: the first latest is gone
    assert [r for r, _ in await roles(db, monitor.id)] == ["baseline", "latest"]
    # a block over 10 % of the page
    moved = await store.keep(
        monitor, shot((0, 0, 50, 40)), at=T0 + timedelta(minutes=10), failed=False, visual=COMPARE
    )
    assert moved["changed"] is True and moved["diff_percent"] == 10.0
    assert moved["verdict"] == "page changed 10 % (threshold 5 %)" and moved["severity"] == "down"
    assert verdict_of(moved) == ("page changed 10 % (threshold 5 %)", None)
    # a change judged down opens a streak: its screenshot is kept apart, and is the one answered
    assert [r for r, _ in await roles(db, monitor.id)] == ["baseline", "latest", "onset"]
    assert await db.fetchval("SELECT role FROM screenshots WHERE id = $1", moved["id"]) == "onset"
    # still changed: no second onset
    await store.keep(
        monitor, shot((0, 0, 50, 40)), at=T0 + timedelta(minutes=15), failed=False, visual=COMPARE
    )
    assert [r for r, _ in await roles(db, monitor.id)] == ["baseline", "onset", "latest"]


async def test_degraded_changes_open_no_outage_and_masks_hide_a_region(
    pool: asyncpg.Pool, db: asyncpg.Connection, monitor_factory: MonitorFactory
) -> None:
    monitor = await spec(monitor_factory)
    store = ScreenshotStore(pool)
    soft = VisualSettings(compare=True, threshold_percent=5, severity="degraded")
    await store.keep(monitor, shot(), at=T0, failed=False, visual=soft)
    kept = await store.keep(
        monitor, shot((0, 0, 50, 40)), at=T0 + timedelta(minutes=5), failed=False, visual=soft
    )
    assert verdict_of(kept) == (None, "page changed 10 % (threshold 5 %)")
    assert "onset" not in [r for r, _ in await roles(db, monitor.id)]
    await db.execute(
        "UPDATE screenshots SET masks = $1 WHERE role = 'baseline'",
        [{"x": 0, "y": 0, "width": 50, "height": 40}],
    )
    masked = await store.keep(
        monitor, shot((0, 0, 50, 40)), at=T0 + timedelta(minutes=10), failed=False, visual=soft
    )
    assert (masked["changed"], masked["diff_percent"]) == (False, 0.0)


async def test_a_failed_run_is_kept_for_its_incident_and_never_compared(
    pool: asyncpg.Pool, db: asyncpg.Connection, monitor_factory: MonitorFactory
) -> None:
    monitor = await spec(monitor_factory)
    store = ScreenshotStore(pool)
    # no baseline yet, and a failed run's screenshot does not become one
    failed = await store.keep(monitor, shot((0, 0, 200, 100)), at=T0, failed=True, visual=COMPARE)
    assert failed["failed"] is True and failed["diff_percent"] is None and failed["became_baseline"] is False
    assert [r for r, _ in await roles(db, monitor.id)] == ["latest", "onset"]
    again = await store.keep(monitor, shot(), at=T0 + timedelta(minutes=5), failed=True, visual=COMPARE)
    assert await db.fetchval("SELECT role FROM screenshots WHERE id = $1", again["id"]) == "latest"
    # back up: the first passing one is the baseline
    up = await store.keep(monitor, shot(), at=T0 + timedelta(minutes=10), failed=False, visual=COMPARE)
    assert up["became_baseline"] is True
    # down again later: a new onset for the new outage
    await store.keep(monitor, shot(), at=T0 + timedelta(minutes=15), failed=True, visual=COMPARE)
    onsets = [t for r, t in await roles(db, monitor.id) if r == "onset"]
    assert onsets == [T0, T0 + timedelta(minutes=15)]


async def test_a_monitor_that_does_not_compare_keeps_failures_only_by_what_it_is_given(
    pool: asyncpg.Pool, db: asyncpg.Connection, monitor_factory: MonitorFactory
) -> None:
    monitor = await spec(monitor_factory)
    store = ScreenshotStore(pool)
    assert store.keeps(monitor) is False  # no options: no visual settings, compare off
    kept = await store.keep(monitor, shot(), at=T0, failed=False)
    assert kept["became_baseline"] is False and kept["baseline_id"] is None
    assert [r for r, _ in await roles(db, monitor.id)] == ["latest"]


async def test_what_is_not_kept_says_why(
    pool: asyncpg.Pool, db: asyncpg.Connection, monitor_factory: MonitorFactory
) -> None:
    monitor = await spec(monitor_factory)
    store = ScreenshotStore(pool, max_bytes=64 * 1024)
    noise = np.random.default_rng(1).integers(0, 255, (200, 200, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(noise).save(buffer, format="PNG")
    big = await store.keep(monitor, buffer.getvalue(), at=T0, failed=False, visual=COMPARE)
    assert "not kept (over 65,536)" in big["note"] and "id" not in big
    bad = await store.keep(monitor, b"<html>", at=T0, failed=False, visual=COMPARE)
    assert bad["note"].startswith("screenshot not kept: not a PNG")
    assert await roles(db, monitor.id) == []


async def test_the_sweep_deletes_old_onsets_only(
    pool: asyncpg.Pool, db: asyncpg.Connection, monitor_factory: MonitorFactory
) -> None:
    monitor = await spec(monitor_factory)
    store = ScreenshotStore(pool)
    now = datetime.now(UTC)
    await store.keep(monitor, shot(), at=now - timedelta(days=40), failed=False, visual=COMPARE)  # baseline
    await store.keep(monitor, shot(), at=now - timedelta(days=40), failed=True, visual=COMPARE)  # old onset
    await store.keep(monitor, shot(), at=now - timedelta(days=35), failed=False, visual=COMPARE)
    await store.keep(monitor, shot(), at=now - timedelta(days=2), failed=True, visual=COMPARE)  # recent onset
    assert await sweep(pool, 30) == 1
    assert await sweep(pool, 30) == 0
    assert sorted(r for r, _ in await roles(db, monitor.id)) == ["baseline", "latest", "onset"]


async def test_with_a_public_url_the_answer_links_the_screenshots_page(
    pool: asyncpg.Pool, monitor_factory: MonitorFactory
) -> None:
    monitor = await spec(monitor_factory)
    kept = await ScreenshotStore(pool, public_url="https://monitor.example/").keep(
        monitor, shot(), at=T0, failed=True
    )
    assert kept["url"] == f"https://monitor.example/monitors/{monitor.id}/screenshots#outages"
    assert "url" not in await ScreenshotStore(pool).keep(monitor, shot(), at=T0, failed=True)
