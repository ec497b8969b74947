"""Request validation: every field names itself in the error."""

import pytest
from pydantic import ValidationError

from monitor.api.errors import from_validation
from monitor.api.schemas import MonitorCreate, MonitorPatch, parse_status_ranges, render_status_ranges

CTX = {"min_interval_seconds": 30}
GOOD = {"name": "site", "url": "https://example.com/health", "interval_seconds": 60}


def field_of(body: dict, model: type = MonitorCreate) -> str | None:
    with pytest.raises(ValidationError) as info:
        model.model_validate(body, context=CTX)
    return from_validation(info.value).field


def test_defaults() -> None:
    spec = MonitorCreate.model_validate(GOOD, context=CTX)
    assert spec.expected_status == ["200-399"]
    assert spec.confirm_after == 2 and spec.type == "http" and not spec.paused


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"url": "ftp://example.com/"}, "url"),
        ({"url": "not a url"}, "url"),
        ({"url": "http://user:pw@example.com/"}, "url"),
        ({"interval_seconds": 10}, "interval_seconds"),
        ({"interval_seconds": "60"}, "interval_seconds"),
        ({"interval_seconds": 10**9}, "interval_seconds"),
        ({"timeout_seconds": -1}, "timeout_seconds"),
        ({"timeout_seconds": 0}, "timeout_seconds"),
        ({"type": "tcp"}, "type"),
        ({"confirm_after": 0}, "confirm_after"),
        ({"confirm_after": True}, "confirm_after"),
        ({"expected_status": []}, "expected_status"),
        ({"expected_status": ["600"]}, "expected_status"),
        ({"expected_status": ["399-200"]}, "expected_status"),
        ({"telegram_chat_id": "not a chat"}, "telegram_chat_id"),
        ({"name": ""}, "name"),
        ({"bogus": 1}, "bogus"),
    ],
)
def test_bad_fields_are_named(change: dict, field: str) -> None:
    assert field_of({**GOOD, **change}) == field


def test_missing_fields_are_named() -> None:
    assert field_of({"url": "https://example.com/"}) == "name"


def test_patch_refuses_null_for_required_fields() -> None:
    assert field_of({"interval_seconds": None}, MonitorPatch) == "interval_seconds"
    assert MonitorPatch.model_validate({"telegram_chat_id": None}, context=CTX).telegram_chat_id is None


@pytest.mark.parametrize(
    ("given", "ranges"),
    [
        ([200], [[200, 200]]),
        (["2xx", "301-302"], [[200, 299], [301, 302]]),
        ([404, "5xx"], [[404, 404], [500, 599]]),
    ],
)
def test_status_ranges_round_trip(given: list, ranges: list) -> None:
    assert parse_status_ranges(given) == ranges
    assert parse_status_ranges(render_status_ranges(ranges)) == ranges
