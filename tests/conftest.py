"""Shared fixtures: the real services, real monitor processes, a target and a fake Telegram.

Services are the ones ``make test`` starts, given by ``MONITOR_DATABASE_URL`` and
``MONITOR_REDIS_URL``. Every factory cleans up what it made: processes are stopped by
PID (and their logs printed when the test failed), servers are closed, and tests that use
``db`` start from empty tables and an empty Redis database.

Processes are held to account at teardown: a process of ``procs`` or ``api_server`` that
exited non-zero, hung on its SIGTERM or logged a traceback fails the test (an error at its
teardown), unless the test said it breaks that process on purpose:
``procs.spawn(..., expect_exit=1)``, ``procs.start(..., allow_traceback="...")`` or
``proc.expect(...)`` (tests/support/procs.py). A SIGKILL the test sends itself counts as meant.

At the run's end every process's log is read once for every secret the helpers handed out
(passwords, keys, session ids, TOTP secrets, tokens: ``tests/support/leaks.py``); one found
fails the run, naming the file and the kind of secret, never the secret.

Skips are strict under ``make test`` (and wherever ``CI`` is set): a skipped test fails there,
since the Makefile installs what the suite needs, unless its reason is one no install can
change (``support.skips.skip_beyond_make``). Run by hand, a skip stays a skip.

Helpers (``wait_for``, the servers, ``ProcessFactory``) live in ``tests/support``; import
them with ``from support import ...``.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest
import redis.asyncio as aioredis

# `support` is importable as a top-level package whatever pytest's import mode (prepend adds
# this directory only while tests/ has no __init__.py; importlib never does).
if str(Path(__file__).parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).parent))

from support import (
    ApiClient,
    FakeChannels,
    FakeSmtp,
    FakeTelegram,
    MonitorProcess,
    ProcessFactory,
    TargetServer,
    ensure_account,
    insert_monitor,
    leaks,
    pg_cluster,
    process_env,
    redis_sentinel,
    reset,
    skips,
)
from support.pg_cluster import PgCluster
from support.redis_sentinel import RedisSentinels
from support.redis_server import RedisServer
from support.target import FlappingTarget

from monitor import db as monitor_db
from monitor.domain import keys as api_keys

_PHASES = pytest.StashKey[dict[str, pytest.TestReport]]()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    # Keep each phase's report on the item, so fixtures can tell at teardown whether the test failed.
    report: pytest.TestReport = yield
    skips.enforce(report)  # under `make test`, a skip the Makefile could have avoided fails
    item.stash.setdefault(_PHASES, {})[report.when] = report
    return report  # type: ignore[return-value]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # The whole run's log scan (tests/support/leaks.py): a secret any helper handed out, in the
    # log of any process of the run, fails the run, naming the file and the kind of secret.
    found = leaks.scan()
    if not found:
        return
    lines = "\n".join(f"  {where}" for where in found)
    message = f"secrets found in the logs of this run (the log scan of tests/support/leaks.py):\n{lines}"
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(message, red=True)
    else:
        print(message, file=sys.stderr)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _failed(request: pytest.FixtureRequest) -> bool:
    phases = request.node.stash.get(_PHASES, {})
    return any(r.failed for r in phases.values())


def _required_env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(
            f"{name} is not set: these tests need the real services. Run `make test`, or start them "
            f'with `bash scripts/services.sh up` and `eval "$(bash scripts/services.sh env test)"`.',
            pytrace=False,
        )
    return value


# -- services ----------------------------------------------------------------------------


@pytest.fixture(scope="session")
def database_url() -> str:
    return _required_env("MONITOR_DATABASE_URL")


@pytest.fixture(scope="session")
def redis_url() -> str:
    return _required_env("MONITOR_REDIS_URL")


@pytest.fixture(scope="session")
def migrated(database_url: str) -> str:
    """The test database with every migration applied (once per session); its URL."""
    asyncio.run(monitor_db.migrate(database_url))
    return database_url


@pytest.fixture
async def db(migrated: str, redis_url: str) -> AsyncIterator[asyncpg.Connection]:
    """A connection to the test database; tables and the test Redis database emptied first."""
    conn = await monitor_db.connect(migrated)
    try:
        await reset(conn, redis_url)
        yield conn
    finally:
        await conn.close()


@pytest.fixture
async def redis_client(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    """A Redis client on the test database (responses decoded to str)."""
    client = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        yield client
    finally:
        await client.aclose()


MonitorFactory = Callable[..., Awaitable[asyncpg.Record]]


@pytest.fixture
async def empty_database(database_url: str) -> AsyncIterator[str]:
    """The URL of a new, empty database on the test server (no migrations, no extension);
    dropped at teardown. For what must start from nothing: migrations, an installed wheel."""
    name = f"monitor_empty_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(database_url)
    try:
        await admin.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
        yield urlunsplit(urlsplit(database_url)._replace(path="/" + name))
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


@pytest.fixture
async def monitor_factory(db: asyncpg.Connection) -> AsyncIterator[MonitorFactory]:
    """``await monitor_factory(url=..., **columns)``: a monitor row written straight to the
    database (no API, no SSRF vetting); deleted again at teardown."""
    made: list[int] = []

    async def make(**fields: Any) -> asyncpg.Record:
        row = await insert_monitor(db, **fields)
        made.append(row["id"])
        return row

    yield make
    if made and not db.is_closed():
        await db.execute("DELETE FROM monitors WHERE id = ANY($1::bigint[])", made)


# -- local servers ------------------------------------------------------------------------


@pytest.fixture
async def target() -> AsyncIterator[TargetServer]:
    """An HTTP target on 127.0.0.1 (200, no delay); ``target.set(500)``, ``target.set(delay=1.5)``."""
    server = await TargetServer().start()
    try:
        yield server
    finally:
        await server.close()


@pytest.fixture
async def fake_channels() -> AsyncIterator[FakeChannels]:
    """Fakes of Slack, Discord, ntfy, PagerDuty and webhook receivers on one 127.0.0.1 server."""
    server = await FakeChannels().start()
    try:
        yield server
    finally:
        await server.close()


@pytest.fixture
async def fake_smtp() -> AsyncIterator[FakeSmtp]:
    """A real SMTP server (aiosmtpd) with STARTTLS, implicit TLS and AUTH, recording messages."""
    server = await FakeSmtp().start()
    try:
        yield server
    finally:
        await server.close()


@pytest.fixture
async def fake_telegram() -> AsyncIterator[FakeTelegram]:
    """A fake Bot API on 127.0.0.1; ``fake_telegram.env()`` points the alerter at it."""
    server = await FakeTelegram().start()
    try:
        yield server
    finally:
        await server.close()


# -- processes ----------------------------------------------------------------------------


@pytest.fixture
def base_env(migrated: str, redis_url: str) -> dict[str, str]:
    """The settings every test process gets (plus a free port each); a test may change it
    before starting processes, or pass ``env=`` to one process."""
    return process_env(migrated, redis_url)


@pytest.fixture
async def procs(
    request: pytest.FixtureRequest, tmp_path: Path, base_env: dict[str, str]
) -> AsyncIterator[ProcessFactory]:
    """``await procs.start("scheduler", env={...})`` starts ``python -m monitor scheduler`` and
    waits for ``scheduler.started``; ``procs.spawn(...)`` does not wait. Logs go to
    ``tmp_path/<name>-<n>.log``. At teardown every process still running gets SIGTERM (then
    SIGKILL), by PID, and all logs are printed if the test failed; then, if it passed, any
    process that exited non-zero, hung at stop or logged a traceback without the test saying
    it would (``expect_exit=``, ``allow_traceback=``; tests/support/procs.py) fails it."""
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    factory = ProcessFactory(log_dir, base_env)
    try:
        yield factory
    finally:
        await factory.stop_all()
        failed = _failed(request)
        if (failed or factory.problems()) and factory.processes:
            print(factory.report())
    if not failed:
        _check(factory)


def _check(factory: ProcessFactory) -> None:
    try:
        factory.check()
    except AssertionError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="module")
def api_server(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    migrated: str,
    redis_url: str,
) -> Iterator[MonitorProcess]:
    """One ``monitor api`` process shared by a test module (starting one per test is slow);
    held to account as ``procs`` holds its processes, at the module's end (an error there)."""
    factory = ProcessFactory(tmp_path_factory.mktemp("api-logs"), process_env(migrated, redis_url))
    failures_before = request.session.testsfailed
    try:
        yield factory.start_sync("api")
    finally:
        factory.stop_all_sync()
        failed = request.session.testsfailed > failures_before
        if failed or factory.problems():
            print(factory.report())
    if not failed:
        _check(factory)


@pytest.fixture
async def api_key(db: asyncpg.Connection) -> str:
    """A key of the "test" account (the account ``monitor_factory`` rows belong to)."""
    new = await api_keys.create_key(db, await ensure_account(db), "tests")
    leaks.secret("API key", new.key)
    return new.key


@pytest.fixture
async def api(api_server: MonitorProcess, api_key: str) -> AsyncIterator[ApiClient]:
    """A client of the module's api process, on empty tables, with the test account's key."""
    assert api_server.running, f"the api process died: {api_server.tail()}"
    async with ApiClient(api_server.base_url, key=api_key) as client:
        yield client


@pytest.fixture
async def api_client(api_key: str) -> AsyncIterator[Callable[[str], ApiClient]]:
    """``api_client(base_url)``: a client for any api process, with the test account's key."""
    clients: list[ApiClient] = []

    def make(base_url: str) -> ApiClient:
        client = ApiClient(base_url, key=api_key)
        clients.append(client)
        return client

    try:
        yield make
    finally:
        for client in clients:
            await client.close()


@pytest.fixture
async def private_redis(tmp_path: Path) -> AsyncIterator[RedisServer]:
    """A redis-server of the test's own, to stop and start (``stop()``, ``start()``)."""
    async with RedisServer(tmp_path / "redis") as server:
        yield server


@pytest.fixture
async def flapping() -> AsyncIterator[FlappingTarget]:
    """A target whose every path fails every other request until ``flapping`` is set False."""
    async with FlappingTarget() as server:
        yield server


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[PgCluster]:
    """A PostgreSQL primary and a streaming standby of the test's own (``promote()``); skips
    where they cannot run (no root, no PostgreSQL root: ``make test-tools`` builds it)."""
    why = pg_cluster.available()
    if why is not None:
        pytest.skip(f"no PostgreSQL pair of the test's own: {why}")
    made = PgCluster(tmp_path / "pg")
    try:
        yield await made.start()
    finally:
        await made.close()


@pytest.fixture
async def sentinels(tmp_path: Path) -> AsyncIterator[RedisSentinels]:
    """A Redis master, a replica and three sentinels of the test's own; skips without Debian's
    redis-server (``make test-tools`` installs it)."""
    why = redis_sentinel.available()
    if why is not None:
        pytest.skip(f"no Redis sentinels of the test's own: {why}")
    made = RedisSentinels(tmp_path / "redis")
    try:
        yield await made.start()
    finally:
        await made.close()
