"""``monitor setup-url``: where the dashboard is and, on a fresh installation (no user yet), a
new link that makes its first owner and account (``monitor.domain.first_run``). ``make run``
runs it before starting the processes."""

from __future__ import annotations

import asyncio

import click

from monitor.cli_support import load_settings, unreachable, with_deps


@click.command("setup-url")
def setup_url() -> None:
    """Print the dashboard's address and, while no user exists, a new setup link.

    The link opens the dashboard's first-run page, which makes the first owner and account; it
    works for 24 hours and only until a first user exists. Once one does, only the address is
    printed (sign in there, or add people with `monitor users create`).
    """
    import asyncpg

    from monitor.domain import first_run

    settings = load_settings("database_url")
    try:
        token = asyncio.run(with_deps(settings, first_run.issue_token))
    except asyncpg.UndefinedTableError:
        raise click.ClickException("the database is not migrated yet (monitor migrate)") from None
    except OSError as exc:
        raise unreachable(exc) from None
    base = first_run.dashboard_url(settings)
    click.echo(f"dashboard: {base}/")
    if token is not None:
        click.echo(f"first run: open {first_run.setup_url(base, token)}")
        click.echo(f"           to make the first owner and account (the link works for "
                   f"{first_run.TOKEN_HOURS} hours, until one exists)")  # fmt: skip
