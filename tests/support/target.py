"""A local HTTP server for monitors to check, whose answers the test changes at run time.

Every path answers; the status and delay are set for all paths (``set``) or for one path
(``set(path=...)``). Requests are counted when received and when completed, per path too,
so a test can tell which checks were in flight at a given moment.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from dataclasses import dataclass, field

from aiohttp import web


@dataclass
class TargetRequest:
    path: str
    method: str
    received_at: float  # time.time()
    status: int
    delay: float
    completed_at: float | None = None
    aborted: bool = False  # the client went away (or the server stopped) before the answer
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    @property
    def in_flight(self) -> bool:
        return self.completed_at is None and not self.aborted


@dataclass(frozen=True)
class Behaviour:
    status: int = 200
    delay: float = 0.0
    body: str = "ok"
    content_type: str = "text/plain"


class TargetServer:
    def __init__(self, *, host: str = "127.0.0.1", status: int = 200, delay: float = 0.0) -> None:
        self.host = host
        self.default = Behaviour(status, delay)
        self.by_path: dict[str, Behaviour] = {}
        self.requests: list[TargetRequest] = []
        self._runner: web.AppRunner | None = None
        self.port: int | None = None

    async def start(self) -> TargetServer:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        # Short: at teardown, requests still held by a delay are not worth waiting for.
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> TargetServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def url(self, path: str = "/") -> str:
        assert self.port is not None, "TargetServer not started"
        return f"http://{self.host}:{self.port}/{path.lstrip('/')}"

    def set(
        self,
        status: int | None = None,
        *,
        delay: float | None = None,
        body: str | None = None,
        content_type: str | None = None,
        path: str | None = None,
    ) -> None:
        """Change what the target answers from now on (for every path, or for ``path`` only)."""
        current = self.default if path is None else self.by_path.get(_norm(path), self.default)
        new = Behaviour(
            current.status if status is None else status,
            current.delay if delay is None else delay,
            current.body if body is None else body,
            current.content_type if content_type is None else content_type,
        )
        if path is None:
            self.default = new
        else:
            self.by_path[_norm(path)] = new

    # -- counting ----------------------------------------------------------------------

    def for_path(self, path: str) -> list[TargetRequest]:
        return [r for r in self.requests if r.path == _norm(path)]

    def received(self, path: str | None = None) -> int:
        return len(self.requests if path is None else self.for_path(path))

    def completed(self, path: str | None = None) -> int:
        items = self.requests if path is None else self.for_path(path)
        return sum(1 for r in items if r.completed_at is not None)

    def in_flight(self, path: str | None = None) -> list[TargetRequest]:
        items = self.requests if path is None else self.for_path(path)
        return [r for r in items if r.in_flight]

    # -- the server --------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.Response:
        path = _norm(request.path)
        behaviour = self.by_path.get(path, self.default)
        record = TargetRequest(
            path,
            request.method,
            time.time(),
            behaviour.status,
            behaviour.delay,
            headers=dict(request.headers),
            body=await request.read(),
        )
        self.requests.append(record)
        try:
            if behaviour.delay > 0:
                await asyncio.sleep(behaviour.delay)
        except asyncio.CancelledError:
            record.aborted = True
            raise
        record.completed_at = time.time()
        return web.Response(status=behaviour.status, text=behaviour.body, content_type=behaviour.content_type)


class FlappingTarget(TargetServer):
    """Every path answers 200, 500, 200... in turn while ``flapping``; 200 once steadied.
    ``counts``: requests per path."""

    def __init__(self) -> None:
        super().__init__()
        self.flapping = True
        self.counts: dict[str, int] = defaultdict(int)

    async def _handle(self, request: web.Request) -> web.Response:
        self.counts[request.path] += 1
        failing = self.flapping and self.counts[request.path] % 2 == 0
        return web.Response(status=500 if failing else 200, text="flap")


def _norm(path: str) -> str:
    return "/" + path.lstrip("/")
