"""``monitor export-checks``: every check of a whole account (every monitor's), as CSV or NDJSON,
streamed to stdout or a file: the rows of ``GET /api/v1/monitors/{id}/checks?format=...`` with
the monitor's id and name in front (``domain/exports.py``, ``rawdata.py``), monitor by monitor.

A failure midway exits 1 naming the cursor to resume with (``--after``); the rows written
before it are whole.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import click

from monitor import rawdata
from monitor.cli_support import load_settings, unreachable, with_deps

if TYPE_CHECKING:
    from monitor.domain.context import Deps


def _time(value: str | None, name: str) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(
            "must be an RFC 3339 time, e.g. 2026-11-01T00:00:00Z", param_hint=name
        ) from None
    if parsed.tzinfo is None:
        raise click.BadParameter("must carry a time zone (e.g. Z)", param_hint=name)
    return parsed.astimezone(UTC)


@click.command("export-checks")
@click.option(
    "--account", "account_name", default=None, help="The account (its name); needed if there are several."
)
@click.option("--from", "start", default=None, help="Start of the range (RFC 3339, inclusive).")
@click.option("--to", "end", default=None, help="End of the range (RFC 3339, exclusive).")
@click.option("--format", "kind", type=click.Choice(rawdata.FORMATS), default="csv", show_default=True)
@click.option("--after", default=None, help="Resume after this row's cursor (its last column or field).")
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="write here (default stdout)"
)
def export_checks(
    account_name: str | None,
    start: str | None,
    end: str | None,
    kind: str,
    after: str | None,
    output: Path | None,
) -> None:
    """Write every check of an account's monitors (monitor by monitor, each oldest first)."""
    from monitor.domain import accounts, exports
    from monitor.domain.context import Actor
    from monitor.domain.errors import DomainError

    settings = load_settings("database_url")
    begin, finish = _time(start, "--from"), _time(end, "--to")
    encoder = rawdata.Encoder(kind, rawdata.ACCOUNT_CHECK_COLUMNS)  # type: ignore[arg-type]
    written: dict[str, Any] = {"rows": 0, "after": after}

    async def work(deps: Deps) -> None:
        if account_name is None:
            every = await accounts.every(deps)
            if len(every) != 1:
                raise click.ClickException(f"{len(every)} accounts: name one with --account NAME")
            account_id = every[0].id
        else:
            found = await accounts.find(deps, account_name)
            if found is None:
                raise click.ClickException(f"no account named {account_name!r}")
            account_id = found
        export = await exports.account_checks(
            deps, Actor(account_id, role="owner"), start=begin, end=finish, after=after
        )
        out: IO[bytes] = output.open("wb") if output else sys.stdout.buffer
        try:
            out.write(encoder.head())
            try:
                async for batch in export.batches():
                    out.write(encoder.rows(batch))
                    written["rows"] += len(batch)
                    written["after"] = batch[-1]["cursor"]
            except Exception as exc:
                out.write(encoder.cut("the export failed midway", written["after"]))
                raise click.ClickException(
                    f"export cut after {written['rows']} rows ({type(exc).__name__}); "
                    f"resume with --after {written['after']}"
                ) from None
        finally:
            out.flush()
            if output:
                out.close()

    try:
        asyncio.run(with_deps(settings, work))
    except DomainError as exc:
        raise click.ClickException(exc.message) from None
    except OSError as exc:
        raise unreachable(exc) from None
    click.echo(f"{written['rows']} checks written", err=True)
