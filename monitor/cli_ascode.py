"""``monitor apply``, ``monitor export`` and ``monitor config schema``: configuration as code
from the command line (docs/config-as-code.md). They act as the owner of the account named
(``--account``; the only account when there is one), on the database directly, as the other
admin commands do; ``${VAR}`` and ``file:`` references are read from this process's
environment and files."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import click

from monitor.cli_import import write_secrets
from monitor.cli_support import load_settings, unreachable, with_deps

ACCOUNT = click.option(
    "--account", "account_name", default=None, help="The account's name (default: the only account)."
)


async def _account(deps: Any, name: str | None) -> int:
    from monitor.domain import accounts

    if name is not None:
        found = await accounts.find(deps, name)
        if found is None:
            raise click.ClickException(f"no account named {name!r} (monitor accounts list)")
        return int(found)
    rows = await deps.pool.fetch("SELECT id, name FROM accounts ORDER BY id LIMIT 2")
    if len(rows) != 1:
        what = "no account yet (monitor accounts create NAME)" if not rows else "several accounts"
        raise click.ClickException(f"{what}: name one with --account NAME")
    return int(rows[0]["id"])


def _run(settings: Any, work: Any) -> Any:
    try:
        return asyncio.run(with_deps(settings, work))
    except OSError as exc:
        raise unreachable(exc) from None


@click.command("apply")
@click.option(
    "-f",
    "--file",
    "paths",
    multiple=True,
    required=True,
    type=click.Path(exists=True, path_type=Path),
    help="A file, or a directory of *.yaml, *.yml and *.json files (repeatable).",
)
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@click.option("--prune", is_flag=True, help="Delete managed objects the files no longer name.")
@click.option(
    "--adopt",
    is_flag=True,
    help="Take objects made by hand under management where a key of the files is the one "
    "`monitor export` gives them (instead of making a second one).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@ACCOUNT
def apply_command(
    paths: tuple[Path, ...],
    dry_run: bool,
    prune: bool,
    adopt: bool,
    as_json: bool,
    account_name: str | None,
) -> None:
    """Make the account what the files say: judge them whole, print the plan, apply it in one
    transaction (all or nothing). Exit 1 with every problem at its file:line:column, and
    nothing applied, when the files cannot be applied."""
    from monitor.ascode import applying
    from monitor.ascode.reading import Invalid, Secrets, file_texts, local_file, read_texts
    from monitor.domain.context import Actor
    from monitor.domain.errors import DomainError

    settings = load_settings("database_url", "secret_key")

    async def work(deps: Any) -> Any:
        account_id = await _account(deps, account_name)
        doc = read_texts(file_texts(paths), Secrets(os.environ, local_file))
        owner = Actor(account_id, role="owner")
        return await applying.apply(deps, owner, doc, prune=prune, dry_run=dry_run, adopt=adopt)

    try:
        plan = _run(settings, work)
    except Invalid as exc:
        for problem in exc.problems:
            click.echo(f"error: {problem}", err=True)
        raise click.ClickException(f"{len(exc.problems)} problem(s); nothing applied") from None
    except DomainError as exc:
        raise click.ClickException(exc.message) from None
    if as_json:
        click.echo(json.dumps(plan.as_json(), indent=2))
    else:
        click.echo(plan.text(), nl=False)
        if dry_run and not plan.empty:
            click.echo("(dry run: nothing applied)")


@click.command("export")
@ACCOUNT
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write here (default stdout)."
)
@click.option(
    "--with-secrets-as-env",
    "secrets_env",
    is_flag=True,
    help="Also write the secrets' values, as VARIABLE=value lines, to OUTPUT.secrets.env "
    "(mode 0600; ./monitor.secrets.env with stdout).",
)
def export_command(account_name: str | None, output: Path | None, secrets_env: bool) -> None:
    """Write the account's monitors, channels, maintenance windows and status pages in the
    format `monitor apply` reads, secrets as ${VARIABLE} references."""
    from monitor.ascode import exporting, state
    from monitor.ascode.dumping import dump

    settings = load_settings("database_url", "secret_key")

    async def work(deps: Any) -> Any:
        account_id = await _account(deps, account_name)
        async with deps.pool.acquire() as conn:
            account = await state.read(conn, deps, account_id, key_all=True)
        return exporting.export(account)

    exported = _run(settings, work)
    text = dump(exported.document)
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text, encoding="utf-8")
    if secrets_env and exported.secrets:
        where = output.with_name(output.name + ".secrets.env") if output else Path("monitor.secrets.env")
        write_secrets(where, exported.secrets)
        click.echo(f"{len(exported.secrets)} secret(s) written to {where} (mode 0600)", err=True)
    elif exported.secrets:
        click.echo(
            f"{len(exported.secrets)} secret(s) written as references (--with-secrets-as-env for values)",
            err=True,
        )


@click.group("config")
def config_group() -> None:
    """The file format of `monitor apply`."""


@config_group.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of the file format (for editors: yaml-language-server)."""
    from monitor.ascode.schema import document_schema

    click.echo(json.dumps(document_schema(), indent=2))


COMMANDS = (apply_command, export_command, config_group)
