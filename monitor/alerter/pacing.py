"""Pacing shared by every alerter: a destination's limit held by all of them together.

Each alerter used to pace on its own (:mod:`monitor.alerter.ratelimit`), so N alerters sent
up to N times a destination's limit, and the destination refused the surplus (Telegram's 429
"Too Many Requests", counted as failed attempts). Here a limit is a :class:`Bucket` ("at most
``count`` messages in any ``per`` seconds for ``key``") whose log of grants lives in Redis, and
one Lua script, run atomically by the server, either takes a slot in every bucket a message
needs (chat, group, bot) or takes none and says how long to wait.

Why a sliding-window log (a ZSET of grant times per key, trimmed to the window) and not a
token bucket or GCRA: both of those allow a burst of ``count`` on top of a steady rate, so
"20 in any 61 s" would let up to 39 through in one 61 s span; the log is exact, as the
in-process ``SlidingWindow`` is, and its size is bounded by ``count`` (at most about 30 here).
Times are the Redis server's (``TIME`` inside the script), so alerters on machines whose
clocks differ still agree; every key gets a ``PEXPIRE`` of its window, so an idle
destination leaves nothing behind. A 429's ``Retry-After`` given to :meth:`SharedPacer.block`
holds the destination for every alerter.

Keys (under ``prefix``, ``monitor:pace:`` by default):

- ``<prefix>window:<bucket key>``: ZSET, score = grant time (server µs), member = that time
  plus a suffix unique to the reservation; expires ``per`` after the last grant.
- ``<prefix>block:<bucket key>``: string, the server time (µs) until which the destination
  is blocked; expires then.
- ``<prefix>epoch``: string, the server time (µs) at which these keys began, set by the first
  reservation that finds it missing; never expires.

A Redis that restarts without its data (no persistence, a lost disk, a FLUSHALL) would start
every window empty, and the first messages after it went at once into Telegram's 429 (seen
right after a restart: a group chat had its 20 of the minute, and more went). Every
reservation gives the epoch it knows, and the script answers a different one instead of a
grant (one GET more; no other cost on the way of a message). The pacer then seeds, before its
first message to each destination while the new epoch is younger than that destination's
windows, the messages the ``history`` it was given (the ``deliveries`` table) says went there
in the last window, by any alerter. A seeded message's member is named after the message
(``seed:<destination>:<id>``) and added with ``ZADD NX``, and only if it was sent before the
epoch began (later ones hold a grant of their own), so two alerters seeding the same
destination, or one seeding twice, add each message once. Blocks this pacer still holds (a
429's Retry-After) are set again. What no one has recorded yet (a message in flight while the
data went) stays unknown: at most one message per alerter per destination.

A key has one limit: every caller must give the same ``count`` and ``per`` for a key (put
the limit's kind in the key, e.g. ``telegram:chat:<id>`` and ``telegram:group:<id>``). The
keys of one reservation are used together, so they need one Redis, not a cluster's slots. A
step back of the server's clock only makes grants look younger (longer waits); a step
forward may let one window's worth through early.

When Redis fails (an error or no answer within ``timeout``), pacing goes on in-process with
the same rules, one warning per outage (``pacing.redis_unavailable``, then
``pacing.redis_back``); during the outage each alerter holds the limit on its own, as before
this module, from the messages it sent itself (every grant, shared or not, is remembered in
process for a window), not from empty windows. A reservation never raises because of Redis.

Cost: one round trip (EVALSHA) per reserve, whatever the number of buckets. Measured on a
2-CPU dev box against the local Redis 7.0 of ``make services`` (loopback, one client, 10,000
reserves in a row): about 0.2 ms each, i.e. about 5,000 reserves a second (three buckets at
once: about 4,000; a bare PING: about 8,000), and about 13,000 a second with 16 concurrent
callers; Redis itself spends about 20 µs per call. Next to a send (tens to hundreds of ms
to a web API) it is noise, and one Redis serves thousands of messages a second. The epoch's
GET and the in-process memory of grants cost nothing measurable: side by side with the script
before them (a private Redis, 5,000 reserves in a row, three runs each), Redis spent 18-20 µs
a call for one bucket and 32-39 µs for three either way, and the round trip (0.25-0.43 ms on
a busy 2-CPU box) varied more from run to run than between the two.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import os
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.commands.core import AsyncScript
from redis.exceptions import RedisError

from monitor import keys
from monitor import logging as mlog
from monitor.alerter.ratelimit import SlidingWindow
from monitor.channels.base import Bucket

log = mlog.get(__name__)

PREFIX = keys.PACE_PREFIX

# What "Redis is unavailable" looks like to a caller; anything else is a bug and propagates.
REDIS_ERRORS: tuple[type[BaseException], ...] = (RedisError, OSError, TimeoutError)

# KEYS[1]: the epoch key; then, for each bucket, its window (ZSET) then its block key (string).
# ARGV[1]: a suffix unique to this reservation; ARGV[2]: the epoch the caller knows ('' for
# none); then, for each bucket, count and window (µs).
# Returns 0 (a slot taken in every bucket), the µs until every bucket would allow one, or
# {epoch, now} (nothing taken) when the caller's epoch is not the server's.
_RESERVE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local epoch = redis.call('GET', KEYS[1])
if not epoch then
  epoch = string.format('%d', now)
  redis.call('SET', KEYS[1], epoch)
end
if epoch ~= ARGV[2] then
  return {epoch, string.format('%d', now)}
end
local n = (#KEYS - 1) / 2
local wait = 0
for i = 1, n do
  local window_key, block_key = KEYS[2 * i], KEYS[2 * i + 1]
  local count, per = tonumber(ARGV[2 * i + 1]), tonumber(ARGV[2 * i + 2])
  local blocked = tonumber(redis.call('GET', block_key) or 0)
  if blocked > now then
    wait = math.max(wait, blocked - now)
  end
  -- A grant at exactly now - per is outside the window, as in ratelimit.SlidingWindow.
  redis.call('ZREMRANGEBYSCORE', window_key, '-inf', string.format('%d', now - per))
  local taken = redis.call('ZCARD', window_key)
  if taken >= count then
    -- The window has room again once the grant `count` places from the newest leaves it.
    local freeing = redis.call('ZRANGE', window_key, taken - count, taken - count, 'WITHSCORES')
    wait = math.max(wait, tonumber(freeing[2]) + per - now)
  end
end
if wait > 0 then
  return wait
end
local at = string.format('%d', now)
for i = 1, n do
  local per = tonumber(ARGV[2 * i + 2])
  redis.call('ZADD', KEYS[2 * i], at, at .. '-' .. ARGV[1])
  redis.call('PEXPIRE', KEYS[2 * i], math.ceil(per / 1000))
end
return 0
"""

# KEYS[1]: the epoch key; then each bucket's window. ARGV[1]: the epoch seeded into; then each
# bucket's window (µs); then pairs of a message's member and its age (µs).
# Returns how many messages went into the first bucket, or -1 (nothing added) when the epoch
# is no longer ARGV[1].
_SEED = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return -1
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local since = tonumber(ARGV[1])
local n = #KEYS - 1
local first = 0
for i = 1, n do
  local per = tonumber(ARGV[1 + i])
  local added = 0
  for j = n + 2, #ARGV, 2 do
    local at = now - tonumber(ARGV[j + 1])
    -- Only what the lost data held: a message sent since the epoch began has its own grant.
    if at < since and at > now - per then
      added = added + redis.call('ZADD', KEYS[1 + i], 'NX', string.format('%d', at), ARGV[j])
    end
  end
  if added > 0 and redis.call('PTTL', KEYS[1 + i]) < math.ceil(per / 1000) then
    redis.call('PEXPIRE', KEYS[1 + i], math.ceil(per / 1000))
  end
  if i == 1 then
    first = added
  end
end
return first
"""

# KEYS[1]: the block key; ARGV[1]: how long (µs). Never shortens a longer block.
_BLOCK = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local span = tonumber(ARGV[1])
local until_ = now + span
if until_ > tonumber(redis.call('GET', KEYS[1]) or 0) then
  redis.call('SET', KEYS[1], string.format('%d', until_), 'PX', math.ceil(span / 1000))
end
return 0
"""


# (destination, seconds) -> (id, age in seconds) of every message that went to the destination
# in the last ``seconds``, by any alerter; None when that cannot be known now (the database is
# away: it says so in its log). An id names one message, the same for every caller.
History = Callable[[str, float], Awaitable[Sequence[tuple[str, float]] | None]]

# How long a message to a destination whose recent messages cannot be known waits before the
# pacer asks again.
HISTORY_RETRY = 1.0
# The epoch's age is estimated on this process's clock from the server's answer: a little
# margin, so a destination is seeded whenever its windows may still hold lost messages (the
# script decides exactly which).
EPOCH_MARGIN = 1.0


class SharedPacer:
    """Paces messages to destinations for every alerter sharing ``redis``.

    ``timeout`` bounds one Redis call (past it, the reservation is decided in-process);
    after a failure Redis is tried again only once ``retry_interval`` has passed, so an
    outage costs one failed call a second, not one per message. ``history`` tells a
    destination's recent messages, to seed its windows after Redis lost its data.
    """

    def __init__(
        self,
        redis: aioredis.Redis,
        *,
        prefix: str = PREFIX,
        timeout: float = 1.0,
        retry_interval: float = 1.0,
        history: History | None = None,
    ) -> None:
        self._redis = redis
        self._prefix = prefix
        self._timeout = timeout
        self._retry_interval = retry_interval
        self._history = history
        self._reserve = redis.register_script(_RESERVE)
        self._seed = redis.register_script(_SEED)
        self._block = redis.register_script(_BLOCK)
        # Members must be unique even for two grants in the same microsecond: this pacer's
        # random id and a counter.
        self._id = os.urandom(6).hex()
        self._seq = itertools.count()
        self._local = _LocalPacer()
        self._down_since: float | None = None
        self._retry_at = 0.0
        self._local_grants = 0
        # The server's epoch as last answered, its age then (s) and when (monotonic); the
        # destinations seeded since.
        self._epoch = ""
        self._epoch_age = (math.inf, 0.0)
        self._seeded: set[str] = set()

    @property
    def epoch_key(self) -> str:
        return f"{self._prefix}epoch"

    def window_key(self, key: str) -> str:
        return f"{self._prefix}window:{key}"

    def block_key(self, key: str) -> str:
        return f"{self._prefix}block:{key}"

    @property
    def redis_available(self) -> bool:
        """False while an outage is known (the last call to Redis failed)."""
        return self._down_since is None

    async def reserve(self, buckets: Sequence[Bucket], *, destination: str | None = None) -> float:
        """Take one slot in every bucket and return 0.0, or take none and return the seconds
        until every one would allow a message (and no destination is blocked).

        ``destination`` names where the message goes (the ``deliveries`` channel), whose
        recent messages seed the buckets when Redis lost its data.

        A caller that sleeps exactly the wait competes with every other waiter at that
        instant; :meth:`acquire` adds the jitter that keeps the turns fair.
        """
        if len({b.key for b in buckets}) != len(buckets):
            raise ValueError(f"a bucket key given twice: {[b.key for b in buckets]}")
        if not buckets:
            return 0.0
        if self._try_redis():
            try:
                wait = await self._shared(buckets, destination)
            except REDIS_ERRORS as exc:
                self._failed(exc)
            else:
                self._succeeded()
                if wait == 0.0:
                    self._local.remember(buckets)
                return wait
        wait = self._local.reserve(buckets)
        if wait == 0.0:
            self._local_grants += 1
        return wait

    async def _shared(self, buckets: Sequence[Bucket], destination: str | None) -> float:
        keys: list[str] = [self.epoch_key]
        counts: list[int] = []
        for bucket in buckets:
            keys += (self.window_key(bucket.key), self.block_key(bucket.key))
            counts += (bucket.count, bucket.window_us)
        for _ in range(3):  # a second change of epoch in between: ask once more
            if destination is not None and self._unseeded(destination, buckets):
                if not await self._seed_from_history(destination, buckets):
                    return HISTORY_RETRY
            args = [f"{self._id}-{next(self._seq)}", self._epoch, *counts]
            # A reservation that times out may still have taken its slots on the server:
            # unused slots only make the pacing stricter for a window.
            reply = await self._call(self._reserve, keys, args)
            if not isinstance(reply, list):
                return int(reply) / 1_000_000
            await self._adopt(_text(reply[0]), int(_text(reply[1])))
        return 0.01

    async def _call(self, script: AsyncScript, keys: list[str], args: list[Any]) -> Any:
        async with asyncio.timeout(self._timeout):
            return await script(keys=keys, args=args)

    async def _adopt(self, epoch: str, now_us: int) -> None:
        """The server's pacing keys began at ``epoch``, not at the one this pacer knew."""
        lost = bool(self._epoch)
        self._epoch = epoch
        self._epoch_age = ((now_us - int(epoch)) / 1_000_000, time.monotonic())
        self._seeded.clear()
        if lost:
            log.warning("pacing.redis_data_lost", reseeding=self._history is not None)
        for key, seconds in self._local.blocks().items():
            await self._call(self._block, [self.block_key(key)], [math.ceil(seconds * 1_000_000)])

    def _unseeded(self, destination: str, buckets: Sequence[Bucket]) -> bool:
        """Whether ``destination``'s windows may still miss messages of the lost data."""
        if self._history is None or not self._epoch or destination in self._seeded:
            return False
        age, at = self._epoch_age
        return age + time.monotonic() - at < max(b.per for b in buckets) + EPOCH_MARGIN

    async def _seed_from_history(self, destination: str, buckets: Sequence[Bucket]) -> bool:
        """Put the destination's messages of the last window (before the epoch) back into its
        windows; False when they cannot be known now."""
        assert self._history is not None
        sent = await self._history(destination, max(b.per for b in buckets))
        if sent is None:
            return False
        args: list[Any] = [self._epoch, *(b.window_us for b in buckets)]
        for message, age in sent:
            args += (f"seed:{destination}:{message}", max(0, math.ceil(age * 1_000_000)))
        keys = [self.epoch_key, *(self.window_key(b.key) for b in buckets)]
        added = int(await self._call(self._seed, keys, args))
        if added >= 0:  # else the epoch changed again: the reservation learns it and starts over
            self._seeded.add(destination)
        if added > 0:
            log.info("pacing.seeded", destination=destination, messages=added)
        return True

    async def acquire(self, buckets: Sequence[Bucket], *, jitter: float = 0.01) -> float:
        """Wait until :meth:`reserve` grants a slot in every bucket; the seconds waited.

        Each wait is lengthened by a random part of up to ``jitter`` seconds: waiters told
        the same time would otherwise wake together, and the one whose answer came back
        quickest (often the last winner) would win every time, starving the others.
        """
        start = time.monotonic()
        while True:
            wait = await self.reserve(buckets)
            if wait == 0.0:
                return time.monotonic() - start
            await asyncio.sleep(wait + random.uniform(0, jitter))

    async def block(self, key: str, seconds: float) -> None:
        """Hold ``key``'s destination for ``seconds`` (a 429's ``Retry-After``) for every
        alerter: until then a reservation with a bucket of that key returns the time left."""
        if not seconds > 0:
            return
        # Kept here too, so an outage starting now (or a Redis losing it) does not forget it.
        self._local.block(key, seconds)
        if not self._try_redis():
            return
        try:
            await self._call(self._block, [self.block_key(key)], [math.ceil(seconds * 1_000_000)])
        except REDIS_ERRORS as exc:
            self._failed(exc)
        else:
            self._succeeded()

    def _try_redis(self) -> bool:
        return self._down_since is None or time.monotonic() >= self._retry_at

    def _failed(self, exc: BaseException) -> None:
        now = time.monotonic()
        self._retry_at = now + self._retry_interval
        if self._down_since is None:
            self._down_since = now
            self._local_grants = 0
            log.warning("pacing.redis_unavailable", error=repr(exc), fallback="in-process")

    def _succeeded(self) -> None:
        if self._down_since is None:
            return
        log.info(
            "pacing.redis_back",
            outage_seconds=round(time.monotonic() - self._down_since, 3),
            local_grants=self._local_grants,
        )
        self._down_since = None


class _LocalPacer:
    """The same rules in one process (monotonic clock): what this process sent, shared or not,
    and the pacing while Redis is away."""

    def __init__(self) -> None:
        self._windows: dict[str, tuple[Bucket, SlidingWindow]] = {}
        self._blocked: dict[str, float] = {}

    def reserve(self, buckets: Sequence[Bucket]) -> float:
        now = time.monotonic()
        windows = [self._window(bucket) for bucket in buckets]
        ready = max(
            [now, *(w.ready_at(now) for w in windows), *(self._blocked.get(b.key, 0.0) for b in buckets)]
        )
        if ready > now:
            return ready - now
        for window in windows:
            window.record(now)
        return 0.0

    def remember(self, buckets: Sequence[Bucket]) -> None:
        """A message granted by Redis: counted here too, for an outage that starts later."""
        now = time.monotonic()
        for bucket in buckets:
            self._window(bucket).record(now)

    def block(self, key: str, seconds: float) -> None:
        now = time.monotonic()
        self._blocked = {k: until for k, until in self._blocked.items() if until > now}
        self._blocked[key] = max(self._blocked.get(key, 0.0), now + seconds)

    def blocks(self) -> dict[str, float]:
        """The blocks still running: key -> seconds left."""
        now = time.monotonic()
        return {key: until - now for key, until in self._blocked.items() if until > now}

    def _window(self, bucket: Bucket) -> SlidingWindow:
        known = self._windows.get(bucket.key)
        if known is None or known[0] != bucket:
            known = (bucket, SlidingWindow(bucket.count, bucket.window_us / 1_000_000))
            self._windows[bucket.key] = known
        return known[1]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
