"""``monitor alerts dead``: the alerts that could not be delivered, listed, re-driven or dropped
(monitor/alerter/deadletter.py does the work)."""

from __future__ import annotations

import asyncio

import click

from monitor.cli_support import load_settings, with_redis, with_stores


@click.group("alerts")
def alerts() -> None:
    """Alerts that could not be delivered: list, re-drive or drop them."""


@alerts.group()
def dead() -> None:
    """Alerts that could not be delivered (the dead-letter stream)."""


@dead.command("list")
def dead_list() -> None:
    """List dead letters, oldest first: id, time, what the event is about (monitor=ID "name",
    channel test "name", or checker), kind, event, channel, last error."""
    from monitor.alerter import deadletter

    settings = load_settings("redis_url")
    try:
        letters = asyncio.run(with_redis(settings, deadletter.list_dead))
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
    settings = load_settings("database_url", "redis_url")
    try:
        done = asyncio.run(
            with_stores(
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

    settings = load_settings("redis_url")
    try:
        done = asyncio.run(with_redis(settings, lambda redis: deadletter.drop(redis, list(ids))))
    except KeyError as exc:
        raise click.ClickException(f"no such dead letter: {exc.args[0]}") from None
    except OSError as exc:
        raise click.ClickException(f"cannot reach Redis: {exc}") from None
    click.echo(f"dropped {len(done)} dead letter(s)")
