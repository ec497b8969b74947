"""Deliveries: what this alerter has in hand, who sends it, and the record of what became of it.

- **Once**: the deliveries table, keyed by (event_id, destination), is the idempotency record;
  an entry redelivered or reclaimed looks there first (:meth:`Deliveries.open_channels`) and
  sends nothing that is already final (sent or dead). A second copy of an event already in hand
  joins the first item (``Item.also``) and settles with it.
- **Senders**: one per destination (monitor/alerter/dispatch.py), made on its first item, paced
  by the limits its kind declares (the shared pacer), its kind's sealed secrets opened for the
  send only.
- **Outcomes**: each final outcome is recorded (retried until it is: the message has gone, or is
  dead, whatever the database does meanwhile), dead ones also go to ``monitor:events:dead``, and
  a stream entry is acknowledged once every destination of it has a final outcome.
- **Unreadable** entries (an event this version cannot read) are dead for the destinations the
  outbox knows, so a monitor's newer events do not wait for them.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import asyncpg
import redis.asyncio as aioredis

from monitor import channels as registry
from monitor import keys
from monitor import logging as mlog
from monitor.alerter.dispatch import DestinationSender, Item, RetryPolicy, stream_order
from monitor.alerter.metrics import AlerterMetrics
from monitor.alerter.pacing import SharedPacer
from monitor.alerter.stream import TRANSIENT, Fields, decode
from monitor.channels.base import ChannelKind, DeliveryError, SendContext
from monitor.events import Event
from monitor.secrets import SecretKeyError

log = mlog.get(__name__)


@dataclass
class Entry:
    """A stream entry in hand, and the channels still without a final outcome."""

    entry_id: str
    open_channels: set[str] = field(default_factory=set)


class Deliveries:
    """The items in hand and their senders. ``ack`` acknowledges a stream entry; ``max_age``:
    alerts older than this (seconds) when they can first be sent arrive summed up."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        redis: aioredis.Redis,
        ctx: SendContext,
        pacer: SharedPacer,
        metrics: AlerterMetrics,
        ack: Callable[[str], Awaitable[None]],
        *,
        retry: RetryPolicy,
        max_age: float,
    ) -> None:
        self._pool = pool
        self._redis = redis
        self._ctx = ctx
        self._pacer = pacer
        self._metrics = metrics
        self._ack = ack
        self._retry = retry
        self._max_age = max_age
        self._entries: dict[str, Entry] = {}
        self._senders: dict[str, DestinationSender] = {}
        # (event_id, channel) of every item in hand, so a second copy of an event joins it.
        self._holding: dict[tuple[str, str], Item] = {}

    # -- what is in hand -------------------------------------------------------------

    def has_entry(self, entry_id: str) -> bool:
        return entry_id in self._entries

    def entry_ids(self) -> list[str]:
        return list(self._entries)

    def holds(self, event_id: str, channel: str) -> bool:
        return (event_id, channel) in self._holding

    def held(self) -> list[tuple[str, str]]:
        """The (event id, destination) of every item in hand."""
        return list(self._holding)

    @property
    def waiting(self) -> int:
        """Items the senders have not settled yet."""
        return sum(s.waiting for s in self._senders.values())

    async def stop(self) -> None:
        """Each sender finishes the send in hand and takes no other."""
        await asyncio.gather(*(s.stop() for s in self._senders.values()), return_exceptions=True)

    # -- taking in hand --------------------------------------------------------------

    async def open_channels(self, event: Event, channels: list[str], *, quiet: bool = False) -> list[str]:
        """The ``channels`` of ``event`` without a final delivery; the others are counted and
        logged as duplicates skipped (unless ``quiet``: an entry looked at again)."""
        final = {
            r["channel"]
            for r in await self._pool.fetch(
                """SELECT channel FROM deliveries
                   WHERE event_id = $1 AND channel = ANY($2::text[]) AND status IN ('sent', 'dead')""",
                event.event_id,
                channels,
            )
        }
        if not quiet:
            for channel in final:
                log.info("alert.duplicate_skipped", channel=channel)
                self._metrics.deliveries.labels("duplicate").inc()
        return [c for c in channels if c not in final]

    def take(
        self, entry_id: str, event: Event, targets: Mapping[str, Mapping[str, Any]], channels: list[str]
    ) -> None:
        """Hand the entry's ``channels`` to their senders (``targets``: destination -> the channel
        as the event carries it); a destination of the event already in hand settles with it."""
        self._entries[entry_id] = Entry(entry_id, set(channels))
        for channel in channels:
            held = self._holding.get((event.event_id, channel))
            if held is not None:
                held.also.append(entry_id)
                continue
            item = self._holding[(event.event_id, channel)] = Item(
                entry_id, event, channel, target=targets[channel]
            )
            kind = registry.get(str(targets[channel].get("kind")))
            assert kind is not None  # targets() keeps only known kinds
            self._sender(channel, kind, targets[channel]).put(item)

    async def unreadable(self, entry_id: str, fields: Fields, error: str) -> None:
        """An entry that is no event this version reads: dead-lettered as it came, and final
        (dead) for its destinations as the outbox knows them, so its monitor's newer events do
        not wait for it. The caller acknowledges it."""
        await self._dead_letter(entry_id, {decode(k): decode(v) for k, v in fields.items()}, None, error)
        raw = fields.get(keys.EVENT_FIELD.encode()) or fields.get(keys.EVENT_FIELD) or b"{}"
        try:
            event_id = str(uuid.UUID(str(json.loads(decode(raw)).get("event_id"))))
        except (ValueError, TypeError, AttributeError):
            return
        await self._pool.execute(
            """INSERT INTO deliveries (event_id, channel, status, attempts, last_error)
               SELECT o.event_id, d.dest, 'dead', 0, $2 FROM outbox o, unnest(o.destinations) AS d(dest)
               WHERE o.event_id = $1::uuid
               ON CONFLICT (event_id, channel) DO NOTHING""",
            event_id,
            error,
        )

    # -- the senders -----------------------------------------------------------------

    def _sender(self, key: str, kind: ChannelKind, channel: Mapping[str, Any]) -> DestinationSender:
        sender = self._senders.get(key)
        if sender is None:
            ctx, pacer = self._ctx, self._pacer

            buckets = kind.limits(key)
            if kind.shared_limits is not None:
                try:
                    buckets += kind.shared_limits(self._reveal(kind, channel))
                except DeliveryError:
                    pass  # a secret no key opens: its sends fail on their own, with the reason

            async def pace() -> float:
                return await pacer.reserve(buckets, destination=key)

            async def send(channel: Mapping[str, Any], payload: Any) -> float | None:
                opened = self._reveal(kind, channel)
                try:
                    return await kind.send(ctx, opened, payload)
                except (KeyError, TypeError, ValueError) as exc:
                    # Settings this version cannot read (an event from an older or newer one):
                    # no retry can change them, and the sender must not crash on them forever.
                    raise DeliveryError(
                        f"{kind.name} channel settings unreadable: {type(exc).__name__}", permanent=True
                    ) from None

            sender = self._senders[key] = DestinationSender(
                key,
                send=send,
                compose=partial(kind.compose, max_age=self._max_age),
                on_outcome=self._settle,
                retry=self._retry,
                pace=pace,
                block=partial(pacer.block, key),
                unavailable=partial(kind.unavailable, ctx),
                on_retry=self._metrics.retries.inc,
                max_age=self._max_age,
            )
        return sender

    def _reveal(self, kind: ChannelKind, channel: Mapping[str, Any]) -> dict[str, Any]:
        """The channel with its sealed secrets opened, for the send only."""
        opened = dict(channel)
        for name in kind.secrets:
            value = opened.get(name)
            if isinstance(value, str):
                try:
                    opened[name] = self._ctx.reveal(value)
                except SecretKeyError as exc:  # a key that does not open it: the operator can fix that
                    raise DeliveryError(f"cannot open the channel's {name}: {exc}", permanent=False) from None
        return opened

    # -- outcomes --------------------------------------------------------------------

    async def _settle(self, items: list[Item], outcome: str, error: str | None) -> None:
        """Record the outcome of each item, then ack the entries that have no open channel.

        The message has gone (or is dead) whatever happens here, so recording is retried
        until it succeeds rather than letting the send be repeated.
        """
        delay = 0.5
        while True:
            try:
                await self._record(items, outcome, error)
                break
            except TRANSIENT as exc:
                log.warning("alert.record_failed", error=str(exc) or type(exc).__name__, retry_in_s=delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10.0)
        now = time.time()
        for item in items:
            self._metrics.deliveries.labels(outcome).inc()
            if outcome == "sent":
                self._metrics.latency.observe(max(0.0, now - stream_order(item.entry_id)[0] / 1000))
            log.info(
                "alert.sent" if outcome == "sent" else "alert.dead",
                event_id=item.event.event_id,
                monitor_id=item.event.monitor_id,
                kind=item.event.kind,
                channel=item.channel,
                attempts=item.attempts + 1 if outcome == "sent" else item.attempts,
                batch=len(items),
            )

    async def _record(self, items: list[Item], outcome: str, error: str | None) -> None:
        await self._pool.execute(
            """INSERT INTO deliveries (event_id, channel, status, attempts, last_error, sent_at)
               SELECT u.event_id, u.channel, $3, u.attempts, $4, CASE WHEN $3 = 'sent' THEN now() END
               FROM unnest($1::uuid[], $2::text[], $5::int[]) AS u(event_id, channel, attempts)
               ON CONFLICT (event_id, channel) DO UPDATE SET
                   status = excluded.status, attempts = greatest(deliveries.attempts, excluded.attempts),
                   last_error = excluded.last_error, sent_at = excluded.sent_at""",
            [i.event.event_id for i in items],
            [i.channel for i in items],
            outcome,
            error,
            [i.attempts + (1 if outcome == "sent" else 0) for i in items],
        )
        for item in items:
            if outcome == "dead":
                await self._dead_letter(
                    item.entry_id,
                    {keys.EVENT_FIELD: json.dumps(item.event.to_dict())},
                    item.channel,
                    error or "",
                )
            self._holding.pop((item.event.event_id, item.channel), None)
            for entry_id in (item.entry_id, *item.also):
                entry = self._entries.get(entry_id)
                if entry is None:
                    continue
                entry.open_channels.discard(item.channel)
                if not entry.open_channels:
                    await self._ack(entry_id)
                    del self._entries[entry_id]

    async def _dead_letter(
        self, entry_id: str, fields: dict[str, str], channel: str | None, error: str
    ) -> None:
        payload = {**fields, "error": error, "source_id": entry_id, "channel": channel or ""}
        await self._redis.xadd(
            keys.DEAD_STREAM,
            payload,  # type: ignore[arg-type]
            maxlen=keys.DEAD_MAXLEN,
            approximate=True,
        )
        self._metrics.dead_letters.inc()
        log.error("alert.dead_lettered", entry_id=entry_id, channel=channel, error=error)


async def follow_move(pool: asyncpg.Pool, kind: str, field_name: str, old: str, new: str) -> None:
    """A destination moved (a Telegram group became a supergroup with a new chat id): the
    channels naming the old one follow it, so the next events carry the new address (the ones
    already queued are sent there too). ``SendContext.on_moved``, with the pool bound."""
    moved = await pool.fetch(
        """UPDATE channels SET config = jsonb_set(config, ARRAY[$3::text], to_jsonb($2::text)),
                               updated_at = now()
           WHERE kind = $4 AND config ->> $3 = $1 RETURNING id""",
        old,
        new,
        field_name,
        kind,
    )
    log.info(f"{kind}.destination_moved", old=old, new=new, channels=[r["id"] for r in moved])
