"""``monitor import PEER SOURCE``: another tool's configuration as our file format.

The converter (``monitor/ascode/importers/<peer>.py``) reads the source; this writes the
document (stdout, or ``-o FILE``), the values of its secret references beside it
(``FILE.secrets.env``, mode 0600; with stdout, only with ``--secrets-env PATH``), and the report
of what could not be carried over on stderr. Exit 0 even with a report: the document is good
as far as it goes, and the report says how far.
"""

from __future__ import annotations

import importlib
import os
import shlex
from pathlib import Path

import click

from monitor.ascode.dumping import dump
from monitor.ascode.importers import IMPORTERS, Imported, SourceError


def write_secrets(path: Path, secrets: dict[str, str]) -> None:
    """``secrets`` as VARIABLE=value lines (shell-quoted) in ``path``, made with mode 0600."""
    text = "".join(f"{name}={shlex.quote(value)}\n" for name, value in sorted(secrets.items()))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)


FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


@click.command("import")
@click.argument("peer", type=click.Choice(sorted(IMPORTERS)))
@click.argument("sources", nargs=-1, required=True, type=FILE)
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="write here (default stdout)"
)
@click.option(
    "--secrets-env",
    type=click.Path(dir_okay=False, path_type=Path),
    help="where the secrets' values go (default: OUTPUT.secrets.env)",
)
def import_command(
    peer: str, sources: tuple[Path, ...], output: Path | None, secrets_env: Path | None
) -> None:
    """Convert another tool's configuration (SOURCES: its files) into a file for `monitor apply`.

    PEER: gatus (config.yaml), uptimerobot (the JSON of its API's getMonitors and
    getAlertContacts, v2, or /monitors, /integrations and /user/alert-contacts, v3, the
    files together), healthchecks (the JSON of GET /api/v3/checks/), kuma (Uptime Kuma's
    SQLite database kuma.db, 1.23 or 2.x, read-only). What cannot be carried over is listed on
    stderr, one line each.
    """
    convert = importlib.import_module(IMPORTERS[peer]).convert
    try:
        imported: Imported = convert(list(sources))
    except SourceError as exc:
        raise click.ClickException(str(exc)) from None
    text = dump(imported.document)
    if output is None:
        click.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
    if imported.secrets:
        where = secrets_env or (output.with_name(output.name + ".secrets.env") if output else None)
        if where is None:
            names = ", ".join(sorted(imported.secrets))
            click.echo(f"secrets not written (set --secrets-env PATH): {names}", err=True)
        else:
            write_secrets(where, imported.secrets)
            click.echo(f"{len(imported.secrets)} secret(s) written to {where} (mode 0600)", err=True)
    for dropped in imported.report:
        click.echo(f"not carried over: {dropped.line()}", err=True)
    counts = ", ".join(f"{len(v)} {k}" for k, v in imported.document.items() if isinstance(v, dict))
    dropped_count = len(imported.report)
    click.echo(f"imported {counts or 'nothing'}; {dropped_count} setting(s) not carried over", err=True)
