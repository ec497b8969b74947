"""What the monitors' handlers do by the monitor's type: the fields a type shows, the hosts it
dials vetted (the first of the two SSRF layers), its settings as a PATCH changes them.

http's request options have their own module (``schemas_http.py``); every other type is
described by its ``Check.Settings`` (``monitor/checks/base.py``), so nothing here names a type.
"""

from __future__ import annotations

from typing import Any

import asyncpg
from aiohttp import web
from pydantic import ValidationError

from monitor.api import schemas_http as http
from monitor.api.context import RESOLVER, SETTINGS
from monitor.api.errors import from_validation
from monitor.api.schemas import render_status_ranges
from monitor.checks import REGISTRY as CHECKS
from monitor.checks import Check
from monitor.domain.status_pages import BADGE_PATH as BADGE_PATH  # the monitors' handlers read it here
from monitor.domain.targets import vet_host
from monitor.net.policy import parse_target_url

# Where a heartbeat monitor's pings go (monitor/api/pings.py): this and its token.
PING_PATH = "/ping/"


def public_base(request: web.Request) -> str:
    """The origin (and path prefix) users reach the api at: MONITOR_PUBLIC_URL, else the
    address of this request."""
    configured = request.app[SETTINGS].public_url
    return configured.rstrip("/") if configured else str(request.url.origin())


def type_fields(row: asyncpg.Record, base: str) -> dict[str, Any]:
    if row["type"] == "http":
        return {
            "url": row["url"],
            "expected_status": render_status_ranges(row["expected_status"]),
            "follow_redirects": row["follow_redirects"],
            **http.render(row["settings"], row["secret_view"]),
        }
    check = CHECKS.get(row["type"])
    assert check.Settings is not None
    fields: dict[str, Any] = {"url": row["url"] or None}
    # Stored settings were valid when stored: read them back with every choice allowed (a
    # tls_verify false stored while the operator allowed it still reads, and the check says
    # what it does with it), and, should a type's rules have tightened since, as stored.
    try:
        fields.update(check.stored(row["settings"]).model_dump(mode="json"))
    except ValueError:
        fields.update(row["settings"] or {})
    if row["ping_token"] is not None:
        fields["ping_url"] = f"{base}{PING_PATH}{row['ping_token']}"
    return fields


async def vet_target(request: web.Request, url: str) -> None:
    """First of the two SSRF layers: refuse a target that is denied right now."""
    await vet_host(request.app[RESOLVER], parse_target_url(url).raw_host or "", "url")


async def vet_hosts(request: web.Request, check: Check, settings: Any) -> None:
    """The hosts a monitor of a type with ``Settings`` dials, vetted as a URL's host is."""
    for host in check.hosts(settings):
        field = next(
            (n for n in type(settings).model_fields if _holds(getattr(settings, n, None), host)), "host"
        )
        await vet_host(request.app[RESOLVER], host, field)


def _holds(value: Any, host: str) -> bool:
    if isinstance(value, str):  # a host, "host:port" or "[v6]:port"
        return value == host or value.startswith((f"{host}:", f"[{host}]"))
    return isinstance(value, list | tuple) and any(_holds(v, host) for v in value)


def validation_context(request: web.Request) -> dict[str, Any]:
    settings = request.app[SETTINGS]
    return {
        "min_interval_seconds": settings.min_interval_seconds,
        "http_max_body_bytes": settings.http_max_body_bytes,
        "allow_insecure_tls": settings.allow_insecure_tls,
    }


def changed_settings(request: web.Request, check: Check, stored: Any, patch: Any) -> Any:
    """A typed monitor's settings as the PATCH changes them, validated whole (rules between the
    type's fields hold whichever changed)."""
    assert check.Settings is not None
    given = patch.model_dump(include=patch.model_fields_set & set(check.Settings.model_fields))
    try:
        return check.Settings.model_validate({**(stored or {}), **given}, context=validation_context(request))
    except ValidationError as exc:
        raise from_validation(exc, check.Settings) from None
