"""Per-destination senders: ordering, batching, pacing and retries, the same for every kind.

Each destination (a chat, a webhook, a mailbox) has its own queue and task, so a failing or
throttled one never holds back another. Within a destination, items wait in stream order
(a monitor's own in its sequence); an item is eligible once its retry time has come *and*
no earlier item of the same monitor is still waiting, so a recovery never overtakes its
outage while other monitors' alerts go on. Everything eligible when the shared pacer allows
a message is combined into as few messages as the kind's composer takes.
"""

from __future__ import annotations

import asyncio
import bisect
import contextvars
import itertools
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from monitor import logging as mlog
from monitor.channels.base import DeliveryError
from monitor.events import Event

log = mlog.get(__name__)


# The longest wait a destination can impose (Retry-After, a rate-limit reset): a day-long or
# infinite value from a misbehaving service must not park a destination, or break the pacer.
MAX_WAIT = 3600.0


def bounded_wait(seconds: float | None) -> float | None:
    """``seconds`` within 0 and MAX_WAIT; None for none (or a value that is not a number)."""
    if seconds is None or not math.isfinite(seconds):
        return MAX_WAIT if seconds == math.inf else None
    return min(max(seconds, 0.0), MAX_WAIT)


def stream_order(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


@dataclass
class Item:
    entry_id: str
    event: Event
    channel: str  # the destination key (deliveries.channel)
    target: Mapping[str, Any] = field(default_factory=dict)  # the channel as the event carries it
    attempts: int = 0
    not_before: float = 0.0
    last_error: str | None = None
    # Further stream entries carrying the same event (a relay that published twice): they
    # settle with this item instead of sending again.
    also: list[str] = field(default_factory=list)
    order: tuple[int, int] = field(init=False)

    def __post_init__(self) -> None:
        self.order = stream_order(self.entry_id)


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 10
    base: float = 1.0
    cap: float = 60.0

    def delay(self, attempts: int, retry_after: float | None) -> float:
        """Exponential backoff with full jitter; never sooner than Telegram's retry_after."""
        backoff = min(self.cap, self.base * 2 ** (attempts - 1)) * random.uniform(0.5, 1.0)
        return max(backoff, retry_after or 0.0)


# Alerts older than the alerter's max age are summed up in one message per chat (the
# composer's summary): wait until the backlog has stopped arriving, this long without a new
# item, but never longer than STALE_HOLD_MAX from the first one seen.
STALE_QUIET = 0.5
STALE_HOLD_MAX = 5.0

# None, or the seconds the destination asked to be left alone after accepting the message.
Send = Callable[[Mapping[str, Any], Any], Awaitable[float | None]]
Compose = Callable[[list[Event]], tuple[Any, int]]
Outcome = Callable[[list[Item], str, str | None], Awaitable[None]]
# How long to wait before asking again whether a kind that cannot send (no bot token) can.
UNAVAILABLE_RECHECK = 5.0


async def _no_pacing() -> float:
    return 0.0


async def _no_block(seconds: float) -> None:
    return None


class DestinationSender:
    """The queue and task of one destination (a chat, a webhook, a mailbox).

    ``send(channel, payload)`` delivers what ``compose`` made of the items' events to the
    channel of the first item. ``pace()`` reserves a message in the destination's shared limits
    (0.0) or says how long to wait; ``block(seconds)`` holds the destination for every alerter
    after a 429, or after a send that returned a wait (the destination accepted the message
    but said its limit is used up). ``unavailable()`` names why the kind cannot send now
    (None: it can).
    """

    def __init__(
        self,
        key: str,
        *,
        send: Send,
        compose: Compose,
        on_outcome: Outcome,
        retry: RetryPolicy,
        pace: Callable[[], Awaitable[float]] = _no_pacing,
        block: Callable[[float], Awaitable[None]] = _no_block,
        unavailable: Callable[[], str | None] = lambda: None,
        on_retry: Callable[[], None] = lambda: None,
        max_age: float | None = None,
    ) -> None:
        self.key = key
        self._send = send
        self._compose = compose
        self._on_outcome = on_outcome
        self._pace = pace
        self._block = block
        self._unavailable = unavailable
        self._unavailable_logged: str | None = None
        self._retry = retry
        self._on_retry = on_retry
        self._items: list[Item] = []
        self._max_age = max_age
        self._last_put = 0.0
        self._stale_since: float | None = None
        self._wake = asyncio.Event()
        self._stopping = False
        self._sending = False
        self._task: asyncio.Task[None] | None = None

    @property
    def waiting(self) -> int:
        return len(self._items)

    @property
    def idle(self) -> bool:
        return not self._items and not self._sending

    def put(self, item: Item) -> None:
        # Stream order, even for entries reclaimed from a dead consumer after newer ones arrived;
        # and never after a later event of the same monitor (its sequence decides among them).
        keys = [i.order for i in self._items]
        at = bisect.bisect_right(keys, item.order)
        if item.event.seq is not None:
            for index, other in enumerate(self._items[:at]):
                if (
                    other.event.monitor_id == item.event.monitor_id
                    and (other.event.seq or 0) > item.event.seq
                ):
                    at = index
                    break
        self._items.insert(at, item)
        self._last_put = time.monotonic()
        self._wake.set()
        if self._task is None:
            # In a copy of the context without the ids of the event that happened to start it,
            # so the destination's later log lines do not carry that event's ids.
            context = contextvars.copy_context()
            context.run(structlog.contextvars.unbind_contextvars, "event_id", "monitor_id")
            self._task = asyncio.create_task(self._run(), name=f"dest-{self.key}", context=context)

    async def stop(self) -> None:
        """Finish the send in hand; what waits stays pending in the stream for later."""
        self._stopping = True
        self._wake.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    def eligible(self, now: float) -> list[Item]:
        blocked: set[int | None] = set()
        ready: list[Item] = []
        for item in self._items:
            monitor_id = item.event.monitor_id
            if monitor_id in blocked:
                continue
            if item.not_before > now:
                blocked.add(monitor_id)
                continue
            ready.append(item)
        return ready

    async def _sleep_until(self, deadline: float) -> None:
        delay = deadline - time.monotonic()
        if delay <= 0:
            await asyncio.sleep(0)  # never spin without letting others run
            return
        self._wake.clear()
        try:
            await asyncio.wait_for(self._wake.wait(), timeout=delay)
        except TimeoutError:
            pass

    async def _run(self) -> None:
        while not self._stopping:
            try:
                await self._step()
            except Exception:  # a bug here must not silence a destination for good
                log.exception("alert.sender_crashed", destination=self.key)
                await asyncio.sleep(1.0)

    async def _step(self) -> None:
        now = time.monotonic()
        if not self._items:
            self._wake.clear()
            await self._wake.wait()
            return
        ready = self.eligible(now)
        if not ready:
            await self._sleep_until(min(i.not_before for i in self._items))
            return
        reason = self._unavailable()
        if reason is not None:
            if reason != self._unavailable_logged:
                log.warning("alert.destination_unavailable", destination=self.key, reason=reason)
                self._unavailable_logged = reason
            await self._sleep_until(now + UNAVAILABLE_RECHECK)
            return
        self._unavailable_logged = None
        hold = self._hold_stale(ready[0], now)
        if hold > now:
            await self._sleep_until(hold)
            return
        wait = await self._pace()
        if wait > 0:
            # A little jitter: alerters that slept exactly the wait would ask again in the same
            # order, and the same one would win a busy destination nearly every time.
            await self._sleep_until(time.monotonic() + wait + random.uniform(0, 0.01))
            return
        self._stale_since = None
        await self._send_once(ready)

    def _hold_stale(self, first: Item, now: float) -> float:
        """When to send, if the next alert (``first``) is older than the max age: once the
        backlog it came in has been read, so that the chat gets one summary rather than several."""
        if self._max_age is None or first.event.age_seconds() <= self._max_age:
            return 0.0
        if self._stale_since is None:
            self._stale_since = now
        return min(self._last_put + STALE_QUIET, self._stale_since + STALE_HOLD_MAX)

    async def _send_once(self, ready: list[Item]) -> None:
        # A retry goes alone: combined with fresh alerts, its next failure would back them off
        # too, and a message-specific rejection would dead-letter them with it. Fresh alerts
        # ahead of it go first (one of them may be the same monitor's older event, reclaimed
        # from another alerter after the retried one was read).
        if ready[0].attempts:
            ready = ready[:1]
        else:
            ready = list(itertools.takewhile(lambda i: not i.attempts, ready))
        payload, covered = self._compose([i.event for i in ready])
        batch = ready[:covered]
        self._sending = True
        try:
            try:
                hold = bounded_wait(await self._send(batch[0].target, payload))
            except DeliveryError as exc:
                await self._failed(batch, exc)
                return
            self._remove(batch)
            try:
                if hold is not None and hold > 0:
                    # Before the outcome is recorded, so no alerter sends in the meantime.
                    await self._block(hold)
                    log.info("alert.destination_hold", destination=self.key, hold_s=hold)
            finally:
                await self._on_outcome(batch, "sent", None)
        finally:
            self._sending = False

    async def _failed(self, batch: list[Item], exc: DeliveryError) -> None:
        if exc.throttled:
            # The destination asked us to wait, which is no failed attempt: counted as one, a
            # long contention would dead-letter alerts for being paced. Every alerter waits.
            wait = bounded_wait(exc.retry_after) or 1.0
            await self._block(wait)
            log.info(
                "alert.throttled",
                destination=self.key,
                retry_after_s=wait,
                event_ids=[i.event.event_id for i in batch],
            )
            return
        now = time.monotonic()
        dead: list[Item] = []
        for item in batch:
            item.attempts += 1
            item.last_error = str(exc)
            if exc.permanent or item.attempts >= self._retry.max_attempts:
                dead.append(item)
            else:
                item.not_before = now + self._retry.delay(item.attempts, bounded_wait(exc.retry_after))
        log.warning(
            "alert.send_failed",
            destination=self.key,
            event_ids=[i.event.event_id for i in batch],
            error=str(exc),
            permanent=exc.permanent,
            dead=len(dead),
        )
        if len(dead) < len(batch):
            self._on_retry()
        if dead:
            self._remove(dead)
            await self._on_outcome(dead, "dead", str(exc))

    def _remove(self, batch: list[Item]) -> None:
        gone = {id(i) for i in batch}
        self._items = [i for i in self._items if id(i) not in gone]
