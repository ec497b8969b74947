"""API keys: the body that makes one, and the answers (the key itself only in ``NewKey``)."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from monitor.domain.schemas.common import Body, Out


class KeyCreate(Body):
    name: str = Field("", max_length=100)


# -- answers -----------------------------------------------------------------------------------


class Key(Out):
    id: int
    name: str
    prefix: str = Field(description="the key's first characters, to tell keys apart")
    created_at: datetime
    revoked_at: datetime | None


class NewKey(Key):
    key: str = Field(description="the secret, shown only in this answer")


class KeyList(Out):
    items: list[Key]
    next_cursor: str | None
