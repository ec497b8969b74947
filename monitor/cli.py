"""The ``monitor`` command: the four processes, migrations and admin commands."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Coroutine
from typing import Any

import click

from monitor import config, lifecycle
from monitor import logging as mlog
from monitor.cli_accounts import accounts_group, keys_group
from monitor.cli_alerts import alerts
from monitor.cli_ascode import COMMANDS as ASCODE_COMMANDS
from monitor.cli_exports import export_checks
from monitor.cli_import import import_command
from monitor.cli_invites import COMMANDS as INVITE_COMMANDS
from monitor.cli_setup import setup_url
from monitor.cli_support import JSON_OPTION, load_settings, print_rows, unreachable, with_connection
from monitor.cli_users import users_group
from monitor.cli_workers import echo_workers


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

    Configuration comes from MONITOR_* environment variables (docs/configuration.md).
    """


@main.command()
def api() -> None:
    """Run the JSON HTTP API on MONITOR_API_HOST:MONITOR_API_PORT (default 127.0.0.1:8080)."""
    settings = load_settings("database_url", "secret_key")
    mlog.configure(settings.log_format, settings.log_level, process="api")
    from monitor.api.server import ApiServer

    _run(settings, lifecycle.serve(ApiServer(settings), shutdown_timeout=settings.shutdown_timeout_seconds))


@main.command()
def scheduler() -> None:
    """Run the scheduler: check every active monitor on its own ticker and store the results."""
    settings = load_settings("database_url", "redis_url", "secret_key")
    mlog.configure(settings.log_format, settings.log_level, process="scheduler")
    from monitor.scheduler.service import Scheduler

    _run(settings, lifecycle.serve(Scheduler(settings), shutdown_timeout=settings.shutdown_timeout_seconds))


@main.command()
def alerter() -> None:
    """Run the alerter: deliver down and recovery events to their channels (Telegram, webhooks,
    Slack, Discord, ntfy, email, PagerDuty)."""
    settings = load_settings("database_url", "redis_url", "secret_key")
    mlog.configure(settings.log_format, settings.log_level, process="alerter")
    from monitor.alerter.service import Alerter

    _run(settings, lifecycle.serve(Alerter(settings), shutdown_timeout=settings.shutdown_timeout_seconds))


@main.command()
def worker() -> None:
    """Run a worker: take heavy checks (browser runs) from their Redis queues and run them,
    MONITOR_WORKER_CONCURRENCY at a time; any number of workers, on any machine."""
    settings = load_settings("redis_url", "secret_key")
    mlog.configure(settings.log_format, settings.log_level, process="worker")
    from monitor.worker.service import Worker

    _run(settings, lifecycle.serve(Worker(settings), shutdown_timeout=settings.shutdown_timeout_seconds))


@main.command()
def migrate() -> None:
    """Apply the database migrations in sql/ that are not applied yet (safe to repeat).

    With MONITOR_SECRET_KEY set, it then seals the secrets an older version stored in clear.
    """
    settings = load_settings("database_url")
    mlog.configure(settings.log_format, settings.log_level, process="migrate")
    from monitor import db
    from monitor import secrets as sealing

    async def seal(conn: Any) -> tuple[sealing.Resealed | None, int]:
        if settings.secret_key is None:
            return None, await sealing.count_plaintext(conn)
        return await sealing.reseal(conn, settings.secret_box(), rotate=False), 0

    try:
        applied = asyncio.run(db.migrate(settings.dsn))
        click.echo(f"applied {len(applied)} migration(s)" + (": " + ", ".join(applied) if applied else ""))
        done, in_clear = asyncio.run(with_connection(settings, seal))
    except OSError as exc:
        raise unreachable(exc) from None
    except db.MigrationError as exc:
        raise click.ClickException(str(exc)) from None
    if done is not None and done.sealed:
        click.echo(f"sealed {done.sealed} secret(s) stored in clear, of {done.monitor_rows} monitor(s)")
    elif done is None and in_clear:
        click.echo(f"warning: {in_clear} monitor secret(s) stay in clear in the database until "
                   f"{sealing.SETTING} is set and `monitor secrets rotate` runs", err=True)  # fmt: skip
    elif done is None:
        click.echo(f"note: {sealing.SETTING} is not set; the api, scheduler and alerter need it to start "
                   f"({sealing.HOW_TO_MAKE_ONE})", err=True)  # fmt: skip


@main.group("secrets")
def secrets_group() -> None:
    """The key that seals the secrets stored in the database (MONITOR_SECRET_KEY).

    To change it: set MONITOR_SECRET_KEY=NEW,OLD for every process and restart them, run
    `monitor secrets rotate`, then set MONITOR_SECRET_KEY=NEW alone and restart again.
    """


@secrets_group.command("generate-key")
def secrets_generate_key() -> None:
    """Print a new random key for MONITOR_SECRET_KEY (keep it apart from database backups)."""
    from monitor import secrets as sealing

    click.echo(sealing.generate_key())


@secrets_group.command("rotate")
def secrets_rotate() -> None:
    """Re-seal every stored secret with the first key of MONITOR_SECRET_KEY.

    Monitor credentials and the sealed values of channel configs sealed with another of its
    keys are sealed again with the first; credentials still in clear are sealed. One
    transaction: a value none of the keys opens stops it, and nothing is changed. Safe to
    repeat.
    """
    import asyncpg

    from monitor import secrets as sealing

    settings = load_settings("database_url", "secret_key")
    box = settings.secret_box()
    try:
        done = asyncio.run(with_connection(settings, lambda conn: sealing.reseal(conn, box, rotate=True)))
    except sealing.SecretKeyError as exc:
        raise click.ClickException(f"nothing changed: {exc}") from None
    except asyncpg.UndefinedTableError:
        raise click.ClickException("the database is not migrated yet (monitor migrate)") from None
    except OSError as exc:
        raise unreachable(exc) from None
    click.echo(f"secrets: {done.summary()}")


@main.group("cluster")
def cluster_group() -> None:
    """The schedulers sharing the monitors (see docs/architecture.md, "Several schedulers")."""


@cluster_group.command("status")
@JSON_OPTION
def cluster_status(as_json: bool) -> None:
    """List the schedulers: name, location, state, lease left, monitors run, checks per second;
    then the heavy-check workers and the depth of each heavy kind's queue.

    A member is "live", "applying" (it has not applied the latest change of members yet) or
    "lapsed" (its lease ran out; the next renewal of another member removes it). Below the
    table: the locations that monitors name but no live scheduler is in (not checked there).
    Then, with MONITOR_REDIS_URL: each live worker (kinds it runs, jobs running of its
    concurrency, seconds since its heartbeat) and each queue (jobs waiting, jobs running).
    --json prints the schedulers only.
    """
    from monitor.scheduler.membership import cluster_status as read
    from monitor.scheduler.membership import unserved_locations

    async def both(conn: Any) -> tuple[tuple[list[Any], int], list[tuple[str, int]]]:
        return await read(conn), await unserved_locations(conn)

    settings = load_settings("database_url")
    try:
        (members, active), unserved = asyncio.run(with_connection(settings, both))
    except OSError as exc:
        raise unreachable(exc) from None
    columns = {"name": "NAME", "location": "LOCATION", "state": "STATE", "lease_left_s": "LEASE LEFT (S)",
               "monitors": "MONITORS", "checks_per_s": "CHECKS/S", "host": "HOST", "pid": "PID",
               "joined_at": "JOINED"}  # fmt: skip
    print_rows(members, columns, as_json=as_json, none="no scheduler is running")
    if not as_json:
        running = sum(m.monitors for m in members if m.state != "lapsed")
        click.echo(f"\n{active} active monitor(s), {running} run by the live schedulers")
        for location, count in unserved:
            click.echo(
                f"location {location!r}: no live scheduler; {count} monitor(s) are not checked from there"
            )
        echo_workers(settings)


for _command in INVITE_COMMANDS:  # monitor users invite, monitor users reset-password
    users_group.add_command(_command)
_GROUPS = (alerts, accounts_group, keys_group, users_group, setup_url, import_command, export_checks)
for _group in (*_GROUPS, *ASCODE_COMMANDS):
    main.add_command(_group)
