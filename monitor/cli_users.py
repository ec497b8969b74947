"""``monitor users`` (people made and listed) and ``monitor accounts members`` (who is in an
account, with which role). The domain's operations do the work (``monitor.domain.users`` and
``members``); a command about one account acts as its owner.

The first owner of an account comes from here: ``monitor users create EMAIL --account NAME``.
A password is never an argument (it would show in the process list and the shell's history):
it is asked for twice on a terminal, or read from the first line of standard input with
``--password-stdin``.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

import click

from monitor.cli_accounts import ROLES, accounts_group
from monitor.cli_support import JSON_OPTION, load_settings, print_rows, unreachable, with_deps

if TYPE_CHECKING:
    from monitor.domain.context import Deps


@click.group("users")
def users_group() -> None:
    """Manage users (people who sign in; each a member of accounts with a role)."""


@dataclass(frozen=True)
class UserRow:
    id: int
    email: str
    display_name: str
    created_at: datetime
    password: bool
    accounts: str  # "acme (owner), lab (viewer)"


@dataclass(frozen=True)
class MemberRow:
    id: int
    email: str
    display_name: str
    role: str
    created_at: str


def _password(from_stdin: bool) -> str:
    if from_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    value: str = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    return value


@users_group.command("create")
@click.argument("email")
@click.option(
    "--name", "display_name", default="", help="The name shown for the user (at most 100 characters)."
)
@click.option("--account", "account_name", default=None, help="Make the user a member of this account.")
@click.option("--role", type=click.Choice(ROLES), default="owner", show_default=True,
              help="Their role in --account.")  # fmt: skip
@click.option("--password-stdin", is_flag=True, help="Read the password from the first line of stdin.")
@click.option("--no-password", is_flag=True, help="No password (the user signs in by single sign-on).")
def users_create(
    email: str,
    display_name: str,
    account_name: str | None,
    role: str,
    password_stdin: bool,
    no_password: bool,
) -> None:
    """Create the user EMAIL (unique whatever its case), with a password of at least 12
    characters that is not a common one, and make them a member of --account.

    User and membership are made together or not at all.
    """
    from monitor.domain import accounts, members, users
    from monitor.domain.context import Actor
    from monitor.domain.errors import DomainError

    settings = load_settings("database_url")
    password = None if no_password else _password(password_stdin)

    async def work(deps: Deps) -> int:
        account_id = None
        if account_name is not None:
            account_id = await accounts.find(deps, account_name)
            if account_id is None:
                raise click.ClickException(f"no account named {account_name!r} (monitor accounts list)")
        async with deps.pool.acquire() as conn, conn.transaction():
            user_id = await users.create(deps, {"email": email, "display_name": display_name}, password, conn)
            if account_id is not None:
                await members.add_user(conn, Actor(account_id, role="owner"), user_id, role)  # type: ignore[arg-type]
        return user_id

    try:
        user_id = asyncio.run(with_deps(settings, work))
    except DomainError as exc:
        raise click.ClickException(exc.message) from None
    except OSError as exc:
        raise unreachable(exc) from None
    where = f", {role} of account {account_name!r}" if account_name is not None else ""
    click.echo(f"created user {email!r} (id {user_id}{where})")


@users_group.command("list")
@JSON_OPTION
def users_list(as_json: bool) -> None:
    """List users: id, e-mail, name, created, whether they have a password, accounts and roles."""
    from monitor.domain import users

    settings = load_settings("database_url")
    try:
        found = asyncio.run(with_deps(settings, users.every))
    except OSError as exc:
        raise unreachable(exc) from None
    rows = [
        UserRow(
            u.id,
            u.email,
            u.display_name,
            u.created_at,
            u.has_password,
            ", ".join(f"{name} ({role})" for name, role in u.accounts),
        )
        for u in found
    ]
    columns = {"id": "ID", "email": "EMAIL", "display_name": "NAME", "created_at": "CREATED",
               "password": "PASSWORD", "accounts": "ACCOUNTS"}  # fmt: skip
    print_rows(rows, columns, as_json=as_json, none="no users (monitor users create EMAIL --account NAME)")


@accounts_group.command("members")
@click.argument("name")
@JSON_OPTION
def accounts_members(name: str, as_json: bool) -> None:
    """List the members of the account NAME: user id, e-mail, name, role, joined."""
    from monitor.domain import accounts, members
    from monitor.domain.context import Actor
    from monitor.domain.paging import MAX_LIMIT

    settings = load_settings("database_url")

    async def work(deps: Deps) -> list[MemberRow]:
        account_id = await accounts.find(deps, name)
        if account_id is None:
            raise click.ClickException(f"no account named {name!r} (monitor accounts list)")
        owner, cursor = Actor(account_id, role="owner"), None
        rows: list[MemberRow] = []
        while True:
            page = await members.listing(deps, owner, limit=MAX_LIMIT, cursor=cursor)
            rows.extend(MemberRow(**item) for item in page["items"])
            cursor = page["next_cursor"]
            if cursor is None:
                return rows

    try:
        found = asyncio.run(with_deps(settings, work))
    except OSError as exc:
        raise unreachable(exc) from None
    columns = {
        "id": "USER ID",
        "email": "EMAIL",
        "display_name": "NAME",
        "role": "ROLE",
        "created_at": "JOINED",
    }
    print_rows(
        found, columns, as_json=as_json, none=f"no members (monitor users create EMAIL --account {name})"
    )
