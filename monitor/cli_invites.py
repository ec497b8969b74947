"""``monitor users invite`` and ``monitor users reset-password``: an invitation to an account
and a password reset, by e-mail through ``MONITOR_SMTP_*`` (``monitor.domain.invitations``
does the work). Without a mail server the link is printed instead, for the operator to hand
over: it is the only place a token is ever shown, and it is never logged.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import click

from monitor.cli_accounts import ROLES
from monitor.cli_support import load_settings, unreachable, with_deps

if TYPE_CHECKING:
    from monitor.config import Settings
    from monitor.domain.context import Deps
    from monitor.mailer import Mailer

NO_MAIL = "no mail server is set (MONITOR_SMTP_HOST); hand over this link, which works once:"
ROLE_CHOICE = click.Choice(ROLES)


def _base_url(settings: Settings) -> str:
    return settings.public_url or f"http://{settings.api_host}:{settings.api_port}"


def _run(settings: Settings, work: object) -> object:
    from monitor.domain.errors import DomainError

    try:
        return asyncio.run(with_deps(settings, work))  # type: ignore[arg-type]
    except DomainError as exc:
        raise click.ClickException(exc.message) from None
    except OSError as exc:
        raise unreachable(exc) from None


@click.command("invite")
@click.argument("email")
@click.option("--account", "account_name", required=True, help="The account to join (its name).")
@click.option("--role", type=ROLE_CHOICE, default="viewer", show_default=True, help="The role to join with.")
def users_invite(email: str, account_name: str, role: str) -> None:
    """Invite EMAIL to an account: a link that works once, for MONITOR_INVITATION_HOURS."""
    from monitor.domain import accounts, invitations
    from monitor.domain.context import Actor
    from monitor.domain.errors import DomainError
    from monitor.mailer import Mailer

    settings = load_settings("database_url")

    async def work(deps: Deps) -> invitations.Issued:
        account_id = await accounts.find(deps, account_name)
        if account_id is None:
            raise DomainError(404, "not_found", f"no account {account_name!r}")
        mailer = Mailer.of(settings)
        try:
            body = {"email": email, "role": role}
            return await invitations.invite(
                deps, Actor(account_id, role="owner"), body, base_url=_base_url(settings), mailer=mailer
            )
        finally:
            await _close(mailer)

    issued = _run(settings, work)
    assert isinstance(issued, invitations.Issued)
    answer = issued.answer
    click.echo(
        f"invited {answer['email']} to {account_name!r} as {answer['role']} (until {answer['expires_at']})"
    )
    if issued.link is not None:
        click.echo(f"{NO_MAIL}\n{issued.link}")
    else:
        click.echo("the link went by e-mail")


@click.command("reset-password")
@click.argument("email")
def users_reset_password(email: str) -> None:
    """Send EMAIL's user a link to choose a new password (once, within MONITOR_PASSWORD_RESET_MINUTES)."""
    from monitor.domain import invitations
    from monitor.domain.errors import DomainError
    from monitor.mailer import DeliveryError, Mailer

    settings = load_settings("database_url")

    async def work(deps: Deps) -> str | None:
        issued = await invitations.request_reset(
            deps, {"email": email}, base_url=_base_url(settings), with_link=True
        )
        if issued.letter is None:
            raise DomainError(404, "not_found", f"no user has the e-mail {email!r}")
        mailer = Mailer.of(settings)
        if mailer is None:
            return issued.link
        try:
            await mailer.send(issued.letter)
        except DeliveryError as exc:
            raise DomainError(503, "mail_failed", f"the e-mail could not be sent: {exc}") from None
        finally:
            await _close(mailer)
        return None

    shown = _run(settings, work)
    if isinstance(shown, str):
        click.echo(f"{NO_MAIL}\n{shown}")
    else:
        click.echo(f"a reset link went by e-mail to {email}")


async def _close(mailer: Mailer | None) -> None:
    if mailer is not None:
        await mailer.close()


COMMANDS = (users_invite, users_reset_password)
