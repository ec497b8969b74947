"""What the ``monitor`` commands share: the settings (a bad or missing one stops the command
with a message naming it), the stores one command opens and closes, and rows printed as a
table or as JSON."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Coroutine, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import click

from monitor import config

if TYPE_CHECKING:
    from monitor.domain.context import Deps


def unreachable(exc: OSError) -> click.ClickException:
    """The message of a command whose database could not be reached, or did not answer: a
    query past the pool's command timeout is a ``TimeoutError`` (an ``OSError``) with no text,
    which read "database unreachable: " with nothing after it."""
    if isinstance(exc, TimeoutError):
        return click.ClickException(
            "the database did not answer in time (a query ran past its timeout); try again when it is "
            "less busy"
        )
    return click.ClickException(f"database unreachable: {exc}")


def load_settings(*required: str) -> config.Settings:
    try:
        settings = config.load()
        settings.require(*required)
        return settings
    except config.ConfigError as exc:
        raise click.ClickException(f"configuration: {exc}") from None


def _log_to_stderr(settings: config.Settings) -> None:
    """An admin command's log lines (a target that does not resolve, a retried connection) go
    to stderr, so its stdout is only what it prints: a plan, a table, JSON, an export."""
    import sys

    from monitor import logging as mlog

    mlog.configure(settings.log_format, settings.log_level, process="cli", stream=sys.stderr)


async def with_connection(settings: config.Settings, work: Callable[[Any], Coroutine[Any, Any, Any]]) -> Any:
    from monitor import db

    _log_to_stderr(settings)
    conn = await db.connect(settings.dsn)
    try:
        return await work(conn)
    finally:
        await conn.close()


async def with_deps(settings: config.Settings, work: Callable[[Deps], Coroutine[Any, Any, Any]]) -> Any:
    """``work(deps)`` with what the domain's operations use, as the api gives it (a small pool, a
    vetted resolver); without MONITOR_SECRET_KEY, a box that refuses to seal or open (the account
    and key commands need none)."""
    from monitor import db
    from monitor.domain.context import Deps
    from monitor.net.policy import AddressPolicy
    from monitor.net.resolver import VettedResolver
    from monitor.secrets import NoSecretBox, SecretBox

    _log_to_stderr(settings)
    box: SecretBox
    try:
        box = settings.secret_box()
    except config.ConfigError as exc:
        box = NoSecretBox(exc)
    pool = await db.create_pool(settings.dsn, min_size=0, max_size=2)
    resolver = VettedResolver(AddressPolicy(settings.allow_cidrs), settings.dns_servers)
    deps = Deps(pool, settings, box, resolver)
    try:
        return await work(deps)
    finally:
        deps.hasher.close()
        await resolver.close()
        await pool.close()


async def with_redis(settings: config.Settings, work: Callable[..., Coroutine[Any, Any, Any]]) -> Any:
    from monitor import redisconn

    redis = redisconn.from_settings(settings, socket_timeout=10, socket_connect_timeout=5)
    try:
        return await work(redis)
    finally:
        await redis.aclose()


async def with_stores(settings: config.Settings, work: Callable[..., Coroutine[Any, Any, Any]]) -> Any:
    from monitor import db

    pool = await db.create_pool(settings.dsn, min_size=0, max_size=2)
    try:
        return await with_redis(settings, lambda redis: work(redis, pool))
    finally:
        await pool.close()


def time_text(value: datetime | None, *, precise: bool = False) -> str | None:
    """RFC 3339 in UTC: whole seconds for a table, as stored for JSON."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat(timespec="auto" if precise else "seconds").replace("+00:00", "Z")


def print_rows(items: Sequence[Any], columns: dict[str, str], *, as_json: bool, none: str) -> None:
    """Dataclass ``items`` as a JSON array (every field; times RFC 3339) or a table of ``columns``
    (field -> heading; an absent value shows as "-")."""
    if as_json:
        plain = [dataclasses.asdict(item) for item in items]
        click.echo(json.dumps([{k: time_text(v, precise=True) if isinstance(v, datetime) else v
                                for k, v in fields.items()} for fields in plain], indent=2))  # fmt: skip
        return
    if not items:
        click.echo(none)
        return
    cells = [list(columns.values())]
    for item in items:
        values = [getattr(item, field) for field in columns]
        cells.append([_cell(v) for v in values])
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    for row in cells:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


def _cell(value: Any) -> str:
    if isinstance(value, datetime):
        return time_text(value) or "-"
    return "-" if value is None else str(value)


JSON_OPTION = click.option("--json", "as_json", is_flag=True, help="Print a JSON array instead of a table.")
