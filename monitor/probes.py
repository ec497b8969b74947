"""The small HTTP listener of the scheduler and the alerter: health, readiness, metrics.

``/healthz`` answers while the process runs; ``/readyz`` asks the service whether
its dependencies answer; ``/metrics`` is the service's Prometheus registry.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Info,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)

from monitor import __version__

ReadyCheck = Callable[[], Awaitable[dict[str, bool]]]


def new_registry() -> CollectorRegistry:
    """A process's registry: its own series, plus the process's (``process_*``: CPU, memory,
    open files, start time), the Python build's (``python_info``) and ours
    (``monitor_build_info{version}``), so a dashboard can tell what runs where."""
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    Info("monitor_build", "The monitor version this process runs", registry=registry).info(
        {"version": __version__}
    )
    return registry


def metrics_response(registry: CollectorRegistry) -> web.Response:
    response = web.Response(body=generate_latest(registry))
    response.headers["Content-Type"] = CONTENT_TYPE_LATEST
    return response


def probe_app(registry: CollectorRegistry, ready: ReadyCheck) -> web.Application:
    async def healthz(_request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def readyz(_request: web.Request) -> web.Response:
        checks = await ready()
        ok = all(checks.values())
        body = {
            "status": "ok" if ok else "unavailable",
            **{k: "up" if v else "down" for k, v in checks.items()},
        }
        return web.json_response(body, status=200 if ok else 503)

    async def metrics(_request: web.Request) -> web.Response:
        return metrics_response(registry)

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    return app


async def start(host: str, port: int, registry: CollectorRegistry, ready: ReadyCheck) -> web.AppRunner | None:
    if port == 0:
        return None
    runner = web.AppRunner(probe_app(registry, ready), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner
