"""The alerter service: a consumer of the ``alerter`` group on ``monitor:events``.

Reading: new entries with XREADGROUP; entries left pending by a dead consumer are
taken over with XAUTOCLAIM (on start and periodically), while our own entries in hand
are re-claimed to ourselves (a heartbeat) so a live alerter is never robbed of them.

Delivering: each entry becomes one item per channel, handed to that chat's sender
(monitor.alerter.dispatch). The deliveries table, keyed by (event_id, channel), is
checked first, so a redelivered or reclaimed entry sends nothing twice.

Acknowledging: an entry is XACKed only when every channel of it has a final
outcome, sent or dead-lettered.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import aiohttp
import asyncpg
import redis.asyncio as aioredis
from aiohttp import web
from redis.exceptions import RedisError, ResponseError

from monitor import db, keys, probes
from monitor import logging as mlog
from monitor.alerter.channels import telegram
from monitor.alerter.channels.base import DestinationMoved
from monitor.alerter.dispatch import ChatSender, Item, RetryPolicy, stream_order
from monitor.alerter.metrics import AlerterMetrics
from monitor.alerter.ratelimit import BotLimiter
from monitor.config import Settings
from monitor.events import Event, EventFormatError
from monitor.health import ping_database, ping_redis

log = mlog.get(__name__)

TRANSIENT = (RedisError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError)
READ_COUNT = 100
# The longest a recovery waits for its outage's delivery by another alerter.
ORDER_WAIT = 120.0


@dataclass
class Entry:
    """A stream entry in hand, and the channels still without a final outcome."""

    entry_id: str
    open_channels: set[str] = field(default_factory=set)


class Alerter:
    name = "alerter"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.consumer = f"{socket.gethostname()}-{os.getpid()}"
        self.metrics = AlerterMetrics()
        self._retry = RetryPolicy(
            settings.alert_max_attempts,
            settings.alert_backoff_base_seconds,
            settings.alert_backoff_max_seconds,
        )
        self._stopping = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._entries: dict[str, Entry] = {}
        self._moved: dict[str, str] = {}  # Telegram chats that moved (old id -> new id)
        self._handed_back = 0
        self._handback_seen: Any = None  # the counter as last read (None: not read yet)
        self._senders: dict[str, ChatSender] = {}
        # (event_id, channel) of every item in hand, so a second copy of an event joins it.
        self._holding: dict[tuple[str, str], Item] = {}
        # Recoveries read before their outage was delivered (by another alerter): entry id ->
        # (fields, first seen). Looked at again on every read, and kept claimed meanwhile.
        self._deferred: dict[str, tuple[dict[Any, Any], float]] = {}
        self._bot = BotLimiter()
        self._pool: asyncpg.Pool | None = None
        self._redis: aioredis.Redis | None = None
        self._http: aiohttp.ClientSession | None = None
        self._telegram: telegram.TelegramConfig | None = None
        self._probes: web.AppRunner | None = None

    # -- lifecycle -----------------------------------------------------------------

    async def start(self) -> None:
        s = self.settings
        s.require("database_url", "redis_url")
        if s.telegram_bot_token is not None:
            self._telegram = telegram.TelegramConfig(s.telegram_bot_token, s.telegram_api_base)
            self._telegram.validate()
        else:
            log.warning("alerter.telegram_not_configured", hint="set MONITOR_TELEGRAM_BOT_TOKEN; events wait")
        self._pool = await db.create_pool(s.dsn, min_size=0, max_size=4)
        self._redis = aioredis.Redis.from_url(s.redis_dsn, socket_timeout=10, socket_connect_timeout=5)
        self._http = aiohttp.ClientSession(trust_env=False)
        # Bind the listener before any work starts: a port in use fails the start cleanly.
        self._probes = await probes.start(
            s.probe_host, s.alerter_http_port, self.metrics.registry, self._ready
        )
        if self._telegram is not None:
            self._tasks = [
                asyncio.create_task(self._consume(), name="consume"),
                asyncio.create_task(self._keep_claims(), name="claims"),
            ]

    async def _ready(self) -> dict[str, bool]:
        assert self._pool is not None and self._redis is not None
        return {"database": await ping_database(self._pool), "redis": await ping_redis(self._redis)}

    async def drain(self) -> None:
        """Stop reading; each chat finishes the send in hand; what still waits is handed back."""
        self._stopping.set()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await asyncio.gather(*(s.stop() for s in self._senders.values()), return_exceptions=True)
        await self._hand_back()

    async def _hand_back(self) -> None:
        """Make the entries still in hand (waiting for a retry, a rate limit or an earlier
        alert) claimable by the other alerters now: their idle time goes past any claim
        threshold, and a counter the others watch tells them to reclaim. Without it they
        waited MONITOR_ALERT_CLAIM_IDLE_SECONDS while newer alerts of the same monitors went out."""
        ids = [*self._entries, *self._deferred]
        if not ids or self._redis is None:
            return
        try:
            await self._set_idle(ids, keys.HANDBACK_IDLE_MS)
            await self._redis.incr(keys.HANDBACK_KEY)
            self._handed_back = len(ids)
            log.info("alerter.handed_back", entries=len(ids))
        except TRANSIENT as exc:  # they stay pending: the claim timeout still frees them
            log.warning("alerter.hand_back_failed", error=str(exc) or type(exc).__name__, entries=len(ids))

    def abandoned(self) -> list[str]:
        waiting = sum(s.waiting for s in self._senders.values())
        if not waiting:
            return []
        where = "handed back to the other alerters" if self._handed_back else "pending in the stream"
        return [f"{waiting} alerts waiting ({where})"]

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        if self._probes is not None:
            await self._probes.cleanup()
        if self._http is not None:
            await self._http.close()
        if self._redis is not None:
            await self._redis.aclose()
        if self._pool is not None:
            await self._pool.close()

    # -- reading -------------------------------------------------------------------

    async def _ensure_group(self) -> None:
        assert self._redis is not None
        try:
            await self._redis.xgroup_create(keys.EVENTS_STREAM, keys.ALERTER_GROUP, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    async def _consume(self) -> None:
        delay = 1.0
        group_ready = False
        next_reclaim = 0.0
        while not self._stopping.is_set():
            try:
                if not group_ready:
                    await self._ensure_group()
                    group_ready = True
                if await self._handback_announced() or time.monotonic() >= next_reclaim:
                    await self._reclaim()
                    next_reclaim = time.monotonic() + self.settings.alert_claim_idle_seconds / 2
                for entry_id, (fields, _) in list(self._deferred.items()):
                    await self._accept(entry_id, fields)
                for entry_id, fields in await self._read():
                    await self._accept(entry_id, fields)
                delay = 1.0
            except TRANSIENT as exc:
                if isinstance(exc, ResponseError) and "NOGROUP" in str(exc):
                    group_ready = False  # Redis restarted without its data: make the group again
                log.warning("alerter.read_failed", error=str(exc) or type(exc).__name__, retry_in_s=delay)
                await self._sleep(delay)
                delay = min(delay * 2, 10.0)

    async def _handback_announced(self) -> bool:
        """Whether another alerter handed entries back since we last looked (one GET a read)."""
        assert self._redis is not None
        seen = await self._redis.get(keys.HANDBACK_KEY)
        changed = self._handback_seen is not None and seen != self._handback_seen
        self._handback_seen = seen if seen is not None else b""
        return changed

    async def _sleep(self, seconds: float) -> None:
        try:
            await asyncio.wait_for(self._stopping.wait(), timeout=seconds)
        except TimeoutError:
            pass

    async def _read(self) -> list[tuple[str, dict[Any, Any]]]:
        assert self._redis is not None
        reply: Any = await self._redis.xreadgroup(
            keys.ALERTER_GROUP, self.consumer, {keys.EVENTS_STREAM: ">"}, count=READ_COUNT, block=1000
        )
        entries: list[tuple[str, dict[Any, Any]]] = []
        for _stream, items in reply or []:
            entries.extend((_decode(i), f) for i, f in items if f)
        return entries

    async def _reclaim(self) -> None:
        """Take over entries a dead consumer left pending for longer than the idle threshold."""
        assert self._redis is not None
        idle_ms = int(self.settings.alert_claim_idle_seconds * 1000)
        cursor = "0-0"
        while True:
            reply: Any = await self._redis.xautoclaim(
                keys.EVENTS_STREAM,
                keys.ALERTER_GROUP,
                self.consumer,
                min_idle_time=idle_ms,
                start_id=cursor,
                count=READ_COUNT,
            )
            cursor = _decode(reply[0])
            claimed = [(_decode(i), f) for i, f in reply[1] if f]
            if claimed:
                log.info("alerter.reclaimed", entries=len(claimed))
            for entry_id, fields in claimed:
                await self._accept(entry_id, fields)
            if cursor == "0-0":
                return

    async def _keep_claims(self) -> None:
        """Reset the idle time of our entries in hand, so no other alerter reclaims them."""
        period = self.settings.alert_claim_idle_seconds / 3
        while not self._stopping.is_set():
            await self._sleep(period)
            ids = [*self._entries, *self._deferred]
            if not ids or self._redis is None:
                continue
            try:
                await self._set_idle(ids, 0)
            except TRANSIENT as exc:
                log.warning("alerter.claim_refresh_failed", error=str(exc) or type(exc).__name__)

    async def _set_idle(self, ids: list[str], idle_ms: int) -> None:
        """Claim ``ids`` for ourselves with this idle time: 0 keeps them ours (no other alerter
        reclaims them), a very long one hands them to the next alerter that reclaims."""
        assert self._redis is not None
        for start in range(0, len(ids), 500):
            await self._redis.xclaim(
                keys.EVENTS_STREAM,
                keys.ALERTER_GROUP,
                self.consumer,
                min_idle_time=0,
                message_ids=list[Any](ids[start : start + 500]),
                idle=idle_ms,
                justid=True,
            )

    # -- dispatching ---------------------------------------------------------------

    async def _accept(self, entry_id: str, fields: dict[Any, Any]) -> None:
        """Turn one stream entry into items for the chat senders (or settle it at once)."""
        if entry_id in self._entries:
            return  # already in hand
        try:
            event = Event.from_fields(fields)
        except EventFormatError as exc:
            await self._dead_letter(
                entry_id, {_decode(k): _decode(v) for k, v in fields.items()}, None, str(exc)
            )
            await self._ack(entry_id)
            return
        with mlog.bound(event_id=event.event_id, monitor_id=event.monitor_id):
            channels = [f"telegram:{chat}" for chat in event.telegram_chats()]
            if not channels:
                log.info("alert.no_channel", kind=event.kind)
                await self._ack(entry_id)
                return
            assert self._pool is not None
            final = {
                r["channel"]
                for r in await self._pool.fetch(
                    """SELECT channel FROM deliveries
                       WHERE event_id = $1 AND channel = ANY($2::text[]) AND status IN ('sent', 'dead')""",
                    event.event_id,
                    channels,
                )
            }
            for channel in final:
                log.info("alert.duplicate_skipped", channel=channel)
                self.metrics.deliveries.labels("duplicate").inc()
            open_channels = [c for c in channels if c not in final]
            if not open_channels:
                self._deferred.pop(entry_id, None)
                await self._ack(entry_id)
                return
            if await self._outage_still_undelivered(entry_id, fields, event, open_channels):
                return
            self._entries[entry_id] = Entry(entry_id, set(open_channels))
            for channel in open_channels:
                held = self._holding.get((event.event_id, channel))
                if held is not None:
                    held.also.append(entry_id)
                    continue
                item = self._holding[(event.event_id, channel)] = Item(entry_id, event, channel)
                self._sender(channel.removeprefix("telegram:")).put(item)

    async def _outage_still_undelivered(
        self, entry_id: str, fields: dict[Any, Any], event: Event, channels: list[str]
    ) -> bool:
        """True (and the entry deferred) while a recovery's outage is in another alerter's hands.

        Within one alerter the chat sender keeps a monitor's order; across alerters only the
        delivery record can tell. An outage still undelivered after ORDER_WAIT is not waited
        for any longer (it may never have been meant for this channel).
        """
        if event.kind != "up" or not event.after_event_id:
            return False
        assert self._pool is not None
        waiting = [c for c in channels if (event.after_event_id, c) not in self._holding]
        if waiting:
            done = {
                r["channel"]
                for r in await self._pool.fetch(
                    """SELECT channel FROM deliveries WHERE event_id = $1 AND channel = ANY($2::text[])
                       AND status IN ('sent', 'dead')""",
                    event.after_event_id,
                    waiting,
                )
            }
            waiting = [c for c in waiting if c not in done]
        first_seen = self._deferred.get(entry_id, (fields, time.monotonic()))[1]
        if waiting and time.monotonic() - first_seen < ORDER_WAIT:
            if entry_id not in self._deferred:
                log.info("alert.recovery_waits_for_outage", after_event_id=event.after_event_id)
            self._deferred[entry_id] = (fields, first_seen)
            return True
        self._deferred.pop(entry_id, None)
        return False

    def _sender(self, chat_id: str) -> ChatSender:
        sender = self._senders.get(chat_id)
        if sender is None:
            sender = self._senders[chat_id] = ChatSender(
                chat_id,
                send=self._send_telegram,
                compose=partial(telegram.compose, max_age=self.settings.alert_max_age),
                on_outcome=self._settle,
                bot_limiter=self._bot,
                retry=self._retry,
                on_retry=self.metrics.retries.inc,
                max_age=self.settings.alert_max_age,
            )
        return sender

    async def _send_telegram(self, chat_id: str, text: str) -> None:
        assert self._http is not None and self._telegram is not None
        target = self._moved.get(chat_id, chat_id)
        try:
            await telegram.send(self._http, self._telegram, target, text)
        except DestinationMoved as exc:
            await self._chat_moved(target, exc.moved_to)
            self._moved[chat_id] = exc.moved_to
            await telegram.send(self._http, self._telegram, exc.moved_to, text)

    async def _chat_moved(self, old: str, new: str) -> None:
        """A group became a supergroup with a new chat id: the channels of the old one follow it,
        so the next events carry the new id (the ones already queued are sent there too)."""
        assert self._pool is not None
        moved = await self._pool.fetch(
            """UPDATE channels SET config = jsonb_set(config, '{chat_id}', to_jsonb($2::text)),
                                   updated_at = now()
               WHERE kind = 'telegram' AND config ->> 'chat_id' = $1 RETURNING id""",
            old,
            new,
        )
        log.info("telegram.chat_moved", old_chat=old, new_chat=new, channels=[r["id"] for r in moved])

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
            self.metrics.deliveries.labels(outcome).inc()
            if outcome == "sent":
                self.metrics.latency.observe(max(0.0, now - stream_order(item.entry_id)[0] / 1000))
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
        assert self._pool is not None
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
        assert self._redis is not None
        payload = {**fields, "error": error, "source_id": entry_id, "channel": channel or ""}
        await self._redis.xadd(
            keys.DEAD_STREAM,
            payload,  # type: ignore[arg-type]
            maxlen=keys.DEAD_MAXLEN,
            approximate=True,
        )
        self.metrics.dead_letters.inc()
        log.error("alert.dead_lettered", entry_id=entry_id, channel=channel, error=error)

    async def _ack(self, entry_id: str) -> None:
        assert self._redis is not None
        await self._redis.xack(keys.EVENTS_STREAM, keys.ALERTER_GROUP, entry_id)


def _decode(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
