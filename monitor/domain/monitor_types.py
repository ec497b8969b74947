"""What the monitors' operations do by the monitor's type: the fields a type shows, the hosts it
dials vetted (the first of the two SSRF layers), its settings as a PATCH changes them, and its
secrets stored and opened.

Every type is described by its ``Check`` (``monitor/checks/base.py``): its ``Settings``, how it
stores and shows them, which of them are secrets. So nothing here names a type.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import asyncpg
from pydantic import BaseModel, ValidationError
from yarl import URL

from monitor.checks import REGISTRY as CHECKS
from monitor.checks import Check
from monitor.checks.base import SettingsError
from monitor.config import Settings
from monitor.domain.context import Vetter
from monitor.domain.errors import DomainError, from_validation
from monitor.domain.targets import vet_host
from monitor.secrets import SecretBox, open_monitor_secrets, seal_monitor_secrets

# Where a heartbeat monitor's pings go (monitor/api/pings.py): this and its token.
PING_PATH = "/ping/"


def type_fields(row: Mapping[str, Any], base: str) -> dict[str, Any]:
    """``url`` and the fields of the monitor's type, as the API shows them."""
    fields = CHECKS.get(row["type"]).shown(row["url"], row["settings"], row["secret_view"])
    if row["ping_token"] is not None:
        fields["ping_url"] = f"{base}{PING_PATH}{row['ping_token']}"
    return fields


async def vet_hosts(resolver: Vetter, check: Check, settings: Any, given: set[str] | None = None) -> None:
    """The hosts a monitor with these ``Settings`` dials, vetted as a URL's host is; with
    ``given`` (a PATCH's fields), only those held by a field it sets."""
    for host in check.hosts(settings):
        field = next(
            (f for n in type(settings).model_fields if (f := _holder(getattr(settings, n, None), host, n))),
            "host",
        )
        if given is None or field.split(".")[0] in given:
            await vet_host(resolver, host, field)


def _holder(value: Any, host: str, path: str) -> str | None:
    """The path of the first field within ``value`` (at ``path``) that holds ``host``: the
    field itself, or one inside a list of values (``nameservers``) or of objects
    (``steps.1.url``)."""
    if isinstance(value, str):
        if "://" in value:  # a URL: its host
            return path if URL(value).raw_host == host else None
        # a host, "host:port" or "[v6]:port"
        return path if value == host or value.startswith((f"{host}:", f"[{host}]")) else None
    if isinstance(value, list | tuple):
        if any(isinstance(v, str) and _holder(v, host, path) for v in value):
            return path
        for index, item in enumerate(value):
            if isinstance(item, BaseModel):
                found = _holder(item, host, f"{path}.{index}")
                if found:
                    return found
        return None
    if isinstance(value, BaseModel):
        for name in type(value).model_fields:
            found = _holder(getattr(value, name, None), host, f"{path}.{name}")
            if found:
                return found
    return None


def validation_context(settings: Settings) -> dict[str, Any]:
    """The limits of this deployment a monitor's body is validated against."""
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
        raise DomainError(422, "invalid", f"{exc.field}: {exc}", exc.field) from None


def changed_settings(settings: Settings, check: Check, whole: dict[str, Any], patch: BaseModel) -> Any:
    """A monitor's settings as the PATCH changes its ``whole`` (``Check.whole``), validated whole
    (rules between the type's fields hold whichever changed)."""
    given = patch.model_dump(include=patch.model_fields_set & set(check.Settings.model_fields), mode="json")
    merged = {**whole, **unmasked(check, given, whole)}
    try:
        return check.Settings.model_validate(merged, context=validation_context(settings))
    except ValidationError as exc:
        raise from_validation(exc, check.Settings) from None


_STORE = """INSERT INTO monitor_secrets (monitor_id, secrets) VALUES ($1, $2)
            ON CONFLICT (monitor_id) DO UPDATE SET secrets = EXCLUDED.secrets"""


async def store_secrets(
    conn: asyncpg.Connection, box: SecretBox, monitor_id: int, secrets: dict[str, Any] | None
) -> None:
    """The monitor's one row of secrets, sealed (monitor/secrets.py) and written, or (none left)
    deleted."""
    if secrets is None:
        await conn.execute("DELETE FROM monitor_secrets WHERE monitor_id = $1", monitor_id)
    else:
        await conn.execute(
            _STORE,
            monitor_id,
            seal_monitor_secrets(box, secrets),
        )


async def store_secrets_many(
    conn: asyncpg.Connection, box: SecretBox, secrets: Sequence[tuple[int, dict[str, Any]]]
) -> None:
    """:func:`store_secrets` of each (monitor id, secrets) of new monitors, in one batch."""
    await conn.executemany(
        _STORE,
        [(monitor_id, seal_monitor_secrets(box, plain)) for monitor_id, plain in secrets],
    )


async def whole(
    conn: asyncpg.Connection | asyncpg.Pool, box: SecretBox, check: Check, row: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(``Check.whole`` of a stored monitor, its secrets opened, or None): what a PATCH changes."""
    secrets = None
    if check.secrets:
        sealed = await conn.fetchval("SELECT secrets FROM monitor_secrets WHERE monitor_id = $1", row["id"])
        secrets = open_monitor_secrets(box, sealed)
    return check.whole(row["url"], row["settings"], secrets), secrets
