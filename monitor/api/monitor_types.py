"""What the monitors' handlers do by the monitor's type: the fields a type shows, the hosts it
dials vetted (the first of the two SSRF layers), its settings as a PATCH changes them.

Every type is described by its ``Check`` (``monitor/checks/base.py``): its ``Settings``, how it
stores and shows them, which of them are secrets. So nothing here names a type.
"""

from __future__ import annotations

from typing import Any

import asyncpg
from aiohttp import web
from pydantic import BaseModel, ValidationError
from yarl import URL

from monitor.api.context import RESOLVER, SETTINGS
from monitor.api.errors import ApiError, from_validation
from monitor.checks import REGISTRY as CHECKS
from monitor.checks import Check
from monitor.checks.base import SettingsError
from monitor.domain.status_pages import BADGE_PATH as BADGE_PATH  # the monitors' handlers read it here
from monitor.domain.targets import vet_host

# Where a heartbeat monitor's pings go (monitor/api/pings.py): this and its token.
PING_PATH = "/ping/"


def public_base(request: web.Request) -> str:
    """The origin (and path prefix) users reach the api at: MONITOR_PUBLIC_URL, else the
    address of this request."""
    configured = request.app[SETTINGS].public_url
    return configured.rstrip("/") if configured else str(request.url.origin())


def type_fields(row: asyncpg.Record, base: str) -> dict[str, Any]:
    """``url`` and the fields of the monitor's type, as the API shows them."""
    fields = CHECKS.get(row["type"]).shown(row["url"], row["settings"], row["secret_view"])
    if row["ping_token"] is not None:
        fields["ping_url"] = f"{base}{PING_PATH}{row['ping_token']}"
    return fields


async def vet_hosts(request: web.Request, check: Check, settings: Any, given: set[str] | None = None) -> None:
    """The hosts a monitor with these ``Settings`` dials, vetted as a URL's host is; with
    ``given`` (a PATCH's fields), only those held by a field it sets."""
    for host in check.hosts(settings):
        field = next(
            (n for n in type(settings).model_fields if _holds(getattr(settings, n, None), host)), "host"
        )
        if given is None or field in given:
            await vet_host(request.app[RESOLVER], host, field)


def _holds(value: Any, host: str) -> bool:
    if isinstance(value, str):
        if "://" in value:  # a URL: its host
            return URL(value).raw_host == host
        # a host, "host:port" or "[v6]:port"
        return value == host or value.startswith((f"{host}:", f"[{host}]"))
    return isinstance(value, list | tuple) and any(_holds(v, host) for v in value)


def validation_context(request: web.Request) -> dict[str, Any]:
    settings = request.app[SETTINGS]
    return {
        "min_interval_seconds": settings.min_interval_seconds,
        "http_max_body_bytes": settings.http_max_body_bytes,
        "allow_insecure_tls": settings.allow_insecure_tls,
    }


def unmasked(check: Check, given: dict[str, Any], stored: dict[str, Any]) -> dict[str, Any]:
    """``given`` with the secrets sent back masked replaced by the ``stored`` ones (a 422 naming
    the field where there is none to keep)."""
    try:
        return check.unmask(given, stored)
    except SettingsError as exc:
        raise ApiError(422, "invalid", f"{exc.field}: {exc}", exc.field) from None


def changed_settings(request: web.Request, check: Check, whole: dict[str, Any], patch: BaseModel) -> Any:
    """A monitor's settings as the PATCH changes its ``whole`` (``Check.whole``), validated whole
    (rules between the type's fields hold whichever changed)."""
    given = patch.model_dump(include=patch.model_fields_set & set(check.Settings.model_fields), mode="json")
    merged = {**whole, **unmasked(check, given, whole)}
    try:
        return check.Settings.model_validate(merged, context=validation_context(request))
    except ValidationError as exc:
        raise from_validation(exc, check.Settings) from None
