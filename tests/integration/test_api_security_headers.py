"""The ``security_headers`` assertion through a live ``monitor api``: accepted, stored and read
back with its default grade, and refused with a 422 naming the field when the grade is not
one of A+, A, B, C, D, F or the assertion is given twice."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest
from support import ApiClient

pytestmark = pytest.mark.timeout(60)

URL = "https://127.0.0.1:9/"


async def test_the_assertion_round_trips(api: ApiClient, db: asyncpg.Connection) -> None:
    given = [{"type": "security_headers", "min_grade": "A+"}, {"type": "response_time", "below_ms": 800}]
    monitor = await api.create_monitor(url=URL, assertions=given)
    assert monitor["assertions"] == [given[0], {"type": "response_time", "below_ms": 800.0}]
    settings = await db.fetchval("SELECT settings FROM monitors WHERE id = $1", monitor["id"])
    assert settings["assertions"][0] == {"type": "security_headers", "min_grade": "A+"}

    # Without min_grade: B. PATCH changes it.
    other = await api.create_monitor(url=URL, assertions=[{"type": "security_headers"}])
    assert other["assertions"] == [{"type": "security_headers", "min_grade": "B"}]
    grade_d = [{"type": "security_headers", "min_grade": "D"}]
    patched = await api.patch(f"/api/v1/monitors/{other['id']}", json={"assertions": grade_d})
    assert patched.status == 200, patched
    assert (await api.monitor(other["id"]))["assertions"] == grade_d


# (case, assertions, the field the 422 names)
BAD = [
    ("unknown grade", [{"type": "security_headers", "min_grade": "E"}], "assertions.0.min_grade"),
    ("grade in lower case", [{"type": "security_headers", "min_grade": "b"}], "assertions.0.min_grade"),
    ("grade not a string", [{"type": "security_headers", "min_grade": 2}], "assertions.0.min_grade"),
    ("second assertion's grade", [{"type": "keyword", "keyword": "Welcome"},
                                  {"type": "security_headers", "min_grade": "A-"}], "assertions.1.min_grade"),
    ("unknown field", [{"type": "security_headers", "grade": "A"}], "assertions.0.grade"),
    ("given twice", [{"type": "security_headers", "min_grade": "A"},
                     {"type": "security_headers", "min_grade": "C"}], "assertions"),
]  # fmt: skip


@pytest.mark.parametrize(("assertions", "field"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
async def test_bad_assertions_are_refused_naming_the_field(
    api: ApiClient, assertions: list[dict[str, Any]], field: str
) -> None:
    response = await api.post("/api/v1/monitors", json={"name": "bad", "url": URL, "assertions": assertions})
    assert response.status == 422, response
    assert response.json["error"]["field"] == field, response
    assert response.json["error"]["message"].startswith(f"{field}: "), response
    assert (await api.get("/api/v1/monitors")).json["items"] == []
