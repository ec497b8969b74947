"""The alert rules' fields on monitors through the API: defaults, round trips, bounds, and
``depends_on`` (the caller's monitors only, never itself, never a cycle: 422 naming the field)."""

from __future__ import annotations

from typing import Any

import pytest
from support import ApiClient

pytestmark = pytest.mark.timeout(60)
TARGET = "http://127.0.0.1:9/"

RULES = {
    "remind_every_minutes": 30,
    "remind_max": 5,
    "degraded_above_ms": 800,
    "cert_warn_days": 21,
    "flap_threshold": 4,
    "flap_window_minutes": 15,
}


async def test_defaults_and_round_trip(api: ApiClient) -> None:
    plain = await api.create_monitor(name="plain", url=TARGET)
    assert {k: plain[k] for k in (*RULES, "depends_on")} == {
        "remind_every_minutes": None,
        "remind_max": None,
        "degraded_above_ms": None,
        "cert_warn_days": 14,
        "flap_threshold": None,
        "flap_window_minutes": 30,
        "depends_on": [],
    }
    ruled = await api.create_monitor(name="ruled", url=TARGET, depends_on=[plain["id"]], **RULES)
    assert {k: ruled[k] for k in RULES} == RULES and ruled["depends_on"] == [plain["id"]]
    # null turns an optional rule off; the others keep their values.
    patched = await api.patch(f"/api/v1/monitors/{ruled['id']}", json={"remind_every_minutes": None})
    assert patched.status == 200, patched
    assert patched.json["remind_every_minutes"] is None and patched.json["remind_max"] == 5


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("remind_every_minutes", 0),
        ("remind_max", 0),
        ("degraded_above_ms", -1),
        ("cert_warn_days", 366),
        ("flap_threshold", 1),
        ("flap_window_minutes", 0),
        ("cert_warn_days", None),
        ("depends_on", None),
        ("depends_on", ["1"]),
    ],
)
async def test_out_of_bounds_is_422_naming_the_field(api: ApiClient, field: str, value: Any) -> None:
    created = await api.post("/api/v1/monitors", json={"name": "m", "url": TARGET, field: value})
    assert created.status == 422, created
    assert field in created.json["error"]["message"], created


async def test_depends_on_is_checked(api: ApiClient) -> None:
    a = await api.create_monitor(name="router", url=TARGET)
    b = await api.create_monitor(name="switch", url=TARGET, depends_on=[a["id"]])
    c = await api.create_monitor(name="site", url=TARGET, depends_on=[b["id"]])

    async def refused(monitor_id: int, depends_on: list[int], words: str) -> None:
        answer = await api.patch(f"/api/v1/monitors/{monitor_id}", json={"depends_on": depends_on})
        assert answer.status == 422, answer
        assert answer.json["error"]["field"] == "depends_on"
        assert words in answer.json["error"]["message"], answer

    await refused(a["id"], [c["id"]], "cycle")  # router -> site -> switch -> router
    await refused(a["id"], [a["id"]], "itself")
    await refused(a["id"], [2**62], f"no monitor {2**62}")
    missing = await api.post("/api/v1/monitors", json={"name": "x", "url": TARGET, "depends_on": [2**62]})
    assert missing.status == 422 and missing.json["error"]["field"] == "depends_on", missing
    # Nothing was changed by the refusals.
    assert (await api.monitor(a["id"]))["depends_on"] == []
    # Deleting a monitor takes it out of its dependants' lists.
    assert (await api.delete(f"/api/v1/monitors/{b['id']}")).status == 204
    assert (await api.monitor(c["id"]))["depends_on"] == []
