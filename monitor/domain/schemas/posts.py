"""Incident posts: the bodies (validated here, field by field) and the answers (described for
the OpenAPI document).

A post is on one status page and says what it affects among what that page shows: monitors by
id, the page's groups by name (``domain/posts.py`` checks both against the page). Its timeline
is a list of updates, each a state and a Markdown text; the text is kept as written and shown
through ``monitor/markdown.py`` only.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from monitor.domain.schemas.common import Body, MonitorId, Out
from monitor.domain.schemas.status_pages import GroupName, Title
from monitor.markdown import MAX_TEXT

IMPACTS = ("none", "minor", "major", "critical")
STATES = ("investigating", "identified", "monitoring", "resolved")
Impact = Literal["none", "minor", "major", "critical"]
State = Literal["investigating", "identified", "monitoring", "resolved"]
MAX_AFFECTED = 200
MAX_GROUPS = 20

Text = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_TEXT,
        description="Markdown (CommonMark): emphasis, code, lists, quotes, headings and http(s) or "
        "mailto links; raw HTML and images are shown as text",
    ),
]


class UpdateCreate(Body):
    """One entry of a post's timeline; ``resolved`` closes the post (no update after it)."""

    state: State = Field(description="where the incident stands")
    text: Text


class PostCreate(Body):
    """A post on a status page, with its first update."""

    title: Title
    impact: Impact = Field("minor", description="how bad it is for the page's visitors")
    monitor_ids: list[MonitorId] = Field(
        default_factory=list, max_length=MAX_AFFECTED, description="affected monitors, among the page's"
    )
    groups: list[GroupName] = Field(
        default_factory=list, max_length=MAX_GROUPS, description="affected groups of the page, by name"
    )
    update: UpdateCreate


class PostPatch(Body):
    """Only the fields given change; ``monitor_ids`` and ``groups`` replace the lists."""

    title: Title | None = None
    impact: Impact | None = None
    monitor_ids: list[MonitorId] | None = Field(None, max_length=MAX_AFFECTED)
    groups: list[GroupName] | None = Field(None, max_length=MAX_GROUPS)

    @field_validator("title", "impact", "monitor_ids", "groups", mode="before")
    @classmethod
    def _not_null(cls, value: Any) -> Any:
        if value is None:
            raise ValueError("may not be null")
        return value


# -- answers -----------------------------------------------------------------------------------


class PostUpdate(Out):
    id: int
    state: State
    text: str = Field(description="the Markdown, as written")
    html: str = Field(description="the text as the public page shows it (sanitised HTML)")
    created_at: datetime


class Post(Out):
    id: int
    page_id: int
    title: str
    impact: Impact
    state: State = Field(description="the last update's")
    monitor_ids: list[int]
    groups: list[str]
    url: str = Field(description="its public permalink")
    created_at: datetime
    updated_at: datetime
    resolved_at: datetime | None
    updates: list[PostUpdate] = Field(description="newest first")


class PostList(Out):
    items: list[Post]
    next_cursor: str | None = Field(description="pass as ?cursor= for the next page; null on the last")
