"""Secrets at rest, with real processes: a dump of the database holds no credential in clear,
and keys rotate without losing one.

Monitor credentials go in through the API (and, for an installation older than the key, as
plaintext rows that ``monitor migrate`` seals); the scheduler checks a local target with
them. The database is then dumped (``pg_dump``, or every table copied out when no matching
``pg_dump`` runs here) and searched for each credential. ``monitor secrets rotate`` moves
every sealed value, channel configs included, to a new key, once; the scheduler then holds
only the new key and still sends the right ``Authorization``. A key that opens nothing stops
``rotate`` with nothing changed, and no process starts without a key.
"""

from __future__ import annotations

import asyncio
import base64
import io
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from support import ApiClient, ProcessFactory, TargetServer, wait_for
from support.alerts import run_monitor
from support.procs import TEST_SECRET_KEY

from monitor.secrets import MARK, MASK, SecretBox, SecretKeyError, generate_key, open_monitor_secrets

pytestmark = pytest.mark.timeout(120)

DEADLINE = 30.0
PASSWORD = "pw-at-rest-6c1f0e9b47d2"
API_KEY = "key-at-rest-93ab17c5e0f8"
LEGACY_TOKEN = "tok-legacy-2d8e4f61a0c7"
LEGACY_KEY = "key-legacy-b5a0c3e97d14"
CHANNEL_SECRET = "https://hooks.example.test/services/T000/B000/at-rest-4e7a"
BASIC = "Basic " + base64.b64encode(f"robot:{PASSWORD}".encode()).decode()
# One channel of every kind with secrets, created through the API: (kind, config, its secrets).
CHANNELS: tuple[tuple[str, dict[str, Any], tuple[str, ...]], ...] = (
    ("slack", {"url": "https://hooks.example.test/services/T1/B1/slack-at-rest-71c2"},
     ("slack-at-rest-71c2",)),
    ("discord", {"url": "https://discord.example.test/api/webhooks/1/discord-at-rest-5d90"},
     ("discord-at-rest-5d90",)),
    ("webhook", {"url": "https://in.example.test/hook-at-rest-0b3e", "secret": "whsec_" + base64.b64encode(
        b"webhook-secret-at-rest-f00d").decode()}, ("hook-at-rest-0b3e", "webhook-secret-at-rest-f00d")),
    ("ntfy", {"url": "https://ntfy.example.test/topic-at-rest-8a4c",
              "token": "tk_ntfyatrest3e71c9a0d5b2f4e6a8"},
     ("topic-at-rest-8a4c", "tk_ntfyatrest3e71c9a0d5b2f4e6a8")),
    ("email", {"host": "smtp.example.test", "username": "robot", "password": "smtp-at-rest-c4d1",
               "from_address": "monitor@example.test", "to": ["ops@example.test"]}, ("smtp-at-rest-c4d1",)),
    ("pagerduty", {"routing_key": "R0UT1NGKEYATREST0123456789abcdef"}, ("R0UT1NGKEYATREST0123456789abcdef",)),
)  # fmt: skip
SECRETS = (
    PASSWORD, API_KEY, LEGACY_TOKEN, LEGACY_KEY, CHANNEL_SECRET, BASIC.split()[1],
    *(secret for _, _, secrets in CHANNELS for secret in secrets),
)  # fmt: skip
TEST_BOX = SecretBox.from_setting(TEST_SECRET_KEY)
ROOTFS = Path(os.environ.get("MONITOR_ROOTFS", "/var/cache/monitor/rootfs-trixie-pg17"))


def credentialed(target: TargetServer, path: str) -> dict[str, Any]:
    """A monitor of ``path`` with basic auth and a secret header, checked every second."""
    return {
        "name": f"at rest {path}",
        "url": target.url(path),
        "interval_seconds": 1,
        "timeout_seconds": 1,
        "headers": {"X-Api-Key": API_KEY, "X-Env": "test"},
        "auth": {"type": "basic", "username": "robot", "password": PASSWORD},
    }


async def reached(target: TargetServer, path: str, **wanted: str) -> None:
    """Wait for a request to ``path`` carrying each header of ``wanted`` (names lower case)."""

    def seen() -> bool:
        return any(
            all(
                {k.lower(): v for k, v in r.headers.items()}.get(name) == value
                for name, value in wanted.items()
            )
            for r in target.for_path(path)
        )

    await wait_for(seen, timeout=DEADLINE, message=f"a check of {path} with its credentials")


async def stored_secrets(db: asyncpg.Connection) -> dict[int, Any]:
    rows = await db.fetch("SELECT monitor_id, secrets FROM monitor_secrets ORDER BY monitor_id")
    return {r["monitor_id"]: r["secrets"] for r in rows}


async def channel_with_sealed_value(db: asyncpg.Connection, box: SecretBox) -> int:
    """A channel whose config holds a sealed value (as the alert channels' secret fields do)."""
    account = await db.fetchval("SELECT id FROM accounts WHERE name = 'test'")
    config = {"chat_id": "-1001", "webhook_url": box.seal(CHANNEL_SECRET)}
    return int(
        await db.fetchval(
            "INSERT INTO channels (account_id, kind, name, config) VALUES ($1, 'telegram', 'sealed', $2) "
            "RETURNING id",
            account,
            config,
        )
    )


def pg_dump_argv(major: int, database_url: str) -> list[str] | None:
    """A ``pg_dump`` of the server's major version (pg_dump refuses a newer server): the host's,
    or the services root's under chroot (as root); None when there is neither."""
    tool = f"/usr/lib/postgresql/{major}/bin/pg_dump"
    if Path(tool).exists():
        return [tool, "-d", database_url]
    if (ROOTFS / tool.lstrip("/")).exists() and os.geteuid() == 0:
        return ["chroot", str(ROOTFS), "/usr/bin/env", "-i", "LANG=C.UTF-8", tool, "-d", database_url]
    return None


async def dump(database_url: str) -> tuple[str, str]:
    """The whole database as text, and how it was made: ``pg_dump`` when one runs here, else
    ``COPY ... TO STDOUT`` of every table (hypertable chunks included)."""
    conn = await asyncpg.connect(database_url)
    try:
        major = int(await conn.fetchval("SHOW server_version_num")) // 10_000
        argv = pg_dump_argv(major, database_url)
        if argv is not None:
            proc = await asyncio.create_subprocess_exec(
                *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
            )
            out, err = await asyncio.wait_for(proc.communicate(), 60)
            assert proc.returncode == 0, err.decode(errors="replace")
            return out.decode(errors="replace"), "pg_dump"
        tables = await conn.fetch(
            """SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema')
                 AND n.nspname NOT LIKE 'pg_toast%'"""
        )
        text = io.StringIO()
        for table in tables:
            data = io.BytesIO()
            await conn.copy_from_table(table["relname"], schema_name=table["nspname"], output=data)
            text.write(data.getvalue().decode(errors="replace"))
        return text.getvalue(), f"COPY of {len(tables)} tables"
    finally:
        await conn.close()


async def test_a_dump_of_a_run_holds_no_secret_in_clear(
    db: asyncpg.Connection,
    migrated: str,
    target: TargetServer,
    procs: ProcessFactory,
    api_client: Callable[[str], ApiClient],
    monitor_factory: Any,
) -> None:
    # What an installation from before the key holds: a credential row in clear.
    legacy = await monitor_factory(url=target.url("/legacy"), interval_seconds=1.0, timeout_seconds=1.0)
    await db.execute(
        "INSERT INTO monitor_secrets (monitor_id, secrets) VALUES ($1, $2)",
        legacy["id"],
        {"auth": {"type": "bearer", "token": LEGACY_TOKEN}, "headers": [["X-Legacy-Key", LEGACY_KEY]]},
    )
    code, out = await run_monitor({"MONITOR_DATABASE_URL": migrated}, "migrate")
    assert code == 0 and "2 monitor secret(s) stay in clear" in out and "monitor secrets rotate" in out, out
    code, out = await run_monitor(
        {"MONITOR_DATABASE_URL": migrated, "MONITOR_SECRET_KEY": TEST_SECRET_KEY}, "migrate"
    )
    assert code == 0 and "sealed 2 secret(s) stored in clear, of 1 monitor(s)" in out, out
    code, out = await run_monitor(
        {"MONITOR_DATABASE_URL": migrated, "MONITOR_SECRET_KEY": TEST_SECRET_KEY}, "migrate"
    )
    assert code == 0 and "sealed" not in out, out  # nothing left to seal

    await channel_with_sealed_value(db, TEST_BOX)
    api = api_client((await procs.start("api")).base_url)
    response = await api.post("/api/v1/monitors", json=credentialed(target, "/api"))
    assert response.status == 201 and PASSWORD not in response.text and API_KEY not in response.text, response
    assert response.json["auth"]["password"] == MASK

    for kind, config, _ in CHANNELS:
        made = await api.post(
            "/api/v1/channels", json={"kind": kind, "name": f"at rest {kind}", "config": config}
        )
        assert made.status == 201, made
        assert not [x for x in SECRETS if x in made.text], made  # masked in the answer
        # A test message: an outbox row and a stream entry that carry the channel.
        assert (await api.post(f"/api/v1/channels/{made.json['id']}/test")).status == 202

    await procs.start("scheduler")
    await reached(target, "/api", authorization=BASIC, **{"x-api-key": API_KEY})
    await reached(target, "/legacy", authorization=f"Bearer {LEGACY_TOKEN}", **{"x-legacy-key": LEGACY_KEY})
    await wait_for(
        lambda: db.fetchval("SELECT count(DISTINCT monitor_id) = 2 FROM checks WHERE ok"),
        timeout=DEADLINE,
        message="checks of both monitors written",
    )

    text, how = await dump(migrated)
    assert "robot" in text and MARK in text, f"the {how} misses the monitors' rows"
    leaked = [secret for secret in SECRETS if secret in text]
    assert not leaked, f"in clear in the {how}: {leaked}"


async def test_rotate_moves_every_secret_to_the_new_key_and_the_scheduler_follows(
    db: asyncpg.Connection,
    migrated: str,
    target: TargetServer,
    procs: ProcessFactory,
    api_client: Callable[[str], ApiClient],
) -> None:
    api_proc = await procs.start("api")
    monitor = await api_client(api_proc.base_url).create_monitor(
        paused=True, **credentialed(target, "/rotated")
    )
    channel = await channel_with_sealed_value(db, TEST_BOX)
    await api_proc.terminate()
    before = await stored_secrets(db)

    new = generate_key()
    env = {"MONITOR_DATABASE_URL": migrated, "MONITOR_SECRET_KEY": f"{new},{TEST_SECRET_KEY}"}
    code, out = await run_monitor(env, "secrets", "rotate")
    assert code == 0, out
    assert "3 re-sealed with the first key, 0 plaintext sealed, 0 already sealed" in out, out
    assert "(1 monitor, 1 channel and 0 two-factor row(s) written)" in out, out
    after = await stored_secrets(db)
    new_box = SecretBox([new])
    assert after != before
    assert open_monitor_secrets(new_box, after[monitor["id"]]) == open_monitor_secrets(
        TEST_BOX, before[monitor["id"]]
    )
    assert new_box.open(
        await db.fetchval("SELECT config ->> 'webhook_url' FROM channels WHERE id = $1", channel)
    ) == (CHANNEL_SECRET)
    with pytest.raises(SecretKeyError):
        open_monitor_secrets(TEST_BOX, after[monitor["id"]])  # the old key opens nothing now

    # Again, and with the new key alone: nothing left to do.
    for setting in (f"{new},{TEST_SECRET_KEY}", new):
        code, out = await run_monitor({**env, "MONITOR_SECRET_KEY": setting}, "secrets", "rotate")
        assert code == 0 and "0 re-sealed" in out and "3 already sealed" in out, out
        assert "(0 monitor, 0 channel and 0 two-factor row(s) written)" in out, out
    assert await stored_secrets(db) == after

    # The processes hold only the new key: the api keeps a masked secret, the scheduler sends it.
    only_new = {"MONITOR_SECRET_KEY": new}
    api = api_client((await procs.start("api", env=only_new)).base_url)
    auth = {"type": "basic", "username": "robot", "password": MASK}
    response = await api.patch(f"/api/v1/monitors/{monitor['id']}", json={"paused": False, "auth": auth})
    assert response.status == 200, response
    stored = open_monitor_secrets(new_box, (await stored_secrets(db))[monitor["id"]])
    assert stored is not None and stored["auth"]["password"] == PASSWORD
    scheduler = await procs.start("scheduler", env=only_new)
    await reached(target, "/rotated", authorization=BASIC, **{"x-api-key": API_KEY})
    assert not scheduler.events("monitor.unloadable")
    for proc in procs.processes:
        assert all(secret not in proc.log_text() for secret in SECRETS), proc.name


async def test_rotate_with_a_key_that_opens_nothing_changes_nothing(
    db: asyncpg.Connection, migrated: str, monitor_factory: Any
) -> None:
    # A legacy row first (it would be sealed), then one sealed with the test key.
    legacy = await monitor_factory(url="http://127.0.0.1:9/legacy")
    await db.execute(
        "INSERT INTO monitor_secrets (monitor_id, secrets) VALUES ($1, $2)",
        legacy["id"],
        {"auth": {"type": "bearer", "token": LEGACY_TOKEN}},
    )
    sealed = await monitor_factory(url="http://127.0.0.1:9/sealed")
    await db.execute(
        "INSERT INTO monitor_secrets (monitor_id, secrets) VALUES ($1, $2)",
        sealed["id"],
        {"auth": {"type": "bearer", "token": TEST_BOX.seal(PASSWORD)}},
    )
    before = await stored_secrets(db)

    code, out = await run_monitor(
        {"MONITOR_DATABASE_URL": migrated, "MONITOR_SECRET_KEY": generate_key()}, "secrets", "rotate"
    )
    assert code == 1, out
    assert f"monitor {sealed['id']}" in out and "MONITOR_SECRET_KEY" in out and "nothing changed" in out, out
    assert "Traceback" not in out and PASSWORD not in out, out
    code, out = await run_monitor({"MONITOR_DATABASE_URL": migrated}, "secrets", "rotate")
    assert code == 1 and "MONITOR_SECRET_KEY is required" in out and "generate-key" in out, out
    assert await stored_secrets(db) == before

    code, out = await run_monitor({}, "secrets", "generate-key")
    assert code == 0 and SecretBox.from_setting(out.strip()).key_count == 1, out


@pytest.mark.parametrize("name", ["api", "scheduler", "alerter"])
async def test_no_process_starts_without_a_key(name: str, procs: ProcessFactory) -> None:
    # A bad configuration on purpose: the process refuses to start, exit 1.
    proc = procs.spawn(name, env={"MONITOR_SECRET_KEY": None}, expect_exit=1)
    assert await proc.wait() == 1
    assert "MONITOR_SECRET_KEY is required but not set" in proc.log_text(), proc.tail()
    assert "monitor secrets generate-key" in proc.log_text()
    assert not proc.tracebacks()
