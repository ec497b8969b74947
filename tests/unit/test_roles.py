"""The roles table: who may do what (monitor/domain/roles.py)."""

from __future__ import annotations

import pytest

from monitor.domain import roles
from monitor.domain.context import ROLES, Actor
from monitor.domain.errors import DomainError


@pytest.mark.parametrize(
    ("role", "resource", "operation", "ok"),
    [
        ("owner", "accounts", "write", True),
        ("admin", "accounts", "write", False),
        ("admin", "keys", "write", True),
        ("editor", "keys", "read", False),
        ("editor", "monitors", "write", True),
        ("editor", "channels", "write", False),
        ("viewer", "monitors", "read", True),
        ("viewer", "monitors", "write", False),
        ("notify", "monitors", "read", False),
    ],
)
def test_who_may_do_what(role: roles.Role, resource: str, operation: str, ok: bool) -> None:
    assert roles.allows(role, resource, operation) is ok


def test_a_refusal_names_the_role_needed() -> None:
    with pytest.raises(DomainError) as info:
        roles.authorize(Actor(account_id=1, role="viewer"), "status_pages", "write")
    assert (info.value.status, info.value.code) == (403, "forbidden")
    assert info.value.message == "write of status pages needs the role editor or higher"


def test_every_rule_names_a_known_role_and_the_owner_may_do_everything() -> None:
    assert set(roles.RULES.values()) <= set(ROLES)
    assert all(roles.allows("owner", r, o) for r, o in roles.RULES)


def test_an_operation_without_a_rule_is_an_error_not_an_open_door() -> None:
    with pytest.raises(KeyError):
        roles.authorize(Actor(account_id=1), "reports", "write")


def test_nobody_gives_a_role_above_their_own() -> None:
    admin = Actor(account_id=1, role="admin")
    roles.within(admin, "admin")
    roles.within(admin, "viewer")
    with pytest.raises(DomainError) as info:
        roles.within(admin, "owner")
    assert (info.value.status, info.value.field) == (403, "role")
    assert [roles.rank(r) for r in ROLES] == sorted(roles.rank(r) for r in ROLES)


@pytest.mark.parametrize(("resource", "lowest"), [("members", "admin"), ("audit", "admin")])
def test_people_and_the_log_are_an_admins(resource: str, lowest: str) -> None:
    assert roles.needed(resource, "read") == lowest
