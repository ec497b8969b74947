"""``monitor accounts`` and ``monitor keys``, run as an operator runs them: the real command in
a subprocess, against the test database."""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass
from typing import Any

import asyncpg
import pytest
from support import clean_environ

from monitor.domain import accounts
from monitor.domain import keys as api_keys

TRACEBACK = "Traceback (most recent call last)"
RUN_TIMEOUT = 30.0


@dataclass
class Run:
    code: int
    out: str
    err: str

    def __repr__(self) -> str:
        return f"<exit {self.code}\nstdout: {self.out}\nstderr: {self.err}>"


@pytest.fixture
def cli(db: asyncpg.Connection, migrated: str) -> Any:
    """``await cli("accounts", "list")``: ``python -m monitor ...`` on emptied tables."""

    async def run(*argv: str) -> Run:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "monitor", *argv,
            env=clean_environ() | {"MONITOR_DATABASE_URL": migrated},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(proc.communicate(), RUN_TIMEOUT)
        assert proc.returncode is not None
        return Run(proc.returncode, out.decode(), err.decode())

    return run


BAD_NAMES = [
    ("empty", "", "must contain at least one visible character"),
    ("spaces only", "   ", "must contain at least one visible character"),
    ("invisible only", "\u200b\u2060", "must contain at least one visible character"),
    ("101 characters", "a" * 101, "at most 100 characters (101 given)"),
    ("a newline", "ops\nroot", "may not contain control characters (found U+000A)"),
    ("a bidi override", "ops\u202e", "may not contain bidi-override characters (found U+202E)"),
]


@pytest.mark.parametrize(("name", "says"), [c[1:] for c in BAD_NAMES], ids=[c[0] for c in BAD_NAMES])
async def test_a_bad_account_name_is_refused_clearly(
    cli: Any, db: asyncpg.Connection, name: str, says: str
) -> None:
    run = await cli("accounts", "create", name)
    assert run.code == 1, run
    assert run.err.startswith("Error: an account name ") and says in run.err, run
    assert TRACEBACK not in run.err + run.out
    assert await db.fetchval("SELECT count(*) FROM accounts") == 0


async def test_the_longest_account_name_is_taken(cli: Any) -> None:
    run = await cli("accounts", "create", "a" * 100)
    assert run.code == 0, run
    again = await cli("accounts", "create", "a" * 100)
    assert again.code == 1 and "exists already" in again.err and TRACEBACK not in again.err, again


async def test_accounts_and_keys_are_listed_and_a_key_revoked(
    cli: Any, db: asyncpg.Connection, monitor_factory: Any
) -> None:
    assert (await cli("accounts", "list")).out.startswith("no accounts")
    assert json.loads((await cli("keys", "list", "--json")).out) == []
    for name in ("ops", "web team"):
        assert (await cli("accounts", "create", name)).code == 0
    made = await cli("keys", "create", "--account", "ops", "--name", "laptop")
    assert made.code == 0, made
    key = made.out.strip()
    assert (await cli("keys", "create", "--account", "web team")).code == 0
    await monitor_factory(url="https://example.com/", account_id=await accounts.account_id_by_name(db, "ops"))

    listed = json.loads((await cli("accounts", "list", "--json")).out)
    assert [(a["name"], a["monitors"], a["active_keys"]) for a in listed] == [
        ("ops", 1, 1),
        ("web team", 0, 1),
    ]
    assert all(a["created_at"].endswith("Z") for a in listed)
    table = (await cli("accounts", "list")).out.splitlines()
    assert table[0].split() == ["ID", "NAME", "CREATED", "MONITORS", "ACTIVE", "KEYS"]
    assert "web team" in table[2]

    keys = json.loads((await cli("keys", "list", "--json")).out)
    assert [(k["account"], k["name"]) for k in keys] == [("ops", "laptop"), ("web team", "")]
    laptop = keys[0]
    assert set(laptop) == {
        "id",
        "account",
        "name",
        "prefix",
        "role",
        "created_at",
        "last_used_at",
        "revoked_at",
    }
    assert key.startswith(laptop["prefix"] + "_") and laptop["revoked_at"] is None
    assert key not in (await cli("keys", "list")).out + json.dumps(keys)  # only the hash is stored
    only_ops = json.loads((await cli("keys", "list", "--account", "ops", "--json")).out)
    assert [k["id"] for k in only_ops] == [laptop["id"]]
    assert await api_keys.account_for_key(db, key) is not None

    revoked = await cli("keys", "revoke", str(laptop["id"]))
    assert revoked.code == 0, revoked
    assert (
        revoked.out.strip() == f"revoked key {laptop['id']} ({laptop['prefix']}, 'laptop' of account 'ops')"
    )
    assert await api_keys.account_for_key(db, key) is None
    after = json.loads((await cli("keys", "list", "--account", "ops", "--json")).out)
    assert after[0]["revoked_at"] is not None
    again = await cli("keys", "revoke", str(laptop["id"]))
    assert again.code == 0 and "was revoked already" in again.out, again
    assert json.loads((await cli("keys", "list", "--account", "ops", "--json")).out) == after
    table = (await cli("keys", "list")).out.splitlines()
    assert table[0].split() == [
        "ID",
        "ACCOUNT",
        "NAME",
        "PREFIX",
        "ROLE",
        "CREATED",
        "LAST",
        "USED",
        "REVOKED",
    ]
    assert table[1].split()[-1].endswith("Z") and table[2].split()[-1] == "-"


@pytest.mark.parametrize(
    ("argv", "code", "says"),
    [
        (("keys", "revoke", "999"), 1, "no key with id 999"),
        (("keys", "revoke", "0"), 2, "Invalid value"),
        (("keys", "revoke", "abc"), 2, "Invalid value"),
        (("keys", "revoke", str(2**63)), 2, "Invalid value"),
        (("keys", "list", "--account", "nobody"), 1, "no account named 'nobody'"),
    ],
)
async def test_a_key_or_account_that_is_not_there(
    cli: Any, argv: tuple[str, ...], code: int, says: str
) -> None:
    run = await cli(*argv)
    assert run.code == code and says in run.err, run
    assert TRACEBACK not in run.err


async def test_an_accounts_time_zone_is_set_and_a_bad_one_refused(cli: Any, db: asyncpg.Connection) -> None:
    assert (await cli("accounts", "create", "zoned")).code == 0
    assert await db.fetchval("SELECT timezone FROM accounts WHERE name = 'zoned'") == "UTC"  # the default
    run = await cli("accounts", "timezone", "zoned", "Europe/Berlin")
    assert run.code == 0 and "Europe/Berlin" in run.out, run
    assert await db.fetchval("SELECT timezone FROM accounts WHERE name = 'zoned'") == "Europe/Berlin"
    for argv, says in [(("zoned", "Mars/Olympus"), "timezone: unknown time zone 'Mars/Olympus'"),
                       (("nobody", "UTC"), "no account named 'nobody'")]:  # fmt: skip
        refused = await cli("accounts", "timezone", *argv)
        assert refused.code == 1 and says in refused.err and TRACEBACK not in refused.err, refused
    assert await db.fetchval("SELECT timezone FROM accounts WHERE name = 'zoned'") == "Europe/Berlin"
