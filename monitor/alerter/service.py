"""The alerter service: a consumer of the ``alerter`` group on ``monitor:events``.

An entry is acknowledged only once its delivery has a final outcome (sent, or
dead-lettered). The deliveries table, keyed by (event_id, channel), makes a
redelivered or reclaimed entry send nothing twice.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import socket
import time
from datetime import datetime
from typing import Any

import aiohttp
import asyncpg
import redis.asyncio as aioredis
from aiohttp import web
from redis.exceptions import RedisError, ResponseError

from monitor import db, keys, probes
from monitor import logging as mlog
from monitor.alerter.channels import telegram
from monitor.alerter.channels.base import DeliveryError
from monitor.alerter.metrics import AlerterMetrics
from monitor.config import Settings
from monitor.events import Event, EventFormatError
from monitor.health import ping_database, ping_redis

log = mlog.get(__name__)

TRANSIENT = (RedisError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError)


class Alerter:
    name = "alerter"

    def __init__(self, settings: Settings, *, max_attempts: int = 5, backoff_cap: float = 30.0) -> None:
        self.settings = settings
        self.consumer = f"{socket.gethostname()}-{os.getpid()}"
        self._max_attempts = max_attempts
        self._backoff_cap = backoff_cap
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._in_hand: str | None = None
        self._pool: asyncpg.Pool | None = None
        self._redis: aioredis.Redis | None = None
        self._http: aiohttp.ClientSession | None = None
        self._telegram: telegram.TelegramConfig | None = None
        self.metrics = AlerterMetrics()
        self._probes: web.AppRunner | None = None

    async def start(self) -> None:
        s = self.settings
        s.require("database_url", "redis_url")
        if s.telegram_bot_token is not None:
            self._telegram = telegram.TelegramConfig(s.telegram_bot_token, s.telegram_api_base)
            self._telegram.validate()
        else:
            log.warning("alerter.telegram_not_configured", hint="set MONITOR_TELEGRAM_BOT_TOKEN; events wait")
        self._pool = await db.create_pool(s.dsn, min_size=1, max_size=4)
        self._redis = aioredis.Redis.from_url(s.redis_dsn, socket_timeout=10, socket_connect_timeout=5)
        self._http = aiohttp.ClientSession(trust_env=False)
        self._task = asyncio.create_task(self._run(), name="consume")
        self._probes = await probes.start(
            s.probe_host, s.alerter_http_port, self.metrics.registry, self._ready
        )

    async def _ready(self) -> dict[str, bool]:
        assert self._pool is not None and self._redis is not None
        return {"database": await ping_database(self._pool), "redis": await ping_redis(self._redis)}

    async def drain(self) -> None:
        """Stop reading; the send in hand finishes."""
        self._stopping.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    def abandoned(self) -> list[str]:
        return [f"stream entry {self._in_hand} (stays pending, redelivered later)"] if self._in_hand else []

    async def close(self) -> None:
        if self._probes is not None:
            await self._probes.cleanup()
        if self._task is not None and not self._task.done():
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._http is not None:
            await self._http.close()
        if self._redis is not None:
            await self._redis.aclose()
        if self._pool is not None:
            await self._pool.close()

    # -- consuming -----------------------------------------------------------------

    async def _ensure_group(self) -> None:
        assert self._redis is not None
        try:
            await self._redis.xgroup_create(keys.EVENTS_STREAM, keys.ALERTER_GROUP, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    async def _run(self) -> None:
        delay = 1.0
        group_ready = False
        while not self._stopping.is_set():
            if self._telegram is None:
                await self._sleep(3600)
                continue
            try:
                if not group_ready:
                    await self._ensure_group()
                    group_ready = True
                # Own pending entries first (a failed send), then those of dead consumers, then new.
                batch = await self._read("0") or await self._reclaim() or await self._read(">", block_ms=1000)
                for entry_id, fields in batch:
                    if self._stopping.is_set():
                        break
                    await self._handle(entry_id, fields)
                delay = 1.0
            except TRANSIENT as exc:
                group_ready = group_ready and not isinstance(exc, ResponseError)
                log.warning("alerter.loop_failed", error=str(exc) or type(exc).__name__, retry_in_s=delay)
                await self._sleep(delay)
                delay = min(delay * 2, 10.0)

    async def _sleep(self, seconds: float) -> None:
        try:
            await asyncio.wait_for(self._stopping.wait(), timeout=seconds)
        except TimeoutError:
            pass

    async def _read(self, from_id: str, block_ms: int | None = None) -> list[tuple[str, dict[Any, Any]]]:
        assert self._redis is not None
        reply: Any = await self._redis.xreadgroup(
            keys.ALERTER_GROUP, self.consumer, {keys.EVENTS_STREAM: from_id}, count=10, block=block_ms
        )
        entries: list[tuple[str, dict[Any, Any]]] = []
        for _stream, items in reply or []:
            entries.extend((_decode(i), f) for i, f in items if f)
        return entries

    async def _reclaim(self) -> list[tuple[str, dict[Any, Any]]]:
        assert self._redis is not None
        idle_ms = int(self.settings.alert_claim_idle_seconds * 1000)
        reply: Any = await self._redis.xautoclaim(
            keys.EVENTS_STREAM, keys.ALERTER_GROUP, self.consumer, min_idle_time=idle_ms, count=10
        )
        claimed = [(_decode(i), f) for i, f in reply[1] if f]
        if claimed:
            log.info("alerter.reclaimed", entries=len(claimed))
        return claimed

    async def _handle(self, entry_id: str, fields: dict[Any, Any]) -> None:
        assert self._redis is not None and self._pool is not None and self._telegram is not None
        self._in_hand = entry_id
        try:
            try:
                event = Event.from_fields(fields)
            except EventFormatError as exc:
                await self._dead_letter(entry_id, fields, str(exc))
                return
            with mlog.bound(event_id=event.event_id, monitor_id=event.monitor_id):
                if not event.telegram_chat_id:
                    log.info("alert.no_channel", kind=event.kind)
                    await self._ack(entry_id)
                    return
                channel = f"telegram:{event.telegram_chat_id}"
                if await self._pool.fetchval(
                    """SELECT status FROM deliveries
                       WHERE event_id = $1 AND channel = $2 AND status <> 'sending'""",
                    event.event_id,
                    channel,
                ):
                    log.info("alert.duplicate_skipped", channel=channel)
                    self.metrics.deliveries.labels("duplicate").inc()
                    await self._ack(entry_id)
                    return
                await self._deliver(entry_id, event, channel)
        finally:
            self._in_hand = None

    async def _deliver(self, entry_id: str, event: Event, channel: str) -> None:
        assert self._pool is not None and self._http is not None and self._telegram is not None
        text = telegram.render(event)
        for attempt in range(1, self._max_attempts + 1):
            await self._pool.execute(
                """INSERT INTO deliveries (event_id, channel, status, attempts) VALUES ($1, $2, 'sending', 1)
                   ON CONFLICT (event_id, channel) DO UPDATE SET attempts = deliveries.attempts + 1""",
                event.event_id,
                channel,
            )
            try:
                await telegram.send(self._http, self._telegram, event.telegram_chat_id or "", text)
            except DeliveryError as exc:
                await self._pool.execute(
                    "UPDATE deliveries SET last_error = $3 WHERE event_id = $1 AND channel = $2",
                    event.event_id,
                    channel,
                    str(exc),
                )
                log.warning(
                    "alert.send_failed",
                    channel=channel,
                    attempt=attempt,
                    error=str(exc),
                    permanent=exc.permanent,
                )
                if exc.permanent or attempt == self._max_attempts:
                    self.metrics.deliveries.labels("dead").inc()
                    await self._mark(event, channel, "dead")
                    await self._dead_letter(
                        entry_id, {keys.EVENT_FIELD: json.dumps(event.to_dict())}, str(exc)
                    )
                    return
                self.metrics.retries.inc()
                backoff = min(self._backoff_cap, 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)
                await asyncio.sleep(max(exc.retry_after or 0.0, backoff))
                continue
            await self._mark(event, channel, "sent")
            self.metrics.deliveries.labels("sent").inc()
            self.metrics.latency.observe(max(0.0, time.time() - _epoch(event.at)))
            log.info("alert.sent", channel=channel, kind=event.kind, attempt=attempt)
            await self._ack(entry_id)
            return

    async def _mark(self, event: Event, channel: str, status: str) -> None:
        assert self._pool is not None
        await self._pool.execute(
            """UPDATE deliveries SET status = $3, sent_at = CASE WHEN $3 = 'sent' THEN now() END
               WHERE event_id = $1 AND channel = $2""",
            event.event_id,
            channel,
            status,
        )

    async def _dead_letter(self, entry_id: str, fields: dict[Any, Any], error: str) -> None:
        assert self._redis is not None
        payload = {_decode(k): _decode(v) for k, v in fields.items()}
        payload.update({"error": error, "source_id": entry_id})
        await self._redis.xadd(
            keys.DEAD_STREAM,
            payload,  # type: ignore[arg-type]
            maxlen=keys.DEAD_MAXLEN,
            approximate=True,
        )
        log.error("alert.dead_lettered", entry_id=entry_id, error=error)
        self.metrics.dead_letters.inc()
        await self._ack(entry_id)

    async def _ack(self, entry_id: str) -> None:
        assert self._redis is not None
        await self._redis.xack(keys.EVENTS_STREAM, keys.ALERTER_GROUP, entry_id)


def _epoch(rfc3339: str) -> float:
    return datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp()


def _decode(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
