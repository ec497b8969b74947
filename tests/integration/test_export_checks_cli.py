"""``monitor export-checks``: a whole account's checks, every monitor's, with its id and name, as
CSV or NDJSON, to stdout or a file; resumable with ``--after`` (rows of two monitors at the same
instant neither repeat nor go missing); another account's rows never in it."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
from support import clean_environ, ensure_account, insert_monitor
from support.check_rows import add_check

T0 = datetime(2026, 11, 1, tzinfo=UTC)


async def run(migrated: str, *argv: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "monitor", "export-checks", *argv,
        env=clean_environ() | {"MONITOR_DATABASE_URL": migrated},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_an_accounts_checks_resume_and_stay_its_own(
    db: asyncpg.Connection, migrated: str, monitor_factory: Any, tmp_path: Path
) -> None:
    a = (await monitor_factory(name="A", url="https://a.example/"))["id"]
    b = (await monitor_factory(name="B, with a comma", url="https://b.example/"))["id"]
    for i in range(3):  # the same instants for both monitors
        await add_check(db, a, T0 + timedelta(seconds=i))
        await add_check(db, b, T0 + timedelta(seconds=i), ok=False, error="down")
    stranger = await ensure_account(db, "stranger")
    c = (await insert_monitor(db, url="https://c.example/", account_id=stranger))["id"]
    await add_check(db, c, T0)

    code, out, err = await run(migrated, "--account", "test", "--format", "ndjson")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [(r["monitor_id"], r["time"]) for r in rows] == [
        (m, f"2026-11-01T00:00:0{i}Z") for m in (a, b) for i in range(3)
    ]
    assert "6 checks written" in err
    for k, row in enumerate(rows):
        code, rest, err = await run(
            migrated, "--account", "test", "--format", "ndjson", "--after", row["cursor"]
        )
        assert code == 0, err
        assert [json.loads(line) for line in rest.splitlines()] == rows[k + 1 :]

    target = tmp_path / "checks.csv"
    code, out, err = await run(
        migrated, "--account", "test", "--from", "2026-11-01T00:00:01Z", "--to", "2026-11-01T00:00:02Z",
        "-o", str(target),
    )  # fmt: skip
    assert code == 0 and out == "", err
    table = list(csv.DictReader(io.StringIO(target.read_text(), newline="")))
    assert [(r["monitor_name"], r["ok"], r["error"]) for r in table] == [
        ("A", "true", ""),
        ("B, with a comma", "false", "down"),
    ]


async def test_bad_input_is_a_clear_error(db: asyncpg.Connection, migrated: str) -> None:
    await ensure_account(db)
    await ensure_account(db, "stranger")
    for argv, says in (
        ((), "2 accounts: name one with --account NAME"),
        (("--account", "nobody"), "no account named 'nobody'"),
        (("--account", "test", "--from", "yesterday"), "--from"),
        (("--account", "test", "--after", "nonsense"), "after: not a cursor this export issued"),
        (("--account", "test", "--format", "xml"), "--format"),
    ):
        code, _, err = await run(migrated, *argv)
        assert code != 0 and says in err and "Traceback" not in err, (argv, err)
