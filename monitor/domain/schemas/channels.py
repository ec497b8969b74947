"""Alert channels: the bodies (one per kind, a union on ``kind``, each with its kind's settings
model from ``monitor.channels``) and the answers."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, Union
from uuid import UUID

from pydantic import BaseModel, Field, RootModel, create_model, field_validator

from monitor.channels import REGISTRY as CHANNEL_KINDS
from monitor.channels.base import ChannelKind
from monitor.domain.schemas.common import Body, Name, Out


def _channel_create(kind: ChannelKind) -> type[BaseModel]:
    """The body that creates a channel of one kind: its ``kind`` tag, a name, its settings."""
    model: type[BaseModel] = create_model(
        f"{kind.config.__name__.removesuffix('Settings')}ChannelCreate",
        __base__=Body,
        __doc__=f"A channel of kind {kind.name!r} ({kind.title}).",
        kind=(Literal[kind.name], ...),  # type: ignore[arg-type]
        name=(Name, ...),
        config=(kind.config, ...),
    )
    return model


_CHANNEL_BODIES = tuple(_channel_create(kind) for kind in CHANNEL_KINDS.values())


class ChannelCreate(RootModel[Any]):
    """An alert channel: ``kind`` selects the shape of ``config``."""

    root: Annotated[Union[_CHANNEL_BODIES], Field(discriminator="kind")]  # type: ignore[valid-type]  # noqa: UP007


class ChannelPatch(Body):
    """``config`` replaces the channel's settings, checked against its kind; a secret sent back
    as ``********`` or left out keeps the stored one."""

    name: Name | None = None
    config: dict[str, Any] | None = None

    @field_validator("name", "config", mode="before")
    @classmethod
    def _not_null(cls, value: Any) -> Any:
        if value is None:
            raise ValueError("may not be null")
        return value


# -- answers -----------------------------------------------------------------------------------


class Channel(Out):
    id: int
    kind: str = Field(description="the channel's kind: one of ChannelCreate's")
    name: str
    config: dict[str, Any] = Field(
        description="the kind's settings (see ChannelCreate); secrets read back as ********, "
        "except a generated one in the answer that created the channel"
    )
    monitors: int = Field(description="how many monitors the channel is attached to")
    created_at: datetime
    updated_at: datetime


class ChannelList(Out):
    items: list[Channel]
    next_cursor: str | None


class Accepted(Out):
    event_id: UUID
    status: Literal["queued"]
