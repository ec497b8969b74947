"""Who is asking, and how often: Bearer-key or session-cookie authentication, per-key (and
per-person) rate limits, metrics.

A request with an ``Authorization`` header is judged by its key alone; one without is judged by
its session cookie (``api/sessions.py``: the CSRF rule, the account of ``X-Monitor-Account``),
if it has one. The routes of ``sessions.OPEN`` (signing in, invitations, resets) and of ``sso.OPEN``
(single sign-on) need neither.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Hashable

import structlog
from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Histogram

from monitor.api import sessions, sso
from monitor.api.context import DEPS, POOL, SETTINGS
from monitor.api.errors import ApiError
from monitor.domain import signin
from monitor.domain.context import Actor
from monitor.domain.keys import caller_for_key
from monitor.probes import new_registry

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

# Paths anyone may read: probes, metrics and the API description.
PUBLIC = frozenset({"/healthz", "/readyz", "/metrics", "/api/v1/openapi.json"})
ACCOUNT = "account_id"
KEY = "key_id"
ACTOR = "actor"  # a signed-in person's, made with the session
RATE = "rate_key"  # what the rate limit counts a session's requests by
ROLE = "role"


def actor(request: web.Request) -> Actor:
    """Who asks, for the domain's operations: the authenticated key, acting for its account with
    the key's role, or the signed-in person in the account they named, with their membership's
    role."""
    made = request.get(ACTOR)
    if isinstance(made, Actor):
        return made
    return Actor(int(request[ACCOUNT]), role=request[ROLE], key_id=request[KEY], address=request.remote)


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.path in PUBLIC or not request.path.startswith("/api/"):
        return await handler(request)
    if (request.method, request.path) in sso.OPEN:
        # Each login writes a row (monitor/domain/sso_signin.py): a bucket per client address.
        request[RATE] = ("address", request.remote)
        return await handler(request)
    if (request.method, request.path) in sessions.OPEN:
        return await handler(request)
    header = request.headers.get("Authorization", "")
    if not header:
        session = await sessions.authenticate(request)
        if session is not None:
            return await _as_person(request, handler, session)
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise ApiError(
            401,
            "unauthorized",
            "send an API key as 'Authorization: Bearer <key>', or sign in (POST /api/v1/session)",
        )
    found = await caller_for_key(request.app[POOL], key.strip())
    if found is None:
        raise ApiError(401, "unauthorized", "the API key is unknown or revoked")
    request[ACCOUNT], request[KEY], request[ROLE] = found.account_id, found.key_id, found.role
    with structlog.contextvars.bound_contextvars(account_id=found.account_id):
        return await handler(request)


async def _as_person(request: web.Request, handler: Handler, session: signin.Session) -> web.StreamResponse:
    request[RATE] = ("user", session.user_id)
    if sessions.is_user_path(request.path):
        with structlog.contextvars.bound_contextvars(user_id=session.user_id):
            return await handler(request)
    made = await signin.actor_for(
        request.app[DEPS], session, request.headers.get(signin.ACCOUNT_HEADER), sessions.client(request)
    )
    request[ACCOUNT], request[KEY], request[ROLE], request[ACTOR] = made.account_id, None, made.role, made
    with structlog.contextvars.bound_contextvars(account_id=made.account_id, user_id=session.user_id):
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
    key_id = request.get(KEY) or request.get(RATE)
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
