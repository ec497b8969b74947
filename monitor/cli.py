"""The ``monitor`` command: the three processes, migrations and admin commands."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Coroutine
from typing import Any

import click

from monitor import config, lifecycle
from monitor import logging as mlog


def _settings(*required: str) -> config.Settings:
    try:
        settings = config.load()
        settings.require(*required)
        return settings
    except config.ConfigError as exc:
        raise click.ClickException(f"configuration: {exc}") from None


def _loop_factory(settings: config.Settings) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop when installed and not turned off (MONITOR_UVLOOP=false)."""
    if not settings.uvloop:
        return None
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def _run(settings: config.Settings, coro: Coroutine[Any, Any, int]) -> None:
    factory = _loop_factory(settings)
    mlog.get(__name__).debug("event_loop", uvloop=factory is not None)
    try:
        with asyncio.Runner(loop_factory=factory) as runner:
            code = runner.run(coro)
    except config.ConfigError as exc:
        raise click.ClickException(f"configuration: {exc}") from None
    sys.exit(code)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="monitor")
def main() -> None:
    """monitor: a self-hosted uptime monitor.

    Configuration comes from MONITOR_* environment variables (see README).
    """


@main.command()
def api() -> None:
    """Run the JSON HTTP API on MONITOR_API_HOST:MONITOR_API_PORT (default 127.0.0.1:8080)."""
    settings = _settings("database_url")
    mlog.configure(settings.log_format, settings.log_level, process="api")
    from monitor.api.server import ApiServer

    _run(settings, lifecycle.serve(ApiServer(settings), shutdown_timeout=settings.shutdown_timeout_seconds))


@main.command()
def scheduler() -> None:
    """Run the scheduler: check every active monitor on its own ticker and store the results."""
    settings = _settings("database_url", "redis_url")
    mlog.configure(settings.log_format, settings.log_level, process="scheduler")
    from monitor.scheduler.service import Scheduler

    _run(settings, lifecycle.serve(Scheduler(settings), shutdown_timeout=settings.shutdown_timeout_seconds))


@main.command()
def alerter() -> None:
    """Run the alerter: deliver down and recovery events to Telegram."""
    settings = _settings("database_url", "redis_url")
    mlog.configure(settings.log_format, settings.log_level, process="alerter")
    from monitor.alerter.service import Alerter

    _run(settings, lifecycle.serve(Alerter(settings), shutdown_timeout=settings.shutdown_timeout_seconds))


@main.command()
def migrate() -> None:
    """Apply the database migrations in sql/ that are not applied yet (safe to repeat)."""
    settings = _settings("database_url")
    mlog.configure(settings.log_format, settings.log_level, process="migrate")
    from monitor import db

    try:
        applied = asyncio.run(db.migrate(settings.dsn))
    except OSError as exc:
        raise click.ClickException(f"database unreachable: {exc}") from None
    click.echo(f"applied {len(applied)} migration(s)" + (": " + ", ".join(applied) if applied else ""))


@main.group()
def alerts() -> None:
    """Inspect and re-drive alerts."""


@alerts.group()
def dead() -> None:
    """Alerts that could not be delivered (the dead-letter stream)."""


async def _with_stores(settings: config.Settings, work: Callable[..., Coroutine[Any, Any, Any]]) -> Any:
    import redis.asyncio as aioredis

    from monitor import db

    redis = aioredis.Redis.from_url(settings.redis_dsn, socket_timeout=10, socket_connect_timeout=5)
    pool = await db.create_pool(settings.dsn, min_size=0, max_size=2)
    try:
        return await work(redis, pool)
    finally:
        await pool.close()
        await redis.aclose()


@dead.command("list")
def dead_list() -> None:
    """List dead letters, oldest first: id, time, monitor, kind, event, channel, last error."""
    from monitor.alerter import deadletter

    settings = _settings("database_url", "redis_url")
    try:
        letters = asyncio.run(_with_stores(settings, lambda redis, _pool: deadletter.list_dead(redis)))
    except OSError as exc:
        raise click.ClickException(f"cannot reach Redis or the database: {exc}") from None
    for letter in letters:
        click.echo(letter.summary)
    if not letters:
        click.echo("no dead letters")


@dead.command("retry")
@click.argument("ids", nargs=-1)
@click.option("--all", "everything", is_flag=True, help="Re-drive every dead letter.")
def dead_retry(ids: tuple[str, ...], everything: bool) -> None:
    """Put dead letters back on the event stream so the alerter delivers them again."""
    from monitor.alerter import deadletter

    if bool(ids) == everything:
        raise click.UsageError("give dead-letter IDs or --all (not both)")
    settings = _settings("database_url", "redis_url")
    try:
        done = asyncio.run(
            _with_stores(
                settings,
                lambda redis, pool: deadletter.redrive(redis, pool, None if everything else list(ids)),
            )
        )
    except KeyError as exc:
        raise click.ClickException(f"no such dead letter: {exc.args[0]}") from None
    except OSError as exc:
        raise click.ClickException(f"cannot reach Redis or the database: {exc}") from None
    click.echo(f"re-drove {len(done)} dead letter(s)")


async def _with_connection(settings: config.Settings, work: Callable[[Any], Coroutine[Any, Any, Any]]) -> Any:
    from monitor import db

    conn = await db.connect(settings.dsn)
    try:
        return await work(conn)
    finally:
        await conn.close()


@main.group("accounts")
def accounts_group() -> None:
    """Manage accounts (every monitor, channel and key belongs to one)."""


@accounts_group.command("create")
@click.argument("name")
def accounts_create(name: str) -> None:
    """Create the account NAME."""
    from monitor import accounts

    settings = _settings("database_url")

    try:
        account_id = asyncio.run(_with_connection(settings, lambda conn: accounts.create_account(conn, name)))
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"database unreachable: {exc}") from None
    click.echo(f"created account {name!r} (id {account_id})")


@main.group("keys")
def keys_group() -> None:
    """Manage API keys (the API manages further keys of the same account: /api/v1/keys)."""


@keys_group.command("create")
@click.option("--account", "account_name", required=True, help="Name of the account the key acts for.")
@click.option("--name", "key_name", default="", help="A label to recognise the key by.")
def keys_create(account_name: str, key_name: str) -> None:
    """Create an API key and print it once (only its hash is stored)."""
    from monitor import accounts

    settings = _settings("database_url")

    async def work(conn: Any) -> accounts.NewKey:
        account_id = await accounts.account_id_by_name(conn, account_name)
        if account_id is None:
            raise click.ClickException(f"no account named {account_name!r} (monitor accounts create NAME)")
        return await accounts.create_key(conn, account_id, key_name)

    try:
        new = asyncio.run(_with_connection(settings, work))
    except OSError as exc:
        raise click.ClickException(f"database unreachable: {exc}") from None
    click.echo(new.key)
    click.echo(f"(key id {new.id} of account {account_name!r}; it is shown only this once)", err=True)
