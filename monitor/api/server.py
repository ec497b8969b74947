"""The API process as a lifecycle service: listen, then stop accepting and finish requests."""

from __future__ import annotations

from aiohttp import web

from monitor import logging as mlog
from monitor.api.app import create_app
from monitor.config import Settings

log = mlog.get(__name__)


class ApiServer:
    name = "api"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = create_app(self.settings)
        # aiohttp's own graceful stop: close the listener, let in-flight requests
        # finish within shutdown_timeout, then cancel them.
        self._runner = web.AppRunner(
            app, access_log=None, shutdown_timeout=self.settings.shutdown_timeout_seconds * 0.8
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.settings.api_host, self.settings.api_port)
        await site.start()
        log.info("api.listening", host=self.settings.api_host, port=self.settings.api_port)

    async def drain(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def abandoned(self) -> list[str]:
        return ["in-flight requests"] if self._runner is not None else []

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
