"""The api's aiohttp app run on the test's own event loop, for tests that look inside it.

A ``monitor api`` process (the ``api_server`` fixture) is the real thing from outside; a test
that must read the app's own state (how many times the status desk built a page, say) or give
it settings of its own runs ``create_app`` here instead: same app, same middlewares, on a free
loopback port, started in about 20 ms and closed (pool, caches) when the test ends.

    from support.inprocess import InProcessApi, inprocess_api_fixture  # noqa: F401

    async def test_x(inprocess_api: InProcessFactory) -> None:
        served = await inprocess_api(MONITOR_STATUS_CACHE_SECONDS="2")
        served.app[...]  # the running app; served.base_url to send requests to

``inprocess_clients`` (import ``inprocess_clients_fixture``) is one such app with the default
settings and clients of it for two accounts and for an anonymous visitor.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import asyncpg
import pytest
from aiohttp import web

from monitor import config
from monitor.api.app import create_app
from monitor.domain import keys as api_keys

from .api import ApiClient
from .db import ensure_account


@dataclass(frozen=True)
class InProcessApi:
    app: web.Application
    base_url: str
    settings: config.Settings


async def start(env: dict[str, str]) -> tuple[InProcessApi, web.AppRunner]:
    """The app built from ``env`` (``MONITOR_*`` variables, as the process reads them),
    listening on 127.0.0.1 on a free port; clean it up with ``runner.cleanup()``."""
    settings = config.load(env)
    app = create_app(settings)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    return InProcessApi(app, f"http://{host}:{port}", settings), runner


InProcessFactory = Callable[..., Awaitable[InProcessApi]]


@pytest.fixture(name="inprocess_api")
async def inprocess_api_fixture(base_env: dict[str, str]) -> AsyncIterator[InProcessFactory]:
    """``await inprocess_api(MONITOR_X="..")``: an app with the test processes' settings plus
    these; each one closed at teardown."""
    runners: list[web.AppRunner] = []

    async def make(**overrides: str) -> InProcessApi:
        served, runner = await start({**base_env, **overrides})
        runners.append(runner)
        return served

    try:
        yield make
    finally:
        for runner in reversed(runners):
            await runner.cleanup()


@dataclass(frozen=True)
class Clients:
    served: InProcessApi
    api: ApiClient  # the "test" account's key (the account ``insert_monitor`` rows belong to)
    other: ApiClient  # the "other" account's key
    public: ApiClient  # no key: a visitor


@pytest.fixture(name="inprocess_clients")
async def inprocess_clients_fixture(
    db: asyncpg.Connection, inprocess_api: InProcessFactory
) -> AsyncIterator[Clients]:
    """An in-process api with the default settings, on empty tables, and its clients."""
    served = await inprocess_api()
    mine = await api_keys.create_key(db, await ensure_account(db), "tests")
    theirs = await api_keys.create_key(db, await ensure_account(db, "other"), "other")
    async with (
        ApiClient(served.base_url, key=mine.key) as api,
        ApiClient(served.base_url, key=theirs.key) as other,
        ApiClient(served.base_url) as public,
    ):
        yield Clients(served, api, other, public)
