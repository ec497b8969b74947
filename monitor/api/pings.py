"""``/ping/<token>`` (and ``/start``, ``/fail``): where a heartbeat monitor's job reports in.

Public: the token is the credential (``checks/heartbeat.py``), so the route needs no API key and
says nothing about a token it does not know: a malformed, unknown, deleted or other type's token
all get the same 404 with the same body, after the same work (a lookup, cached either way).

Cheap, because a fleet of cron jobs can all fire on the same minute: a token's monitor is looked
up once and kept for ``CACHE_SECONDS`` (an unknown token too, in a bounded cache, so a flood of
made-up tokens costs one query each, once), the rate limit is a token bucket per token in
memory, and a ping is one INSERT into ``pings`` with no other query. Measured with
``bench/pings.py``: see bench/README.md.

A ping is acknowledged (200) only once its row is committed: a 503 tells the job to retry (curl
``--retry``), and no ping that was answered 200 is lost. The scheduler turns the row into a
result (``scheduler/heartbeat.py``).
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime

from aiohttp import web

from monitor import logging as mlog
from monitor.api.context import POOL
from monitor.api.errors import ApiError
from monitor.api.guard import TokenBuckets
from monitor.checks.heartbeat import MAX_BODY_BYTES, PING_KINDS, plausible_token

log = mlog.get(__name__)

CACHE_SECONDS = 10.0
MAX_CACHED = 100_000
# Per token: a job pings once per run, twice with /start; bursts are retries.
RATE_PER_SECOND = 1.0
RATE_BURST = 30


@dataclass(frozen=True, slots=True)
class _Known:
    monitor_id: int | None  # None: no heartbeat monitor has this token
    until: float


class PingDesk:
    """The ping route's memory: tokens to monitors, and each token's rate bucket."""

    def __init__(self) -> None:
        self._known: OrderedDict[str, _Known] = OrderedDict()
        # Only known tokens get a bucket: as many as there are heartbeat monitors.
        self._buckets = TokenBuckets(RATE_PER_SECOND, RATE_BURST)

    def cached(self, token: str, now: float) -> _Known | None:
        known = self._known.get(token)
        if known is None or known.until < now:
            return None
        return known

    def remember(self, token: str, monitor_id: int | None, now: float) -> None:
        self._known[token] = _Known(monitor_id, now + CACHE_SECONDS)
        self._known.move_to_end(token)
        while len(self._known) > MAX_CACHED:
            self._known.popitem(last=False)

    def wait(self, token: str) -> float:
        """0 if a ping with this token may go now, else the seconds until one may."""
        return self._buckets.take(token)


PINGS = web.AppKey("pings", PingDesk)


def _not_found() -> ApiError:
    return ApiError(404, "not_found", "no such ping URL")


async def ping(request: web.Request) -> web.Response:
    token = request.match_info["token"]
    kind = PING_KINDS.get(request.match_info.get("kind", ""))
    if kind is None or not plausible_token(token):
        raise _not_found()
    desk = request.app[PINGS]
    now = time.monotonic()
    known = desk.cached(token, now)
    if known is None:
        monitor_id = await request.app[POOL].fetchval(
            "SELECT id FROM monitors WHERE ping_token = $1 AND type = 'heartbeat'", token
        )
        desk.remember(token, monitor_id, now)
    else:
        monitor_id = known.monitor_id
    if monitor_id is None:
        raise _not_found()
    delay = desk.wait(token)
    if delay > 0:
        retry = str(max(1, math.ceil(delay)))
        raise ApiError(429, "rate_limited", "too many pings with this URL", headers={"Retry-After": retry})
    body, truncated = None, False
    if request.can_read_body:
        raw = await request.content.read(MAX_BODY_BYTES + 1)
        truncated = len(raw) > MAX_BODY_BYTES
        body = raw[:MAX_BODY_BYTES].decode("utf-8", errors="replace").replace("\x00", "\ufffd") or None
    await request.app[POOL].execute(
        "INSERT INTO pings (monitor_id, time, kind, body, body_truncated) VALUES ($1, $2, $3, $4, $5)",
        monitor_id,
        datetime.now(UTC),
        kind,
        body,
        truncated,
    )
    return web.Response(text="OK\n")


def add_routes(router: web.UrlDispatcher) -> None:
    for path in ("/ping/{token}", "/ping/{token}/{kind}"):
        router.add_route("GET", path, ping)
        router.add_route("POST", path, ping)
