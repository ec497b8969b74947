"""The ``monitor`` command: the three processes, migrations and admin commands."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from collections.abc import Callable, Coroutine, Sequence
from datetime import UTC, datetime
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
    settings = _settings("database_url", "secret_key")
    mlog.configure(settings.log_format, settings.log_level, process="api")
    from monitor.api.server import ApiServer

    _run(settings, lifecycle.serve(ApiServer(settings), shutdown_timeout=settings.shutdown_timeout_seconds))


@main.command()
def scheduler() -> None:
    """Run the scheduler: check every active monitor on its own ticker and store the results."""
    settings = _settings("database_url", "redis_url", "secret_key")
    mlog.configure(settings.log_format, settings.log_level, process="scheduler")
    from monitor.scheduler.service import Scheduler

    _run(settings, lifecycle.serve(Scheduler(settings), shutdown_timeout=settings.shutdown_timeout_seconds))


@main.command()
def alerter() -> None:
    """Run the alerter: deliver down and recovery events to their channels (Telegram, webhooks,
    Slack, Discord, ntfy, email, PagerDuty)."""
    settings = _settings("database_url", "redis_url", "secret_key")
    mlog.configure(settings.log_format, settings.log_level, process="alerter")
    from monitor.alerter.service import Alerter

    _run(settings, lifecycle.serve(Alerter(settings), shutdown_timeout=settings.shutdown_timeout_seconds))


@main.command()
def migrate() -> None:
    """Apply the database migrations in sql/ that are not applied yet (safe to repeat).

    With MONITOR_SECRET_KEY set, it then seals the secrets an older version stored in clear.
    """
    settings = _settings("database_url")
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
        done, in_clear = asyncio.run(_with_connection(settings, seal))
    except OSError as exc:
        raise click.ClickException(f"database unreachable: {exc}") from None
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

    settings = _settings("database_url", "secret_key")
    box = settings.secret_box()
    try:
        done = asyncio.run(_with_connection(settings, lambda conn: sealing.reseal(conn, box, rotate=True)))
    except sealing.SecretKeyError as exc:
        raise click.ClickException(f"nothing changed: {exc}") from None
    except asyncpg.UndefinedTableError:
        raise click.ClickException("the database is not migrated yet (monitor migrate)") from None
    except OSError as exc:
        raise click.ClickException(f"database unreachable: {exc}") from None
    click.echo(f"secrets: {done.summary()}")


@main.group()
def alerts() -> None:
    """Alerts that could not be delivered: list, re-drive or drop them."""


@alerts.group()
def dead() -> None:
    """Alerts that could not be delivered (the dead-letter stream)."""


async def _with_redis(settings: config.Settings, work: Callable[..., Coroutine[Any, Any, Any]]) -> Any:
    from monitor import redisconn

    redis = redisconn.from_settings(settings, socket_timeout=10, socket_connect_timeout=5)
    try:
        return await work(redis)
    finally:
        await redis.aclose()


async def _with_stores(settings: config.Settings, work: Callable[..., Coroutine[Any, Any, Any]]) -> Any:
    from monitor import db

    pool = await db.create_pool(settings.dsn, min_size=0, max_size=2)
    try:
        return await _with_redis(settings, lambda redis: work(redis, pool))
    finally:
        await pool.close()


@dead.command("list")
def dead_list() -> None:
    """List dead letters, oldest first: id, time, what the event is about (monitor=ID "name",
    channel test "name", or checker), kind, event, channel, last error."""
    from monitor.alerter import deadletter

    settings = _settings("redis_url")
    try:
        letters = asyncio.run(_with_redis(settings, deadletter.list_dead))
    except OSError as exc:
        raise click.ClickException(f"cannot reach Redis: {exc}") from None
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


@dead.command("drop")
@click.argument("ids", nargs=-1, required=True)
def dead_drop(ids: tuple[str, ...]) -> None:
    """Remove dead letters IDS (as `list` shows them) for good, without sending them.

    The delivery record stays as it is ('dead'), so what was not sent can still be read in the
    database. An unknown ID stops the command before anything is removed.
    """
    from monitor.alerter import deadletter

    settings = _settings("redis_url")
    try:
        done = asyncio.run(_with_redis(settings, lambda redis: deadletter.drop(redis, list(ids))))
    except KeyError as exc:
        raise click.ClickException(f"no such dead letter: {exc.args[0]}") from None
    except OSError as exc:
        raise click.ClickException(f"cannot reach Redis: {exc}") from None
    click.echo(f"dropped {len(done)} dead letter(s)")


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


@accounts_group.command("delete")
@click.argument("name")
@click.option("--yes", is_flag=True, help="Really delete it: without this flag, only say what would go.")
def accounts_delete(name: str, yes: bool) -> None:
    """Delete the account NAME and everything in it, for good.

    Its monitors (with their state, incidents and rollups), alert channels, API keys, status
    pages and maintenance windows go in one transaction, and the schedulers stop checking its
    monitors at once. Raw checks age out with MONITOR_RETENTION_DAYS. Refused without --yes,
    saying what it would delete.
    """
    from monitor import accounts

    settings = _settings("database_url")

    async def work(conn: Any) -> accounts.Contents | None:
        if not yes:
            return await accounts.account_contents(conn, name)
        return await accounts.delete_account(conn, name)

    try:
        held = asyncio.run(_with_connection(settings, work))
    except OSError as exc:
        raise click.ClickException(f"database unreachable: {exc}") from None
    if held is None:
        raise click.ClickException(f"no account named {name!r}")
    if not yes:
        raise click.ClickException(
            f"account {name!r} (id {held.id}) holds {held.summary()}; "
            "nothing was deleted: add --yes to delete it and all of that for good"
        )
    click.echo(f"deleted account {name!r} (id {held.id}) and {held.summary()}")


def _time(value: datetime | None, *, precise: bool = False) -> str | None:
    """RFC 3339 in UTC: whole seconds for a table, as stored for JSON."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat(timespec="auto" if precise else "seconds").replace("+00:00", "Z")


def _print_rows(items: Sequence[Any], columns: dict[str, str], *, as_json: bool, none: str) -> None:
    """Dataclass ``items`` as a JSON array (every field; times RFC 3339) or a table of ``columns``
    (field -> heading; an absent value shows as "-")."""
    if as_json:
        plain = [dataclasses.asdict(item) for item in items]
        click.echo(json.dumps([{k: _time(v, precise=True) if isinstance(v, datetime) else v
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
        return _time(value) or "-"
    return "-" if value is None else str(value)


_JSON_OPTION = click.option("--json", "as_json", is_flag=True, help="Print a JSON array instead of a table.")


@accounts_group.command("list")
@_JSON_OPTION
def accounts_list(as_json: bool) -> None:
    """List accounts: id, name, created, monitors, active keys."""
    from monitor import accounts

    settings = _settings("database_url")
    try:
        found = asyncio.run(_with_connection(settings, accounts.list_accounts))
    except OSError as exc:
        raise click.ClickException(f"database unreachable: {exc}") from None
    columns = {"id": "ID", "name": "NAME", "created_at": "CREATED", "monitors": "MONITORS",
               "active_keys": "ACTIVE KEYS"}  # fmt: skip
    _print_rows(found, columns, as_json=as_json, none="no accounts (monitor accounts create NAME)")


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


@keys_group.command("list")
@click.option("--account", "account_name", default=None, help="Only the keys of this account.")
@_JSON_OPTION
def keys_list(account_name: str | None, as_json: bool) -> None:
    """List API keys, revoked ones too: id, account, name, prefix, created, last used, revoked.

    Keys are stored as SHA-256 hashes: a key itself is shown only when it is created.
    """
    from monitor import accounts

    settings = _settings("database_url")

    async def work(conn: Any) -> list[accounts.Key]:
        account_id = None
        if account_name is not None:
            account_id = await accounts.account_id_by_name(conn, account_name)
            if account_id is None:
                raise click.ClickException(f"no account named {account_name!r} (monitor accounts list)")
        return await accounts.list_keys(conn, account_id)

    try:
        found = asyncio.run(_with_connection(settings, work))
    except OSError as exc:
        raise click.ClickException(f"database unreachable: {exc}") from None
    columns = {"id": "ID", "account": "ACCOUNT", "name": "NAME", "prefix": "PREFIX", "created_at": "CREATED",
               "last_used_at": "LAST USED", "revoked_at": "REVOKED"}  # fmt: skip
    _print_rows(found, columns, as_json=as_json, none="no keys (monitor keys create --account NAME)")


@keys_group.command("revoke")
@click.argument("key_id", metavar="ID", type=click.IntRange(1, 2**63 - 1))
def keys_revoke(key_id: int) -> None:
    """Revoke the API key ID (see monitor keys list): requests with it get 401 from now on."""
    from monitor import accounts

    settings = _settings("database_url")
    try:
        found = asyncio.run(_with_connection(settings, lambda conn: accounts.revoke_key(conn, key_id)))
    except OSError as exc:
        raise click.ClickException(f"database unreachable: {exc}") from None
    if found is None:
        raise click.ClickException(f"no key with id {key_id} (monitor keys list)")
    key, newly = found
    what = f"key {key.id} ({key.prefix}, {key.name!r} of account {key.account!r})"
    if newly:
        click.echo(f"revoked {what}")
    else:
        click.echo(f"{what} was revoked already, at {_time(key.revoked_at)}")


@main.group("cluster")
def cluster_group() -> None:
    """The schedulers sharing the monitors (see docs/architecture.md, "Several schedulers")."""


@cluster_group.command("status")
@_JSON_OPTION
def cluster_status(as_json: bool) -> None:
    """List the schedulers: name, location, state, lease left, monitors run, checks per second.

    A member is "live", "applying" (it has not applied the latest change of members yet) or
    "lapsed" (its lease ran out; the next renewal of another member removes it). Below the
    table: the locations that monitors name but no live scheduler is in (not checked there).
    """
    from monitor.scheduler.membership import cluster_status as read
    from monitor.scheduler.membership import unserved_locations

    async def both(conn: Any) -> tuple[tuple[list[Any], int], list[tuple[str, int]]]:
        return await read(conn), await unserved_locations(conn)

    settings = _settings("database_url")
    try:
        (members, active), unserved = asyncio.run(_with_connection(settings, both))
    except OSError as exc:
        raise click.ClickException(f"database unreachable: {exc}") from None
    columns = {"name": "NAME", "location": "LOCATION", "state": "STATE", "lease_left_s": "LEASE LEFT (S)",
               "monitors": "MONITORS", "checks_per_s": "CHECKS/S", "host": "HOST", "pid": "PID",
               "joined_at": "JOINED"}  # fmt: skip
    _print_rows(members, columns, as_json=as_json, none="no scheduler is running")
    if not as_json:
        running = sum(m.monitors for m in members if m.state != "lapsed")
        click.echo(f"\n{active} active monitor(s), {running} run by the live schedulers")
        for location, count in unserved:
            click.echo(
                f"location {location!r}: no live scheduler; {count} monitor(s) are not checked from there"
            )
