"""``monitor users create|list`` and ``monitor accounts members``, as the operator runs them."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import asyncpg
import pytest
from support import clean_environ
from support.db import ensure_account

from monitor import cli_accounts
from monitor.domain.context import ROLES

RUN_TIMEOUT = 30
PASSWORD = "tangerine-walrus-velvet"


@pytest.fixture
def cli(db: asyncpg.Connection, migrated: str) -> Any:
    """``await cli("users", "list", stdin=...)``: (exit code, stdout, stderr) on emptied tables."""

    async def run(*argv: str, stdin: str = "") -> tuple[int, str, str]:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "monitor", *argv,
            env=clean_environ() | {"MONITOR_DATABASE_URL": migrated},
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(proc.communicate(stdin.encode()), RUN_TIMEOUT)
        assert proc.returncode is not None
        return proc.returncode, out.decode(), err.decode()

    return run


def test_the_cli_offers_the_domains_roles() -> None:
    assert set(cli_accounts.ROLES) == set(ROLES)


async def test_the_first_owner_is_made_from_the_command_line(cli: Any, db: asyncpg.Connection) -> None:
    await ensure_account(db, "acme")
    code, out, err = await cli("users", "create", "Ada@Example.com", "--name", "Ada", "--account", "acme",
                               "--password-stdin", stdin=PASSWORD + "\n")  # fmt: skip
    assert code == 0, err
    assert "created user 'Ada@Example.com'" in out and "owner of account 'acme'" in out
    assert PASSWORD not in out + err
    code, out, _ = await cli("users", "list", "--json")
    listed = json.loads(out)
    assert [(u["email"], u["password"], u["accounts"]) for u in listed] == [
        ("Ada@Example.com", True, "acme (owner)")
    ]
    code, out, _ = await cli("accounts", "members", "acme")
    assert code == 0 and "Ada@Example.com" in out and "owner" in out
    # The same address in another case is the same user; a weak password names the rule.
    code, _, err = await cli("users", "create", "ada@example.COM", "--password-stdin", stdin=PASSWORD + "\n")
    assert code == 1 and "exists already" in err
    code, _, err = await cli("users", "create", "bob@example.com", "--password-stdin", stdin="short\n")
    assert code == 1 and "at least 12 characters" in err and "Traceback" not in err
    code, _, err = await cli("users", "create", "bob@example.com", "--account", "nope", "--no-password")
    assert code == 1 and "no account named 'nope'" in err
    assert await db.fetchval("SELECT count(*) FROM users") == 1  # nothing half-made


async def test_a_read_only_key_from_the_command_line(cli: Any, db: asyncpg.Connection) -> None:
    await ensure_account(db, "acme")
    code, out, err = await cli("keys", "create", "--account", "acme", "--role", "viewer")
    assert code == 0, err
    assert await db.fetchval("SELECT role FROM api_keys") == "viewer"
    code, out, _ = await cli("keys", "list")
    assert "viewer" in out
