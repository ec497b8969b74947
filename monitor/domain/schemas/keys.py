"""API keys: the body that makes one, and the answers (the key itself only in ``NewKey``)."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from monitor.domain.context import Role
from monitor.domain.schemas.common import Body, Out


class KeyCreate(Body):
    name: str = Field("", max_length=100)
    role: Role | None = Field(None, description="no higher than the caller's own, which it is when left out")


# -- answers -----------------------------------------------------------------------------------


class KeyMaker(Out):
    id: int
    email: str


class Key(Out):
    id: int
    name: str
    prefix: str = Field(description="the key's first characters, to tell keys apart")
    role: Role
    created_by: KeyMaker | None = Field(
        description="the member who made it; null for keys made before people"
    )
    created_at: datetime
    last_used_at: datetime | None = Field(description="to the minute: updated at most once a minute")
    revoked_at: datetime | None


class NewKey(Key):
    key: str = Field(description="the secret, shown only in this answer")


class KeyList(Out):
    items: list[Key]
    next_cursor: str | None
