"""Channels through the API: a kind the registry does not know, a secret kept or made anew.

A webhook's signing secret is made by the API and shown once, when it is made; a PATCH that
leaves it out or sends it back masked keeps it (the receiver still verifies), and one that
sends ``null`` gets a new one, shown once in that answer.
"""

from __future__ import annotations

from collections.abc import Callable

import asyncpg
import pytest
from support import ApiClient, ProcessFactory
from support.procs import TEST_SECRET_KEY

from monitor.secrets import MASK, SecretBox

pytestmark = pytest.mark.timeout(60)
HOOK = "https://hooks.example.test/in/patch-7c1e"


async def test_kinds_and_the_webhook_secret_through_patches(
    db: asyncpg.Connection, procs: ProcessFactory, api_client: Callable[[str], ApiClient]
) -> None:
    api = api_client((await procs.start("api")).base_url)
    unknown = await api.post("/api/v1/channels", json={"kind": "carrier-pigeon", "name": "x", "config": {}})
    assert unknown.status == 422 and unknown.json["error"]["field"] == "kind", unknown
    assert "telegram" in unknown.json["error"]["message"] and "webhook" in unknown.json["error"]["message"]
    bad = await api.post(
        "/api/v1/channels", json={"kind": "slack", "name": "x", "config": {"url": "ftp://x"}}
    )
    assert bad.status == 422 and bad.json["error"]["field"] == "config.url", bad

    made = await api.post(
        "/api/v1/channels", json={"kind": "webhook", "name": "hook", "config": {"url": HOOK}}
    )
    assert made.status == 201, made
    first = made.json["config"]["secret"]
    assert first.startswith("whsec_") and made.json["config"]["url"] == MASK
    path = f"/api/v1/channels/{made.json['id']}"

    async def stored_secret() -> str:
        config = await db.fetchval("SELECT config FROM channels WHERE id = $1", made.json["id"])
        return SecretBox.from_setting(TEST_SECRET_KEY).open(config["secret"])

    for config in ({"url": HOOK}, {"url": MASK, "secret": MASK}):
        kept = await api.patch(path, json={"config": config})
        assert kept.status == 200 and kept.json["config"]["secret"] == MASK, kept
        assert await stored_secret() == first
    renewed = await api.patch(path, json={"config": {"url": MASK, "secret": None}})
    assert renewed.status == 200, renewed
    second = renewed.json["config"]["secret"]
    assert second.startswith("whsec_") and second != first and await stored_secret() == second
    assert (await api.get(path)).json["config"]["secret"] == MASK
