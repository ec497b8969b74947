"""Status pages: the bodies (validated here, field by field) and the answers (described for the
OpenAPI document).

A page is public: what it shows is the owner's choice, made here. A logo and a favicon are
https URLs (a page served over https must not pull an image over http, and their origins are
the only ones the page's Content-Security-Policy lets images come from); a custom domain is a
host name that the owner points at the api.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field, StrictBool, field_validator

from monitor.domain.schemas.common import Body, MonitorId, Out, TagName

MAX_GROUPS = 20
MAX_GROUP_MONITORS = 200
MAX_TAGS = 20
SLUG = re.compile(r"^[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$")
# A DNS name of at least two labels, lower case (RFC 1123 labels), as a Host header carries it.
DOMAIN = re.compile(r"^(?=.{4,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]([a-z0-9-]{0,61}[a-z0-9])?$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]")
LOGO_HOST = re.compile(r"^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$")


def _one_line(value: str) -> str:
    if _CONTROL.search(value):
        raise ValueError("must be one line without control characters")
    return value


def _image(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme != "https" or not parts.hostname:
        raise ValueError("must be an https:// URL")
    if parts.username is not None or parts.password is not None:
        raise ValueError("must not hold credentials")
    if any(c in value for c in " \"'<>\\;,") or _CONTROL.search(value):
        raise ValueError("must be a URL without spaces, quotes, commas, semicolons or angle brackets")
    # Its origin goes into the page's Content-Security-Policy: a plain host name (IDN in its
    # ASCII form) and a port.
    try:
        host = parts.hostname.encode("idna").decode("ascii")
        parts.port  # noqa: B018 - raises for a port that is not one
    except (UnicodeError, ValueError):
        raise ValueError("must name a host and port a browser can reach") from None
    if not LOGO_HOST.match(host):
        raise ValueError("must name a host of letters, digits, dots and hyphens")
    return value


def _domain(value: str) -> str:
    value = value.lower().rstrip(".")
    if not DOMAIN.match(value):
        raise ValueError("must be a host name such as status.example.com (no scheme, port or path)")
    return value


Slug = Annotated[
    str,
    Field(
        pattern=SLUG.pattern,
        description="the page's address, /status/<slug>: 1-64 of a-z, 0-9 and '-', not at either end",
    ),
]
Title = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_one_line)]
Description = Annotated[str, Field(max_length=2000, description="plain text; line breaks are kept")]
LogoUrl = Annotated[str, Field(max_length=2048, description="an https:// image URL"), AfterValidator(_image)]
FaviconUrl = Annotated[
    str,
    Field(max_length=2048, description="an https:// icon URL (SVG, PNG or ICO); without one, the default"),
    AfterValidator(_image),
]
Domain = Annotated[
    str,
    Field(
        max_length=253,
        description="a host name of yours that points at the api; / on it serves this page",
    ),
    AfterValidator(_domain),
]
PostHistoryDays = Annotated[
    Literal[30, 90, 365],
    Field(description="how many days back the page lists resolved incident posts (open ones always)"),
]
GroupName = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_one_line)]


class Group(Body):
    """Monitors shown together under a heading: those named (in this order), then those with
    any of the tags (by name)."""

    name: GroupName
    monitor_ids: list[MonitorId] = Field(default_factory=list, max_length=MAX_GROUP_MONITORS)
    tags: list[TagName] = Field(default_factory=list, max_length=MAX_TAGS, description="any of them")


class StatusPageCreate(Body):
    """A public status page: anyone with its address sees the state, uptime and incidents of
    the monitors in its groups; their targets only when ``show_urls`` is true."""

    slug: Slug
    title: Title
    description: Description | None = None
    logo_url: LogoUrl | None = None
    favicon_url: FaviconUrl | None = None
    domain: Domain | None = None
    show_urls: StrictBool = Field(False, description="show each monitor's target (URL or host) to visitors")
    post_history_days: PostHistoryDays = 90
    groups: list[Group] = Field(min_length=1, max_length=MAX_GROUPS)


class StatusPagePatch(Body):
    """Only the fields given change; ``groups`` replaces every group; ``null`` removes
    ``description``, ``logo_url``, ``favicon_url`` and ``domain``."""

    slug: Slug | None = None
    title: Title | None = None
    description: Description | None = None
    logo_url: LogoUrl | None = None
    favicon_url: FaviconUrl | None = None
    domain: Domain | None = None
    show_urls: StrictBool | None = None
    post_history_days: PostHistoryDays | None = None
    groups: list[Group] | None = Field(None, min_length=1, max_length=MAX_GROUPS)

    @field_validator("slug", "title", "show_urls", "post_history_days", "groups", mode="before")
    @classmethod
    def _not_null(cls, value: Any) -> Any:
        if value is None:
            raise ValueError("may not be null")
        return value


# -- answers -----------------------------------------------------------------------------------


class GroupShown(Out):
    name: str
    monitor_ids: list[int]
    tags: list[str]


class StatusPage(Out):
    id: int
    slug: str
    title: str
    description: str | None
    logo_url: str | None
    favicon_url: str | None
    domain: str | None
    show_urls: bool
    post_history_days: int
    groups: list[GroupShown]
    url: str = Field(description="where visitors read it; .json and /feed.atom beside it")
    created_at: datetime
    updated_at: datetime


class StatusPageList(Out):
    items: list[StatusPage]
    next_cursor: str | None = Field(description="pass as ?cursor= for the next page; null on the last")


class BadgeToken(Out):
    badge_url: str = Field(description="the monitor's new badge URL; the old one answers 404")
