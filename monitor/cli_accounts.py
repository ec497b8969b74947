"""``monitor accounts`` and ``monitor keys``: accounts made, listed and deleted, API keys made,
listed and revoked. The domain's operations do the work (``monitor.domain.accounts`` and
``keys``); a command about one account acts as its owner."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import click

from monitor.cli_support import JSON_OPTION, load_settings, print_rows, time_text, unreachable, with_deps

ROLES = ("owner", "admin", "editor", "viewer", "notify")  # monitor.domain.context.ROLES, unimported

if TYPE_CHECKING:
    from monitor.domain.context import Deps


@click.group("accounts")
def accounts_group() -> None:
    """Manage accounts (every monitor, channel and key belongs to one)."""


@accounts_group.command("create")
@click.argument("name")
def accounts_create(name: str) -> None:
    """Create the account NAME."""
    from monitor.domain import accounts
    from monitor.domain.errors import DomainError

    settings = load_settings("database_url")

    try:
        account_id = asyncio.run(with_deps(settings, lambda deps: accounts.create(deps, name)))
    except DomainError as exc:
        raise click.ClickException(exc.message) from None
    except OSError as exc:
        raise unreachable(exc) from None
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
    from monitor.domain import accounts
    from monitor.domain.context import Actor
    from monitor.domain.errors import DomainError

    settings = load_settings("database_url")

    async def work(deps: Deps) -> accounts.Contents | None:
        account_id = await accounts.find(deps, name)
        if account_id is None:
            return None
        owner = Actor(account_id, role="owner")
        return await (accounts.delete(deps, owner) if yes else accounts.contents(deps, owner))

    try:
        held = asyncio.run(with_deps(settings, work))
    except DomainError as exc:  # not found: gone since it was found
        raise click.ClickException(
            f"no account named {name!r}" if exc.status == 404 else exc.message
        ) from None
    except OSError as exc:
        raise unreachable(exc) from None
    if held is None:
        raise click.ClickException(f"no account named {name!r}")
    if not yes:
        raise click.ClickException(
            f"account {name!r} (id {held.id}) holds {held.summary()}; "
            "nothing was deleted: add --yes to delete it and all of that for good"
        )
    click.echo(f"deleted account {name!r} (id {held.id}) and {held.summary()}")


@accounts_group.command("timezone")
@click.argument("name")
@click.argument("zone")
def accounts_timezone(name: str, zone: str) -> None:
    """Set the account NAME's time zone to ZONE (an IANA name: Europe/Berlin, UTC).

    SLA reports cut their months and quarters in it (``/api/v1/reports/sla``); UTC until set.
    """
    from monitor.domain import accounts
    from monitor.domain.context import Actor
    from monitor.domain.errors import DomainError

    settings = load_settings("database_url")

    async def work(deps: Deps) -> str | None:
        account_id = await accounts.find(deps, name)
        if account_id is None:
            return None
        return await accounts.set_timezone(deps, Actor(account_id, role="owner"), zone)

    try:
        done = asyncio.run(with_deps(settings, work))
    except DomainError as exc:
        raise click.ClickException(
            f"no account named {name!r}" if exc.status == 404 else exc.message
        ) from None
    except OSError as exc:
        raise click.ClickException(f"database unreachable: {exc}") from None
    if done is None:
        raise click.ClickException(f"no account named {name!r}")
    click.echo(f"account {name!r} now reports in {done}")


@accounts_group.command("list")
@JSON_OPTION
def accounts_list(as_json: bool) -> None:
    """List accounts: id, name, created, monitors, active keys."""
    from monitor.domain import accounts

    settings = load_settings("database_url")
    try:
        found = asyncio.run(with_deps(settings, accounts.every))
    except OSError as exc:
        raise unreachable(exc) from None
    columns = {"id": "ID", "name": "NAME", "created_at": "CREATED", "monitors": "MONITORS",
               "active_keys": "ACTIVE KEYS"}  # fmt: skip
    print_rows(found, columns, as_json=as_json, none="no accounts (monitor accounts create NAME)")


@click.group("keys")
def keys_group() -> None:
    """Manage API keys (the API manages further keys of the same account: /api/v1/keys)."""


@keys_group.command("create")
@click.option("--account", "account_name", required=True, help="Name of the account the key acts for.")
@click.option("--name", "key_name", default="", help="A label to know the key by (at most 100 characters).")
@click.option("--role", type=click.Choice(ROLES), default="owner", show_default=True,
              help="What the key may do (viewer: read-only, for dashboards and CI).")  # fmt: skip
def keys_create(account_name: str, key_name: str, role: str) -> None:
    """Create an API key and print it once (only its hash is stored)."""
    from monitor.domain import accounts, keys
    from monitor.domain.context import Actor
    from monitor.domain.errors import DomainError

    settings = load_settings("database_url")

    async def work(deps: Deps) -> dict[str, Any]:
        account_id = await accounts.find(deps, account_name)
        if account_id is None:
            raise click.ClickException(f"no account named {account_name!r} (monitor accounts create NAME)")
        return await keys.create(deps, Actor(account_id, role="owner"), {"name": key_name, "role": role})

    try:
        new = asyncio.run(with_deps(settings, work))
    except DomainError as exc:
        raise click.ClickException(exc.message) from None
    except OSError as exc:
        raise unreachable(exc) from None
    click.echo(new["key"])
    click.echo(f"(key id {new['id']} of account {account_name!r}; it is shown only this once)", err=True)


@keys_group.command("list")
@click.option("--account", "account_name", default=None, help="Only the keys of this account.")
@JSON_OPTION
def keys_list(account_name: str | None, as_json: bool) -> None:
    """List API keys, revoked ones too: id, account, name, prefix, role, created, last used, revoked.

    Keys are stored as SHA-256 hashes: a key itself is shown only when it is created.
    """
    from monitor.domain import accounts, keys

    settings = load_settings("database_url")

    async def work(deps: Deps) -> list[keys.Key]:
        account_id = None
        if account_name is not None:
            account_id = await accounts.find(deps, account_name)
            if account_id is None:
                raise click.ClickException(f"no account named {account_name!r} (monitor accounts list)")
        return await keys.every(deps, account_id)

    try:
        found = asyncio.run(with_deps(settings, work))
    except OSError as exc:
        raise unreachable(exc) from None
    columns = {"id": "ID", "account": "ACCOUNT", "name": "NAME", "prefix": "PREFIX", "role": "ROLE",
               "created_at": "CREATED", "last_used_at": "LAST USED", "revoked_at": "REVOKED"}  # fmt: skip
    print_rows(found, columns, as_json=as_json, none="no keys (monitor keys create --account NAME)")


@keys_group.command("revoke")
@click.argument("key_id", metavar="ID", type=click.IntRange(1, 2**63 - 1))
def keys_revoke(key_id: int) -> None:
    """Revoke the API key ID (see monitor keys list): requests with it get 401 from now on."""
    from monitor.domain import keys
    from monitor.domain.context import Actor
    from monitor.domain.errors import DomainError

    settings = load_settings("database_url")

    async def work(deps: Deps) -> keys.Revoked | None:
        account_id = await keys.account_of(deps, key_id)
        if account_id is None:
            return None
        return await keys.revoke(deps, Actor(account_id, role="owner"), key_id)

    try:
        found = asyncio.run(with_deps(settings, work))
    except DomainError as exc:  # not found: gone since it was found
        if exc.status != 404:
            raise click.ClickException(exc.message) from None
        found = None
    except OSError as exc:
        raise unreachable(exc) from None
    if found is None:
        raise click.ClickException(f"no key with id {key_id} (monitor keys list)")
    key = found.key
    what = f"key {key.id} ({key.prefix}, {key.name!r} of account {key.account!r})"
    if found.newly:
        click.echo(f"revoked {what}")
    else:
        click.echo(f"{what} was revoked already, at {time_text(key.revoked_at)}")
