"""Values built about once per period whatever the traffic: what keeps a public page under a
traffic spike from costing the database anything more, without ever showing a visitor a page
older than the period plus one build.

Each key's value is built by one task at a time; every request that arrives while it builds
waits on that same build. Once built it is served for ``ttl`` seconds. The next build begins
ahead of that, in the background, when a request comes within twice the last build's duration
of the end of the period (at most half the period ahead), so under steady traffic no visitor
waits on a rebuild and builds stay about one per period. A request that finds the value a
period old waits for the new build: after a quiet spell the first visitor waits one build
(about 55 ms for a page of 20 monitors) rather than being shown what the page said before the
spell; that was up to ``ttl + stale`` (70 s) old.

The value before is served past the period only when the database cannot give a new one: the
last build failed (for up to ``stale`` more seconds), or the build in flight has run for
``patience`` seconds (a database that hangs: no visitor waits longer than that on it). Past
``stale`` a request waits for the build, and sees its error if it fails; after a failed build
the next is begun no sooner than ``retry`` seconds later (requests in between get the value
before or that error), so a database that is down is not asked once per request. Keys are
bounded: the least recently used goes first (a flood of made-up badge tokens cannot grow the
cache). ``remaining`` says how long a value has left, for the ``max-age`` a browser or proxy
may keep it: the period's end, not a period more.

Measured (bench/status.py): a cached page answers in 0.13-0.20 ms of api CPU; the build of a
page of 20 monitors takes about 55 ms, once per period.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


@dataclass
class _Entry(Generic[V]):
    value: V | None = None
    built_at: float = float("-inf")
    has_value: bool = False
    # Bumped by forget(): a build begun before it does not store its (older) value.
    generation: int = 0
    # The last build's failure and when: no new build for ``retry`` seconds after one.
    error: BaseException | None = field(default=None, repr=False)
    failed_at: float = float("-inf")
    weight: int = 0
    building: asyncio.Future[V] | None = field(default=None, repr=False)
    # When the build in flight began, and how long the last one that succeeded took.
    build_started: float = float("-inf")
    took: float = 0.0


class Fresh(Generic[K, V]):
    def __init__(
        self,
        build: Callable[[K], Awaitable[V]],
        ttl: float,
        *,
        stale: float = 60.0,
        retry: float = 1.0,
        patience: float = 2.0,
        max_keys: int = 10_000,
        weigh: Callable[[V], int] | None = None,
        max_weight: int = 0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._build = build
        self.ttl = ttl
        self.stale = stale
        self.retry = retry
        self.patience = patience
        self.max_keys = max_keys
        # With ``weigh``: the values kept weigh at most ``max_weight`` in all (bytes of pages).
        self._weigh = weigh
        self.max_weight = max_weight
        self.weight = 0
        self._clock = clock
        self._entries: OrderedDict[K, _Entry[V]] = OrderedDict()
        self._tasks: set[asyncio.Task[None]] = set()
        self.builds = 0

    async def get(self, key: K) -> V:
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry()
            self._evict()
        else:
            self._entries.move_to_end(key)
        now = self._clock()
        age = now - entry.built_at
        error = entry.error
        # After a failed build, none other for `retry`: a database that is down is asked again
        # once per `retry`, not once per request.
        backing_off = error is not None and now - entry.failed_at < self.retry
        if entry.has_value and age < self.ttl:
            # The next build begins before this one's period ends: a visitor near its end
            # does not wait for it.
            if entry.building is None and age >= self.ttl - self._lead(entry) and not backing_off:
                self._start(key, entry)
            return entry.value  # type: ignore[return-value]
        usable = entry.has_value and age < self.ttl + self.stale
        previous: V = entry.value  # type: ignore[assignment]
        if entry.building is None and error is not None and backing_off:
            if usable:
                return previous
            # Raised afresh each time: the one object would keep every raise's frames.
            raise error.with_traceback(None)
        building = entry.building or self._start(key, entry)
        if not usable:
            return await asyncio.shield(building)
        waited = now - entry.build_started
        if error is not None or waited >= self.patience:
            # The database gave no new value last time, or is slow to give this one.
            return previous
        try:
            return await asyncio.wait_for(asyncio.shield(building), self.patience - waited)
        except Exception:  # it failed, or took `patience` (TimeoutError): the value before
            return previous

    def lead(self, key: K) -> float:
        """How long before its period ends the next build of ``key`` may begin: twice the last
        build's time, at most half the period."""
        entry = self._entries.get(key)
        return 0.0 if entry is None else self._lead(entry)

    def _lead(self, entry: _Entry[V]) -> float:
        return min(self.ttl / 2, 2 * entry.took)

    def remaining(self, key: K) -> float:
        """Seconds the value of ``key`` has left in its period (0 when past it, or none)."""
        entry = self._entries.get(key)
        if entry is None or not entry.has_value:
            return 0.0
        return max(0.0, min(self.ttl, self.ttl - (self._clock() - entry.built_at)))

    def forget(self, *keys: K) -> None:
        """Build these afresh on their next request (a page its owner just changed)."""
        for key in keys:
            entry = self._entries.get(key)
            if entry is not None:
                entry.built_at, entry.has_value, entry.building = float("-inf"), False, None
                entry.error = None
                entry.generation += 1

    def _evict(self) -> None:
        """The least recently used go while there are too many, or they weigh too much (the one
        just used stays, whatever it weighs)."""
        while len(self._entries) > self.max_keys or (
            self._weigh is not None and self.weight > self.max_weight and len(self._entries) > 1
        ):
            _, gone = self._entries.popitem(last=False)
            self.weight -= gone.weight
            gone.weight = 0

    def _store(self, key: K, entry: _Entry[V], value: V) -> None:
        entry.value, entry.has_value, entry.built_at = value, True, self._clock()
        entry.error = None
        if self._weigh is not None and self._entries.get(key) is entry:  # not evicted meanwhile
            weight = self._weigh(value)
            self.weight += weight - entry.weight
            entry.weight = weight
            self._evict()

    def _start(self, key: K, entry: _Entry[V]) -> asyncio.Future[V]:
        future: asyncio.Future[V] = asyncio.get_running_loop().create_future()
        entry.building = future
        entry.build_started = started = self._clock()
        generation = entry.generation
        self.builds += 1

        async def run() -> None:
            try:
                value = await self._build(key)
                entry.took = self._clock() - started
            except BaseException as exc:
                if isinstance(exc, Exception):
                    entry.error, entry.failed_at = exc, self._clock()
                if not future.cancelled():
                    future.set_exception(exc)
                    future.exception()  # retrieved: a background build's error must not be logged as lost
                if not isinstance(exc, Exception):
                    raise
            else:
                if entry.generation == generation:
                    self._store(key, entry, value)
                future.set_result(value)
            finally:
                if entry.building is future:
                    entry.building = None

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return future

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
