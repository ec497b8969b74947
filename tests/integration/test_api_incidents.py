"""``POST /api/v1/monitors/{id}/incidents/{incident_id}/acknowledge`` and the incident's read
through a live api: the body is optional, the answer and the listings show who acknowledged it,
and every refusal is a JSON error naming its code or field."""

from __future__ import annotations

from typing import Any

import asyncpg
from support import ApiClient


async def test_an_incident_is_acknowledged_and_shown_acknowledged(
    api: ApiClient, db: asyncpg.Connection, monitor_factory: Any
) -> None:
    monitor = await monitor_factory(name="Shop", url="https://shop.example/")
    mid = monitor["id"]
    incident = await db.fetchval(
        "INSERT INTO incidents (monitor_id, started_at) VALUES ($1, now() - interval '5 min') RETURNING id",
        mid,
    )
    path = f"/api/v1/monitors/{mid}/incidents/{incident}"
    read = await api.get(path)
    assert read.status == 200 and read.json["acknowledged_at"] is None, read

    # A body that is not declared JSON is refused; one that breaks the schema names its field.
    plain = await api.post(
        f"{path}/acknowledge", data=b'{"note": "x"}', headers={"Content-Type": "text/plain"}
    )
    assert plain.status == 415, plain
    long = await api.post(f"{path}/acknowledge", json={"note": "x" * 281})
    assert (long.status, long.json["error"]["field"]) == (422, "note"), long

    done = await api.post(f"{path}/acknowledge")  # no body: no note
    assert done.status == 200, done
    assert done.json["acknowledged_by"].startswith("API key #") and done.json["acknowledged_note"] is None
    listed = await api.get(f"/api/v1/monitors/{mid}/incidents")
    (item,) = listed.json["items"]
    assert (item["id"], item["acknowledged_at"]) == (incident, done.json["acknowledged_at"])

    again = await api.post(f"{path}/acknowledge", json={"note": "me too"})
    assert (again.status, again.json["error"]["code"]) == (409, "already_acknowledged"), again
    missing = await api.post(f"/api/v1/monitors/{mid}/incidents/{incident + 1}/acknowledge", json={})
    assert (missing.status, missing.json["error"]["code"]) == (404, "not_found"), missing
    nonsense = await api.get(f"/api/v1/monitors/{mid}/incidents/²")
    assert nonsense.status == 404, nonsense
