"""The alerter service: a consumer of the ``alerter`` group on ``monitor:events``.

Reading: new entries with XREADGROUP; entries left pending by a dead consumer are
taken over with XAUTOCLAIM (on start and periodically), while our own entries in hand
are re-claimed to ourselves (a heartbeat) so a live alerter is never robbed of them.

Delivering: each entry becomes one item per channel, handed to that chat's sender
(monitor.alerter.dispatch). The deliveries table, keyed by (event_id, channel), is
checked first, so a redelivered or reclaimed entry sends nothing twice; and an alerter takes
an (event, channel) in hand only under a key in Redis that no other alerter holds
(``_held_elsewhere``), so two copies of one event in two alerters' hands at once (the relay
published it twice) are sent once.

Acknowledging: an entry is XACKed only when every channel of it has a final
outcome, sent or dead-lettered.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import aiohttp
import asyncpg
import redis.asyncio as aioredis
from aiohttp import web
from redis.exceptions import RedisError, ResponseError

from monitor import channels as registry
from monitor import db, keys, probes, redisconn
from monitor import logging as mlog
from monitor.alerter.dispatch import DestinationSender, Item, RetryPolicy, stream_order
from monitor.alerter.history import DeliveryHistory
from monitor.alerter.metrics import AlerterMetrics
from monitor.alerter.pacing import SharedPacer
from monitor.channels import telegram
from monitor.channels.base import ChannelKind, DeliveryError, SendContext, WebClient
from monitor.config import Settings
from monitor.events import Event, EventFormatError, publish
from monitor.health import ping_database, ping_redis
from monitor.net.client import HttpSession, make_session
from monitor.net.policy import AddressPolicy, log_allow_list
from monitor.net.resolver import VettedResolver
from monitor.net.session import tls_context
from monitor.secrets import SecretKeyError

log = mlog.get(__name__)

TRANSIENT = (RedisError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError)
READ_COUNT = 100
# How far back in a monitor's sequence an event looks for older ones still undelivered.
ORDER_LOOKBACK = 200


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
        self._handed_back = 0
        self._handback_seen: Any = None  # the counter as last read (None: not read yet)
        self._senders: dict[str, DestinationSender] = {}
        # (event_id, channel) of every item in hand, so a second copy of an event joins it.
        self._holding: dict[tuple[str, str], Item] = {}
        # Events read while an older event of the same monitor for the same destination was
        # still undelivered elsewhere: entry id -> (fields, first seen). Looked at again on
        # every read, and kept claimed meanwhile.
        self._deferred: dict[str, tuple[dict[Any, Any], float]] = {}
        # The longest an event waits for an older one that no alerter seems to deliver (its
        # stream entry lost with a Redis that kept no data): every retry of it, and a takeover.
        self._order_wait = max(
            120.0,
            settings.alert_max_attempts * settings.alert_backoff_max_seconds
            + 2 * settings.alert_claim_idle_seconds,
        )
        self._pool: asyncpg.Pool | None = None
        self._redis: aioredis.Redis | None = None
        self._http: aiohttp.ClientSession | None = None
        self._web: HttpSession | None = None
        self._pacer: SharedPacer | None = None
        self._ctx: SendContext | None = None
        self._probes: web.AppRunner | None = None

    # -- lifecycle -----------------------------------------------------------------

    async def start(self) -> None:
        s = self.settings
        s.require("database_url", "redis_url", "secret_key")
        box = s.secret_box()
        if s.telegram_bot_token is not None:
            telegram.TelegramConfig(s.telegram_bot_token, s.telegram_api_base).validate()
        else:
            log.warning(
                "alerter.telegram_not_configured", hint="set MONITOR_TELEGRAM_BOT_TOKEN; Telegram alerts wait"
            )
        self._pool = await db.create_pool(s.dsn, min_size=0, max_size=4)
        self._redis = redisconn.from_settings(s, socket_timeout=10, socket_connect_timeout=5)
        self._http = aiohttp.ClientSession(trust_env=False)
        # User-supplied URLs (webhooks, Slack, Discord...) go through the checks' guarded client.
        policy = AddressPolicy(s.allow_cidrs)
        log_allow_list(log, policy)
        self._web = make_session(
            VettedResolver(policy, s.dns_servers), limit=50, ssl_context=tls_context(s.ca_file)
        )
        self._pacer = SharedPacer(self._redis, history=DeliveryHistory(self._pool))
        self._ctx = SendContext(
            http=self._http,
            web=WebClient(self._web, policy),
            settings=s,
            reveal=box.open,
            on_moved=self._destination_moved,
            resolver=self._web.resolver,
        )
        # Bind the listener before any work starts: a port in use fails the start cleanly.
        self._probes = await probes.start(
            s.probe_host, s.alerter_http_port, self.metrics.registry, self._ready
        )
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
            held = [_sending_key(event_id, channel) for event_id, channel in self._holding]
            for start in range(0, len(held), 500):  # theirs to send now, not after the keys lapse
                await self._redis.delete(*held[start : start + 500])
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
        if self._web is not None:
            await self._web.close()
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
                await self._keep_sending_keys()
            except TRANSIENT as exc:
                log.warning("alerter.claim_refresh_failed", error=str(exc) or type(exc).__name__)

    @property
    def _sending_ttl_ms(self) -> int:
        """How long a sending key lasts unrenewed: as long as a claim (a dead holder's lapse)."""
        return max(1, int(self.settings.alert_claim_idle_seconds * 1000))

    async def _keep_sending_keys(self) -> None:
        """Renew the keys of the (event, destination) pairs in hand (``_held_elsewhere``), as
        the claims are renewed: they lapse only when this alerter stops renewing."""
        assert self._redis is not None
        held = list(self._holding)
        for start in range(0, len(held), 500):
            pipe = self._redis.pipeline(transaction=False)
            for event_id, channel in held[start : start + 500]:
                pipe.pexpire(_sending_key(event_id, channel), self._sending_ttl_ms)
            await pipe.execute()

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
            await self._unreadable(fields, str(exc))
            await self._ack(entry_id)
            return
        with mlog.bound(event_id=event.event_id, monitor_id=event.monitor_id):
            targets = event.targets(registry.destination)
            channels = list(targets)
            if not channels:
                log.info("alert.no_channel", kind=event.kind)
                self._deferred.pop(entry_id, None)
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
            if entry_id not in self._deferred:  # a deferred entry is looked at again every read
                for channel in final:
                    log.info("alert.duplicate_skipped", channel=channel)
                    self.metrics.deliveries.labels("duplicate").inc()
            open_channels = [c for c in channels if c not in final]
            if not open_channels:
                self._deferred.pop(entry_id, None)
                await self._ack(entry_id)
                return
            if await self._older_undelivered(entry_id, fields, event, open_channels):
                return
            if await self._held_elsewhere(entry_id, fields, event, open_channels):
                return
            self._deferred.pop(entry_id, None)
            self._entries[entry_id] = Entry(entry_id, set(open_channels))
            for channel in open_channels:
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

    async def _held_elsewhere(
        self, entry_id: str, fields: dict[Any, Any], event: Event, channels: list[str]
    ) -> bool:
        """True (and the entry deferred) while another alerter has this event in hand for one of
        ``channels``: a second copy of it on the stream (the relay's XADD went through and
        marking its row failed) that reached another alerter than the first. The first to take
        (event, destination) sends it; the other looks again at every read, and acks once the
        delivery is recorded, or sends it should the holder die (its key lapses with its claim).
        Checking the deliveries table alone left a window: both copies in hand before either
        was recorded, and sent twice."""
        assert self._redis is not None
        fresh = [c for c in channels if (event.event_id, c) not in self._holding]
        if not fresh:
            return False
        pipe = self._redis.pipeline(transaction=False)
        for channel in fresh:
            key = _sending_key(event.event_id, channel)
            pipe.set(key, self.consumer, nx=True, px=self._sending_ttl_ms)
            pipe.get(key)
        holders = (await pipe.execute())[1::2]
        elsewhere = [
            c for c, h in zip(fresh, holders, strict=True) if h is None or _decode(h) != self.consumer
        ]
        if not elsewhere:
            return False
        if entry_id not in self._deferred:
            log.info("alert.held_elsewhere", channels=elsewhere)
        self._deferred[entry_id] = (fields, self._deferred.get(entry_id, (fields, time.monotonic()))[1])
        return True

    async def _older_undelivered(
        self, entry_id: str, fields: dict[Any, Any], event: Event, channels: list[str]
    ) -> bool:
        """True (and the entry deferred) while an older event of the same monitor for one of
        ``channels`` has no final delivery and is not in our hands. Within one alerter the
        destination's sender keeps the order; across alerters, this.

        Events carry their place in the monitor's sequence (``seq``); the outbox says which
        older ones went to which destinations, and where each went on the stream. One still
        pending in the group (another alerter holds it, however long it is throttled or backs
        off, or it waits for a reclaim), not yet read, or not yet published is waited for; one
        that is none of these (lost with a Redis that kept no data, trimmed) is published again
        and then waited for. Only an older event whose stream entry is unknown (written before
        migration 008) is given up after the order wait.
        """
        if event.monitor_id is None:
            return False
        assert self._pool is not None
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
            rows = [r for r in rows if (r["event_id"], r["dest"]) not in self._holding]
            tracked = [r for r in rows if r["stream_id"] is not None or not r["published"]]
            unknown = [r for r in rows if r not in tracked]
            for row in {r["event_id"]: r for r in tracked}.values():
                if row["published"] and await self._lost(row["stream_id"]):
                    await self._republish(row["event_id"], row["payload"])
            waiting = [(r["event_id"], r["dest"]) for r in unknown]
            if tracked:
                if entry_id not in self._deferred:
                    log.info(
                        "alert.waits_for_older", seq=event.seq, older=[r["event_id"] for r in tracked][:10]
                    )
                self._deferred[entry_id] = (
                    fields,
                    self._deferred.get(entry_id, (fields, time.monotonic()))[1],
                )
                return True
        elif event.kind == "up" and event.after_event_id:  # a version 2 event: its own outage only
            pending = [c for c in channels if (event.after_event_id, c) not in self._holding]
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
        first_seen = self._deferred.get(entry_id, (fields, time.monotonic()))[1]
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

    async def _unreadable(self, fields: dict[Any, Any], error: str) -> None:
        """An event this alerter cannot read is final (dead) for its destinations as the outbox
        knows them, so its monitor's newer events do not wait for it."""
        assert self._pool is not None
        raw = fields.get(keys.EVENT_FIELD.encode()) or fields.get(keys.EVENT_FIELD) or b"{}"
        try:
            event_id = str(uuid.UUID(str(json.loads(_decode(raw)).get("event_id"))))
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

    async def _lost(self, stream_id: str) -> bool:
        """Whether the stream entry ``stream_id`` is nowhere: not pending in the group (no alerter
        holds it or will reclaim it), and not waiting to be read."""
        assert self._redis is not None
        pending: Any = await self._redis.xpending_range(
            keys.EVENTS_STREAM, keys.ALERTER_GROUP, min=stream_id, max=stream_id, count=1
        )
        if pending:
            return False
        groups: Any = await self._redis.xinfo_groups(keys.EVENTS_STREAM)
        last = next(
            (_decode(g["last-delivered-id"]) for g in groups if _decode(g["name"]) == keys.ALERTER_GROUP),
            "0-0",
        )
        if stream_order(stream_id) <= stream_order(last):
            return True  # read and acknowledged without a final delivery, or gone
        return not await self._redis.xrange(keys.EVENTS_STREAM, min=stream_id, max=stream_id, count=1)

    async def _republish(self, event_id: str, payload: dict[str, Any]) -> None:
        """Publish a lost event again (once, whichever alerter notices first); deliveries keep
        it from being sent twice where it did go."""
        assert self._redis is not None and self._pool is not None
        claimed = await self._redis.set(
            f"{keys.REPUBLISHED_PREFIX}{event_id}",
            b"1",
            nx=True,
            ex=int(self.settings.alert_claim_idle_seconds * 2) + 1,
        )
        if not claimed:
            return
        (stream_id,) = await publish(self._redis, [payload])
        await self._pool.execute(
            "UPDATE outbox SET stream_id = $2 WHERE event_id = $1::uuid", event_id, stream_id
        )
        log.warning("alert.older_republished", older=event_id, stream_id=stream_id)

    def _sender(self, key: str, kind: ChannelKind, channel: Mapping[str, Any]) -> DestinationSender:
        sender = self._senders.get(key)
        if sender is None:
            assert self._ctx is not None and self._pacer is not None
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
                compose=partial(kind.compose, max_age=self.settings.alert_max_age),
                on_outcome=self._settle,
                retry=self._retry,
                pace=pace,
                block=partial(pacer.block, key),
                unavailable=partial(kind.unavailable, ctx),
                on_retry=self.metrics.retries.inc,
                max_age=self.settings.alert_max_age,
            )
        return sender

    def _reveal(self, kind: ChannelKind, channel: Mapping[str, Any]) -> dict[str, Any]:
        """The channel with its sealed secrets opened, for the send only."""
        assert self._ctx is not None
        opened = dict(channel)
        for name in kind.secrets:
            value = opened.get(name)
            if isinstance(value, str):
                try:
                    opened[name] = self._ctx.reveal(value)
                except SecretKeyError as exc:  # a key that does not open it: the operator can fix that
                    raise DeliveryError(f"cannot open the channel's {name}: {exc}", permanent=False) from None
        return opened

    async def _destination_moved(self, kind: str, field_name: str, old: str, new: str) -> None:
        """A destination moved (a Telegram group became a supergroup with a new chat id): the
        channels naming the old one follow it, so the next events carry the new address (the
        ones already queued are sent there too)."""
        assert self._pool is not None
        moved = await self._pool.fetch(
            """UPDATE channels SET config = jsonb_set(config, ARRAY[$3::text], to_jsonb($2::text)),
                                   updated_at = now()
               WHERE kind = $4 AND config ->> $3 = $1 RETURNING id""",
            old,
            new,
            field_name,
            kind,
        )
        log.info(f"{kind}.destination_moved", old=old, new=new, channels=[r["id"] for r in moved])

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


def _sending_key(event_id: str, channel: str) -> str:
    return f"{keys.SENDING_PREFIX}{event_id}:{channel}"


def _decode(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
