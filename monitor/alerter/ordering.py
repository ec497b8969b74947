"""Order across alerters: a monitor's alerts reach each destination in the order they happened,
and an event is sent once, however many alerters run.

Within one alerter the destination's sender keeps the order (monitor/alerter/dispatch.py). Across
alerters nothing would: the group hands the entries out as they come, so "up" may reach an
alerter that is idle while its "down" waits in another's hands for a rate limit or a retry. So
before an event is taken in hand for a destination, two questions:

- **An older event undelivered?** Events carry their place in the monitor's sequence (``seq``);
  the outbox says which older ones went to which destinations, and where each went on the
  stream. An older one without a final delivery that is pending in the group (another alerter
  holds it, or it waits for a reclaim), not yet read, or not yet published is waited for; one
  that is none of these (lost with a Redis that kept no data, trimmed) is published again
  (once, whichever alerter notices first) and then waited for. Only an older event whose stream
  entry is unknown (written before migration 008) is given up, after :func:`order_wait`.
- **Held elsewhere?** The relay publishes an event twice when its XADD went through and marking
  its row did not; should the two copies reach two alerters, both would send. The first to set
  the sending key ``monitor:alerter:sending:<event>:<destination>`` (NX, lapsing with a claim,
  renewed with the claims) sends it; the other looks again at every read, and acks once the
  delivery is recorded, or sends it should the holder die (its key lapses with its claim).
  Checking the deliveries table alone left a window: both copies in hand before either was
  recorded, and sent twice.

An entry put off for either reason is *deferred*: kept claimed, offered again at every read.

**Hand-back**: an alerter that stops gracefully makes its entries in hand claimable by the
others at once (their idle time past any threshold, its sending keys deleted, a counter the
others watch incremented). Without it they waited MONITOR_ALERT_CLAIM_IDLE_SECONDS while newer
alerts of the same monitors went out.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import asyncpg
import redis.asyncio as aioredis

from monitor import keys
from monitor import logging as mlog
from monitor.alerter.stream import TRANSIENT, Fields, Stream, decode
from monitor.events import Event, publish

log = mlog.get(__name__)

# How far back in a monitor's sequence an event looks for older ones still undelivered.
ORDER_LOOKBACK = 200
# Sending keys per pipeline (renewed, deleted).
KEY_BATCH = 500

# Whether (event id, destination) is in this alerter's hands.
InHand = Callable[[str, str], bool]


def sending_key(event_id: str, channel: str) -> str:
    return f"{keys.SENDING_PREFIX}{event_id}:{channel}"


def order_wait(max_attempts: int, backoff_max: float, claim_idle: float) -> float:
    """The longest an event waits for an older one that no alerter seems to deliver (its stream
    entry lost with a Redis that kept no data): every retry of it, and a takeover; two minutes
    at least."""
    return max(120.0, max_attempts * backoff_max + 2 * claim_idle)


def split_older(rows: list[Any], in_hand: InHand) -> tuple[list[Any], list[Any]]:
    """Of the older undelivered (event, destination) rows not in our hands: those whose stream
    entry is known or that are not published yet (tracked: waited for as long as it takes), and
    those published before the stream id was recorded (unknown: waited for at most
    :func:`order_wait`)."""
    rows = [r for r in rows if not in_hand(r["event_id"], r["dest"])]
    tracked = [r for r in rows if r["stream_id"] is not None or not r["published"]]
    return tracked, [r for r in rows if r not in tracked]


class Ordering:
    """Decides whether an entry waits (see the module docstring). ``in_hand`` says which
    (event, destination) pairs this alerter holds; ``claim_idle`` (seconds) is the stream's."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        redis: aioredis.Redis,
        stream: Stream,
        in_hand: InHand,
        *,
        claim_idle: float,
        order_wait: float,
    ) -> None:
        self._pool = pool
        self._redis = redis
        self._stream = stream
        self._in_hand = in_hand
        self._claim_idle = claim_idle
        self._order_wait = order_wait
        # Entries put off: entry id -> (fields, first seen). Offered again on every read, and
        # kept claimed meanwhile.
        self._deferred: dict[str, tuple[Fields, float]] = {}
        self.handed_back = 0

    # -- the deferred ----------------------------------------------------------------

    def deferred(self) -> list[tuple[str, Fields]]:
        """The entries put off, to offer again."""
        return [(entry_id, fields) for entry_id, (fields, _) in self._deferred.items()]

    def deferred_ids(self) -> list[str]:
        return list(self._deferred)

    def is_deferred(self, entry_id: str) -> bool:
        return entry_id in self._deferred

    def forget(self, entry_id: str) -> None:
        """The entry is settled or taken in hand: it waits no more."""
        self._deferred.pop(entry_id, None)

    def _first_seen(self, entry_id: str, fields: Fields) -> float:
        return self._deferred.get(entry_id, (fields, time.monotonic()))[1]

    # -- the questions ---------------------------------------------------------------

    async def waits(self, entry_id: str, fields: Fields, event: Event, channels: list[str]) -> bool:
        """True (and the entry deferred) while ``event`` may not be taken in hand for one of
        ``channels``: an older event of its monitor is undelivered, or another alerter holds it."""
        if await self._older_undelivered(entry_id, fields, event, channels):
            return True
        return await self._held_elsewhere(entry_id, fields, event, channels)

    async def _held_elsewhere(self, entry_id: str, fields: Fields, event: Event, channels: list[str]) -> bool:
        fresh = [c for c in channels if not self._in_hand(event.event_id, c)]
        if not fresh:
            return False
        pipe = self._redis.pipeline(transaction=False)
        for channel in fresh:
            key = sending_key(event.event_id, channel)
            pipe.set(key, self._stream.consumer, nx=True, px=self._sending_ttl_ms)
            pipe.get(key)
        holders = (await pipe.execute())[1::2]
        elsewhere = [
            c for c, h in zip(fresh, holders, strict=True) if h is None or decode(h) != self._stream.consumer
        ]
        if not elsewhere:
            return False
        if entry_id not in self._deferred:
            log.info("alert.held_elsewhere", channels=elsewhere)
        self._deferred[entry_id] = (fields, self._first_seen(entry_id, fields))
        return True

    async def _older_undelivered(
        self, entry_id: str, fields: Fields, event: Event, channels: list[str]
    ) -> bool:
        if event.monitor_id is None:
            return False
        waiting: list[tuple[str, str]]
        if event.seq is not None:
            rows = await self._pool.fetch(
                """SELECT o.event_id::text AS event_id, d.dest, o.stream_id, o.payload,
                          o.published_at IS NOT NULL AS published
                   FROM outbox o CROSS JOIN LATERAL unnest(o.destinations) AS d(dest)
                   WHERE o.monitor_id = $1 AND o.seq < $2 AND o.seq >= $2 - $4
                     AND d.dest = ANY($3::text[])
                     AND NOT EXISTS (SELECT 1 FROM deliveries x WHERE x.event_id = o.event_id
                                     AND x.channel = d.dest AND x.status IN ('sent', 'dead'))""",
                event.monitor_id,
                event.seq,
                channels,
                ORDER_LOOKBACK,
            )
            tracked, unknown = split_older(rows, self._in_hand)
            for row in {r["event_id"]: r for r in tracked}.values():
                if row["published"] and await self._stream.lost(row["stream_id"]):
                    await self._republish(row["event_id"], row["payload"])
            waiting = [(r["event_id"], r["dest"]) for r in unknown]
            if tracked:
                if entry_id not in self._deferred:
                    log.info(
                        "alert.waits_for_older", seq=event.seq, older=[r["event_id"] for r in tracked][:10]
                    )
                self._deferred[entry_id] = (fields, self._first_seen(entry_id, fields))
                return True
        elif event.kind == "up" and event.after_event_id:  # a version 2 event: its own outage only
            pending = [c for c in channels if not self._in_hand(event.after_event_id, c)]
            done = {
                r["channel"]
                for r in await self._pool.fetch(
                    """SELECT channel FROM deliveries WHERE event_id = $1 AND channel = ANY($2::text[])
                       AND status IN ('sent', 'dead')""",
                    event.after_event_id,
                    pending,
                )
            }
            waiting = [(event.after_event_id, c) for c in pending if c not in done]
        else:
            waiting = []
        first_seen = self._first_seen(entry_id, fields)
        if waiting and time.monotonic() - first_seen < self._order_wait:
            if entry_id not in self._deferred:
                log.info("alert.waits_for_older", seq=event.seq, older=[e for e, _ in waiting][:10])
            self._deferred[entry_id] = (fields, first_seen)
            return True
        if waiting:
            log.warning(
                "alert.older_not_delivered",
                seq=event.seq,
                older=[e for e, _ in waiting][:10],
                waited_s=round(time.monotonic() - first_seen),
            )
        self._deferred.pop(entry_id, None)
        return False

    async def _republish(self, event_id: str, payload: dict[str, Any]) -> None:
        """Publish a lost event again (once, whichever alerter notices first); deliveries keep
        it from being sent twice where it did go."""
        claimed = await self._redis.set(
            f"{keys.REPUBLISHED_PREFIX}{event_id}",
            b"1",
            nx=True,
            ex=int(self._claim_idle * 2) + 1,
        )
        if not claimed:
            return
        (stream_id,) = await publish(self._redis, [payload])
        await self._pool.execute(
            "UPDATE outbox SET stream_id = $2 WHERE event_id = $1::uuid", event_id, stream_id
        )
        log.warning("alert.older_republished", older=event_id, stream_id=stream_id)

    # -- the sending keys ------------------------------------------------------------

    @property
    def _sending_ttl_ms(self) -> int:
        """How long a sending key lasts unrenewed: as long as a claim (a dead holder's lapse)."""
        return max(1, int(self._claim_idle * 1000))

    async def renew(self, held: list[tuple[str, str]]) -> None:
        """Renew the sending keys of the (event, destination) pairs in hand, as the claims are
        renewed: they lapse only when this alerter stops renewing."""
        for batch in _batches(held):
            pipe = self._redis.pipeline(transaction=False)
            for event_id, channel in batch:
                pipe.pexpire(sending_key(event_id, channel), self._sending_ttl_ms)
            await pipe.execute()

    async def hand_back(self, entry_ids: list[str], held: list[tuple[str, str]]) -> None:
        """Make the entries ``entry_ids`` still in hand (waiting for a retry, a rate limit or an
        earlier alert; the deferred ones too) claimable by the other alerters now, and the
        sending keys of ``held`` theirs to take."""
        ids = [*entry_ids, *self._deferred]
        if not ids:
            return
        try:
            await self._stream.claim(ids, keys.HANDBACK_IDLE_MS)
            for batch in _batches(held):  # theirs to send now, not after the keys lapse
                await self._redis.delete(*(sending_key(event_id, channel) for event_id, channel in batch))
            await self._stream.announce_hand_back()
            self.handed_back = len(ids)
            log.info("alerter.handed_back", entries=len(ids))
        except TRANSIENT as exc:  # they stay pending: the claim timeout still frees them
            log.warning("alerter.hand_back_failed", error=str(exc) or type(exc).__name__, entries=len(ids))


def _batches(pairs: list[tuple[str, str]]) -> Iterator[list[tuple[str, str]]]:
    for start in range(0, len(pairs), KEY_BATCH):
        yield pairs[start : start + KEY_BATCH]
