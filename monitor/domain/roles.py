"""Who may do what: one table of (resource, operation) -> the lowest role that may.

Roles are ranked (``context.ROLES``): ``notify`` (receives alerts on their own channels, sees
nothing), ``viewer`` (reads everything, changes nothing), ``editor`` (monitors, maintenance,
status pages and their posts, acknowledging incidents), ``admin`` (members, keys, channels), ``owner`` (the
account itself). Every operation of the domain layer asks ``authorize`` first, so a route added
later without a row here fails loudly (a KeyError in its first test) instead of being open to
every role.

A caller's role is its membership's (a signed-in person) or its key's: a key carries a role no
higher than its maker's (``keys.create``); a key made before roles existed is its account's
owner (sql/021). A role given to a member or a key is never higher than the giver's
(``within``), so an admin cannot make an owner.
"""

from __future__ import annotations

from monitor.domain.context import ROLES, Actor, Role

__all__ = ["RULES", "Role", "allows", "authorize", "needed", "rank", "within"]
from monitor.domain.errors import DomainError

RULES: dict[tuple[str, str], Role] = {
    ("monitors", "read"): "viewer",
    ("monitors", "write"): "editor",
    ("history", "read"): "viewer",
    ("incidents", "acknowledge"): "editor",
    ("summary", "read"): "viewer",
    ("reports", "read"): "viewer",
    ("maintenance", "read"): "viewer",
    ("maintenance", "write"): "editor",
    ("status_pages", "read"): "viewer",
    ("status_pages", "write"): "editor",
    ("posts", "read"): "viewer",
    ("posts", "write"): "editor",
    ("channels", "read"): "viewer",
    ("channels", "write"): "admin",
    ("keys", "read"): "admin",
    ("keys", "write"): "admin",
    ("accounts", "read"): "viewer",
    ("accounts", "write"): "owner",
    ("members", "read"): "admin",
    ("members", "write"): "admin",
    ("audit", "read"): "admin",
    # monitor apply / POST /api/v1/apply; each object it writes is judged by its own rule too.
    ("config", "write"): "editor",
    ("config", "read"): "viewer",
}

_RANK = {role: rank for rank, role in enumerate(ROLES)}


def rank(role: Role) -> int:
    return _RANK[role]


def within(actor: Actor, role: Role, field: str = "role") -> None:
    """A 403 naming ``field`` if ``role`` is higher than the caller's own: nobody gives more than
    they hold."""
    if _RANK[role] > _RANK[actor.role]:
        raise DomainError(
            403, "forbidden", f"{field}: cannot be higher than your own role ({actor.role})", field
        )


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
