"""The down alert of a browser monitor links to its screenshots page: the deciding check's
``details.screenshot.url`` (the store's answer) goes into the event's details, as written to
the outbox in the transaction that opens the incident; a check without one adds nothing."""

from __future__ import annotations

from datetime import UTC, datetime

import asyncpg
import pytest
from support import insert_monitor

from monitor.events import Event
from monitor.models import CheckResult, Failure, MonitorSpec
from monitor.scheduler import transitions
from monitor.scheduler.state import Alert, Change, Outcome

AT = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
URL = "https://monitor.example/monitors/{id}/screenshots#outages"


@pytest.mark.parametrize("with_screenshot", [True, False])
async def test_the_down_event_carries_the_screenshots_page(
    db: asyncpg.Connection, with_screenshot: bool
) -> None:
    spec = MonitorSpec.from_row(await insert_monitor(db, url="https://shop.example/", name="Shop"))
    details = {"screenshot": {"id": 5, "url": URL.format(id=spec.id)}} if with_screenshot else None
    result = CheckResult(spec.id, AT, ok=False, error="page changed 14.2 % (threshold 5 %)",
                         failure=Failure.ASSERTION, details=details)  # fmt: skip
    outcome = Outcome(changes=(Change("down", AT),), alerts=(Alert("down", AT),))
    async with db.transaction():
        await transitions.apply(db, transitions.Pending(spec, outcome, result))
    payload = await db.fetchval("SELECT payload FROM outbox WHERE monitor_id = $1 AND kind = 'down'", spec.id)
    event = Event.from_dict(payload)
    assert event.cause["error"] == "page changed 14.2 % (threshold 5 %)"
    if with_screenshot:
        assert event.details["screenshot"] == URL.format(id=spec.id)
    else:
        assert "screenshot" not in event.details
