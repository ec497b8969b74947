"""A status page as its owner sees it, its groups as stored, and the one domain it may not
have: pure."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from monitor.domain.errors import DomainError
from monitor.domain.schemas.status_pages import Group
from monitor.domain.status_pages import check_domain, groups_of, render

WHEN = datetime(2030, 1, 1, tzinfo=UTC)


def test_render() -> None:
    row = {"id": 4, "slug": "ops", "title": "Ops", "description": None, "logo_url": None, "favicon_url": None,
           "domain": "status.example.com", "show_urls": False, "post_history_days": 90, "groups": [],
           "created_at": WHEN,
           "updated_at": WHEN}  # fmt: skip
    shown = render(row, "https://api.example.com/monitor")
    assert shown["url"] == "https://api.example.com/monitor/status/ops"
    assert shown["created_at"] == "2030-01-01T00:00:00Z"
    assert set(shown) == {*row, "url"}


def test_groups_name_each_monitor_and_tag_once_in_the_order_given() -> None:
    given = [Group(name="Web", monitor_ids=[3, 1, 3], tags=["b", "a", "b"]), Group(name="Db", tags=["db"])]
    assert groups_of(given) == [
        {"name": "Web", "monitor_ids": [3, 1], "tags": ["b", "a"]},
        {"name": "Db", "monitor_ids": [], "tags": ["db"]},
    ]


@pytest.mark.parametrize(("domain", "public_url", "refused"), [
    ("status.example.com", "https://status.example.com/", True),
    ("status.example.com", "https://status.example.com./api", True),
    ("status.example.com", "https://api.example.com/", False),
    ("status.example.com", None, False),
    (None, "https://status.example.com/", False),
])  # fmt: skip
def test_a_page_may_not_take_the_apis_own_address(
    domain: str | None, public_url: str | None, refused: bool
) -> None:
    if not refused:
        check_domain(domain, public_url)
        return
    with pytest.raises(DomainError) as caught:
        check_domain(domain, public_url)
    assert (caught.value.status, caught.value.field) == (422, "domain")
