"""Browser monitors (journeys) through a live ``monitor api``: created with their steps and read
back, a password typed in a step stored sealed apart and shown masked, the mask sent back in a
PATCH keeping it (steps moved too), every goto URL vetted as the start URL, and a bad step a
422 naming its field."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest
from support import ApiClient
from support.procs import TEST_SECRET_KEY

from monitor.checks import REGISTRY
from monitor.secrets import MASK, SecretBox, is_sealed, open_monitor_secrets

pytestmark = pytest.mark.timeout(60)

URL = "http://127.0.0.1:9/"
PASSWORD = "pw-journey-5e1f0a"
STEPS: list[dict[str, Any]] = [
    {"action": "click", "selector": "#login"},
    {"action": "fill", "selector": "#user", "value": "ann"},
    {"action": "fill", "selector": "input[type=password]", "value": PASSWORD},
    {"action": "click", "selector": "text=Sign in", "timeout_seconds": 5},
    {"action": "expect_text", "text": "Welcome, ann"},
    {"action": "goto", "url": "http://127.0.0.1:9/orders"},
    {"action": "expect_url", "contains": "/orders"},
]


def body(**more: Any) -> dict[str, Any]:
    return {"type": "browser", "name": "Sign-in journey", "url": URL, "steps": STEPS, **more}


async def secrets_of(db: asyncpg.Connection, monitor_id: int) -> dict[str, Any] | None:
    sealed = await db.fetchval("SELECT secrets FROM monitor_secrets WHERE monitor_id = $1", monitor_id)
    if sealed is not None:
        assert all(is_sealed(value) for _, value in sealed["fills"]), sealed
    return open_monitor_secrets(SecretBox.from_setting(TEST_SECRET_KEY), sealed)


async def test_a_journey_round_trips_with_its_password_sealed_and_masked(
    api: ApiClient, db: asyncpg.Connection
) -> None:
    created = await api.post("/api/v1/monitors", json=body())
    assert created.status == 201, created
    assert PASSWORD not in created.text
    monitor = created.json
    assert (monitor["type"], monitor["url"], monitor["interval_seconds"], monitor["timeout_seconds"]) == (
        "browser", URL, 300, 60,
    )  # fmt: skip
    shown = [{k: v for k, v in s.items() if v is not None} for s in monitor["steps"]]
    assert shown[2] == {"action": "fill", "selector": "input[type=password]", "value": MASK, "secret": True}
    assert shown[1]["value"] == "ann" and shown[3]["timeout_seconds"] == 5
    assert monitor["viewport"] == {"width": 1280, "height": 800}
    read = await api.get(f"/api/v1/monitors/{monitor['id']}")
    assert PASSWORD not in read.text and PASSWORD not in (await api.get("/api/v1/monitors")).text
    settings = await db.fetchval("SELECT settings::text FROM monitors WHERE id = $1", monitor["id"])
    assert PASSWORD not in settings
    assert await secrets_of(db, monitor["id"]) == {"fills": [[2, PASSWORD]]}

    # Sent back as read, with the password step moved first: the mask keeps the password.
    steps = [monitor["steps"][2], *monitor["steps"][:2], *monitor["steps"][3:]]
    changed = await api.patch(f"/api/v1/monitors/{monitor['id']}", json={"steps": steps})
    assert changed.status == 200, changed
    assert PASSWORD not in changed.text
    assert await secrets_of(db, monitor["id"]) == {"fills": [[0, PASSWORD]]}
    row = await db.fetchrow("SELECT settings, url FROM monitors WHERE id = $1", monitor["id"])
    options = REGISTRY.get("browser").options(row["settings"], await secrets_of(db, monitor["id"]))
    assert options.settings.steps[0].value == PASSWORD
    assert options.settings.url == row["url"] == URL


# (case, the body's fields, status, field)
BAD = [
    ("a private start page", {"url": "http://10.0.0.5/"}, 400, "url"),
    ("a private goto", {"steps": [{"action": "click", "selector": "#a"},
                                  {"action": "goto", "url": "http://169.254.169.254/latest"}]},
     400, "steps.1.url"),
    ("an empty selector", {"steps": [*STEPS[:2], {"action": "click", "selector": ""}]},
     422, "steps.2.selector"),
    ("a script", {"steps": [{"action": "evaluate", "selector": "x"}]}, 422, "steps.0"),
    ("a mask with nothing stored", {"steps": [{"action": "fill", "selector": "#password", "value": MASK}]},
     422, "steps.0.value"),
]  # fmt: skip


@pytest.mark.parametrize(("fields", "status", "field"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
async def test_a_bad_journey_is_refused_naming_its_field(
    api: ApiClient, fields: dict[str, Any], status: int, field: str
) -> None:
    refused = await api.post("/api/v1/monitors", json=body(**fields))
    assert (refused.status, refused.json["error"]["field"]) == (status, field), refused
