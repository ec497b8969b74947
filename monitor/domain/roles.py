"""Who may do what: one table of (resource, operation) -> the lowest role that may.

Roles are ranked (``context.ROLES``): ``notify`` (receives alerts on their own channels, sees
nothing), ``viewer`` (reads everything, changes nothing), ``editor`` (monitors, maintenance,
status pages), ``admin`` (members, keys, channels), ``owner`` (the account itself). Every
operation of the domain layer asks ``authorize`` first, so a route added later without a row
here fails loudly (a KeyError in its first test) instead of being open to every role.

Until issue 28 brings people, every caller is an API key acting as its account's owner, so the
table changes nothing yet; it is the one place the roles will be read from.
"""

from __future__ import annotations

from monitor.domain.context import ROLES, Actor, Role

__all__ = ["RULES", "Role", "allows", "authorize", "needed"]
from monitor.domain.errors import DomainError

RULES: dict[tuple[str, str], Role] = {
    ("monitors", "read"): "viewer",
    ("monitors", "write"): "editor",
    ("history", "read"): "viewer",
    ("summary", "read"): "viewer",
    ("maintenance", "read"): "viewer",
    ("maintenance", "write"): "editor",
    ("status_pages", "read"): "viewer",
    ("status_pages", "write"): "editor",
    ("channels", "read"): "viewer",
    ("channels", "write"): "admin",
    ("keys", "read"): "admin",
    ("keys", "write"): "admin",
    ("accounts", "read"): "viewer",
    ("accounts", "write"): "owner",
}

_RANK = {role: rank for rank, role in enumerate(ROLES)}


def needed(resource: str, operation: str) -> Role:
    return RULES[(resource, operation)]


def allows(role: Role, resource: str, operation: str) -> bool:
    return _RANK[role] >= _RANK[needed(resource, operation)]


def authorize(actor: Actor, resource: str, operation: str) -> None:
    """Raise a 403 naming the role needed unless ``actor`` may do ``operation`` on ``resource``."""
    role = needed(resource, operation)
    if _RANK[actor.role] < _RANK[role]:
        raise DomainError(
            403, "forbidden", f"{operation} of {resource.replace('_', ' ')} needs the role {role} or higher"
        )
