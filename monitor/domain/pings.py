"""A heartbeat monitor's job reporting in (``/ping/<token>``, ``/start``, ``/fail``): the ping
judged, limited and stored.

Public: the token is the credential (``checks/heartbeat.py``), so the operation takes the
token, not an ``Actor``, and says nothing about a token it does not know: a malformed,
unknown, deleted or other type's token all get the same 404 with the same body, after the same
work (a lookup, cached either way).

Cheap, because a fleet of cron jobs can all fire on the same minute: a token's monitor is looked
up once and kept for ``CACHE_SECONDS`` (an unknown token too, in a bounded cache, so a flood of
made-up tokens costs one lookup each, once), the rate limit is a token bucket per token in
memory (the face's ``Limiter``, passed in), and pings are written in batches (``Batcher``): the
pings that arrive while one INSERT is under way go together in the next, so a burst costs one
statement, one commit (one WAL flush) and one NOTIFY per batch rather than per ping; cache
misses are looked up the same way.
Measured with ``bench/pings.py`` on the 2-core VM (bench/README.md): one INSERT per ping held
750-990 pings/s at 0.6-0.8 ms of api CPU each; batched, 2,800-3,700/s at 0.23-0.32 ms, and the
database's CPU per ping fell by 80 %. One writer at a time also commits its rows in id order.

A ping is acknowledged (200) only once its row is committed: a 503 tells the job to retry (curl
``--retry``), and no ping that was answered 200 is lost. The scheduler turns the row into a
result (``scheduler/heartbeat.py``). A paused monitor's pings are stored too (its job gets its
200): whether the monitor is paused is the scheduler's to know at the moment it reads them, not
something a cache of the api may still believe after the monitor was resumed.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Generic, Protocol, TypeVar

import asyncpg

from monitor import logging as mlog
from monitor.checks.heartbeat import MAX_BODY_BYTES, PING_KINDS, plausible_token
from monitor.domain.errors import DomainError

log = mlog.get(__name__)

CACHE_SECONDS = 10.0
MAX_CACHED = 100_000
# Per token: a job pings once per run, twice with /start; bursts are retries.
RATE_PER_SECOND = 1.0
RATE_BURST = 30
# At most this many pings (or lookups) in one statement; more wait for the next.
MAX_BATCH = 1000

T = TypeVar("T")
R = TypeVar("R")


class Batcher(Generic[T, R]):
    """One call at a time for many callers: the items submitted while a call runs go together
    in the next one (up to ``max_batch``), and each caller gets its own item's result, or the
    call's exception. A lone item goes at once: batches form only under load."""

    def __init__(self, call: Callable[[list[T]], Awaitable[list[R]]], max_batch: int = MAX_BATCH) -> None:
        self._call = call
        self._max = max_batch
        self._waiting: list[tuple[T, asyncio.Future[R]]] = []
        self._task: asyncio.Task[None] | None = None

    async def submit(self, item: T) -> R:
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._waiting.append((item, future))
        if self._task is None:
            # A context of its own: not the first caller's (its request id in the logs).
            self._task = asyncio.create_task(self._drain(), context=contextvars.Context())
            self._task.add_done_callback(self._ended)
        return await future

    def _ended(self, task: asyncio.Task[None]) -> None:
        if self._task is not task:
            return  # _drain ran and cleaned up after itself
        # Cancelled before it ever ran (the loop closing): its own cleanup never ran either.
        self._task = None
        for _, future in self._waiting:
            future.cancel()
        self._waiting = []

    async def _drain(self) -> None:
        batch: list[tuple[T, asyncio.Future[R]]] = []
        try:
            while self._waiting:
                batch, self._waiting = self._waiting[: self._max], self._waiting[self._max :]
                try:
                    results = await self._call([item for item, _ in batch])
                except Exception as exc:
                    for _, future in batch:
                        if not future.done():  # its caller may have gone
                            future.set_exception(exc)
                else:
                    for (_, future), result in zip(batch, results, strict=True):
                        if not future.done():
                            future.set_result(result)
                batch = []
        except BaseException:  # cancelled (the api stopping): no caller waits forever
            for _, future in [*batch, *self._waiting]:
                future.cancel()
            self._waiting = []
            raise
        finally:
            self._task = None

    async def close(self) -> None:
        """Wait for the call under way and the items already submitted."""
        while self._task is not None:
            await asyncio.shield(self._task)


@dataclass(frozen=True, slots=True)
class Ping:
    monitor_id: int
    at: datetime
    kind: str
    body: str | None
    truncated: bool


_INSERT = """
INSERT INTO pings (monitor_id, time, kind, body, body_truncated)
SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::text[], $4::text[], $5::boolean[])"""
_LOOKUP = """
SELECT ping_token, id FROM monitors WHERE ping_token = ANY($1::text[]) AND type = 'heartbeat'"""


@dataclass(frozen=True, slots=True)
class _Known:
    monitor_id: int | None  # None: no heartbeat monitor has this token
    until: float


class PingDesk:
    """The ping route's memory and writer: tokens to monitors, each token's rate bucket, and
    the batches of lookups and INSERTs on ``pool``. ``limiter`` holds a rate bucket per token
    (``RATE_PER_SECOND``, ``RATE_BURST``)."""

    def __init__(self, pool: asyncpg.Pool, limiter: Limiter) -> None:
        self._pool = pool
        self._known: OrderedDict[str, _Known] = OrderedDict()
        # Only known tokens get a bucket: as many as there are heartbeat monitors.
        self._buckets = limiter
        self._lookups: Batcher[str, int | None] = Batcher(self._lookup)
        self._inserts: Batcher[Ping, None] = Batcher(self._insert)

    async def monitor_of(self, token: str) -> int | None:
        """The heartbeat monitor with this token (None: none has it), cached either way."""
        now = time.monotonic()
        known = self.cached(token, now)
        if known is not None:
            return known.monitor_id
        monitor_id = await self._lookups.submit(token)
        self.remember(token, monitor_id, now)
        return monitor_id

    async def record(self, ping: Ping) -> None:
        """Return once ``ping``'s row is committed (raises what the database raised)."""
        await self._inserts.submit(ping)

    async def close(self) -> None:
        await self._lookups.close()
        await self._inserts.close()

    async def _lookup(self, tokens: list[str]) -> list[int | None]:
        found = {row[0]: row[1] for row in await self._pool.fetch(_LOOKUP, tokens)}
        return [found.get(token) for token in tokens]

    async def _insert(self, pings: list[Ping]) -> list[None]:
        await self._pool.execute(
            _INSERT,
            [p.monitor_id for p in pings],
            [p.at for p in pings],
            [p.kind for p in pings],
            [p.body for p in pings],
            [p.truncated for p in pings],
        )
        return [None] * len(pings)

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


class Limiter(Protocol):
    """A rate bucket per key: 0 if a request with ``key`` may go now, else the seconds until
    one may (``api/guard.py``'s ``TokenBuckets``)."""

    def take(self, key: Hashable) -> float: ...


# Reads at most ``n`` bytes of a ping's body, b"" at its end.
BodyReader = Callable[[int], Awaitable[bytes]]


def _not_found() -> DomainError:
    return DomainError(404, "not_found", "no such ping URL")


async def ping(desk: PingDesk, token: str, kind: str, read: BodyReader | None = None) -> None:
    """Store a ping of ``kind`` (``""``: a plain ping; ``start``, ``fail``) with ``token``'s
    monitor, its body (if ``read``) bounded to MAX_BODY_BYTES; return once it is committed.
    404 for a token no heartbeat monitor has, 429 (Retry-After) when it pings too often."""
    ping_kind = PING_KINDS.get(kind)
    if ping_kind is None or not plausible_token(token):
        raise _not_found()
    monitor_id = await desk.monitor_of(token)
    if monitor_id is None:
        raise _not_found()
    delay = desk.wait(token)
    if delay > 0:
        retry = str(max(1, math.ceil(delay)))
        raise DomainError(429, "rate_limited", "too many pings with this URL", headers={"Retry-After": retry})
    body, truncated = await bounded_body(read) if read is not None else (None, False)
    await desk.record(Ping(monitor_id, datetime.now(UTC), ping_kind, body, truncated))


async def bounded_body(read: BodyReader) -> tuple[str | None, bool]:
    """The first MAX_BODY_BYTES of the body (a log tail), as text, and whether there was more.
    Read until the end or the cap: one read returns only what has arrived so far."""
    raw = bytearray()
    while len(raw) <= MAX_BODY_BYTES:
        chunk = await read(MAX_BODY_BYTES + 1 - len(raw))
        if not chunk:
            break
        raw += chunk
    text = bytes(raw[:MAX_BODY_BYTES]).decode("utf-8", errors="replace").replace("\x00", "\ufffd")
    return text or None, len(raw) > MAX_BODY_BYTES
