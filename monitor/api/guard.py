"""Who is asking, and how often: Bearer-key authentication, per-key rate limits, metrics."""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Hashable

import structlog
from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Histogram

from monitor.api.context import POOL, SETTINGS
from monitor.api.errors import ApiError
from monitor.domain.context import Actor
from monitor.domain.keys import caller_for_key
from monitor.probes import new_registry

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

# Paths anyone may read: probes, metrics and the API description.
PUBLIC = frozenset({"/healthz", "/readyz", "/metrics", "/api/v1/openapi.json"})
ACCOUNT = "account_id"
KEY = "key_id"
ROLE = "role"


def actor(request: web.Request) -> Actor:
    """Who asks, for the domain's operations: the authenticated key, acting for its account with
    the key's role."""
    return Actor(int(request[ACCOUNT]), role=request[ROLE], key_id=request[KEY], address=request.remote)


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.path in PUBLIC or not request.path.startswith("/api/"):
        return await handler(request)
    header = request.headers.get("Authorization", "")
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise ApiError(401, "unauthorized", "send an API key as 'Authorization: Bearer <key>'")
    found = await caller_for_key(request.app[POOL], key.strip())
    if found is None:
        raise ApiError(401, "unauthorized", "the API key is unknown or revoked")
    request[ACCOUNT], request[KEY], request[ROLE] = found.account_id, found.key_id, found.role
    with structlog.contextvars.bound_contextvars(account_id=found.account_id):
        return await handler(request)


class TokenBuckets:
    """A token bucket per API key (or other key: a ping token): ``rate`` requests a second,
    bursts up to ``burst``."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._buckets: dict[Hashable, tuple[float, float]] = {}

    def take(self, key_id: Hashable) -> float:
        """0 if the request may go now, else the seconds until it may."""
        now = self._clock()
        tokens, last = self._buckets.get(key_id, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - last) * self.rate)
        if tokens >= 1.0:
            self._buckets[key_id] = (tokens - 1.0, now)
            return 0.0
        self._buckets[key_id] = (tokens, now)
        return (1.0 - tokens) / self.rate


BUCKETS = web.AppKey("buckets", TokenBuckets)


@web.middleware
async def rate_limit_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    key_id = request.get(KEY)
    if key_id is not None:
        wait = request.app[BUCKETS].take(key_id)
        if wait > 0:
            raise ApiError(
                429,
                "rate_limited",
                f"more than {request.app[SETTINGS].api_rate_per_second:g} requests a second with this key",
                headers={"Retry-After": str(max(1, math.ceil(wait)))},
            )
    return await handler(request)


class ApiMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or new_registry()
        self.requests = Counter(
            "monitor_api_requests",
            "API requests by route, method and status",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "monitor_api_request_duration_seconds", "API request latency by route", ["route"],
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
            registry=self.registry,
        )  # fmt: skip


METRICS = web.AppKey("metrics", ApiMetrics)


@web.middleware
async def metrics_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    started = time.perf_counter()
    status = 500
    try:
        response = await handler(request)
        status = response.status
        return response
    except web.HTTPException as exc:
        status = exc.status
        raise
    finally:
        info = request.match_info
        route = info.route.resource.canonical if info.route.resource is not None else "unmatched"
        metrics = request.app[METRICS]
        metrics.requests.labels(route, request.method, str(status)).inc()
        metrics.latency.labels(route).observe(time.perf_counter() - started)
