"""Who asks (``Actor``) and what an operation may use (``Deps``), passed to every operation.

The faces build them: the JSON API from the Bearer key it authenticated (and, from issue 28,
the signed-in user), the CLI from the operator's command line, which acts as the owner of the
account it names. Operations take nothing from module state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

from monitor.passwords import Hasher

if TYPE_CHECKING:
    import asyncpg

    from monitor.config import Settings
    from monitor.secrets import SecretBox

# Lowest first; each role may do what the ones before it may (roles.py).
Role = Literal["notify", "viewer", "editor", "admin", "owner"]
ROLES: tuple[Role, ...] = ("notify", "viewer", "editor", "admin", "owner")


class Vetter(Protocol):
    """The vetted resolver's one question (``monitor/net/resolver.py``): raises
    ``BlockedTarget`` for a host the address policy denies right now, ``InvalidTarget`` for one
    that cannot be a host, ``ResolutionError`` when it does not resolve."""

    async def vet(self, host: str) -> object: ...


@dataclass(frozen=True)
class Actor:
    """The caller of an operation, within one account."""

    account_id: int
    role: Role = "owner"
    key_id: int | None = None  # the API key it came with
    user_id: int | None = None  # the signed-in person (issue 28)
    address: str | None = None  # where it came from, for the audit log


@dataclass(frozen=True)
class Deps:
    """What operations use: one of each per process, made by the face at start."""

    pool: asyncpg.Pool
    settings: Settings
    secret_box: SecretBox
    resolver: Vetter
    # Users' passwords, hashed on a bounded pool of threads (monitor/passwords.py).
    hasher: Hasher = field(default_factory=Hasher)
