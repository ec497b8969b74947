"""The dead-letter stream: list what could not be delivered, and re-drive it.

A dead letter carries the event, the channel that failed and the last error. Re-driving
forgets that channel's 'dead' delivery record and puts the event back on
``monitor:events``, so the alerter tries that channel again; channels already sent
are skipped by the delivery key as always.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import asyncpg
import redis.asyncio as aioredis

from monitor import keys


@dataclass(frozen=True)
class DeadLetter:
    id: str
    at: datetime
    event: dict[str, Any] | None
    channel: str
    error: str

    @property
    def summary(self) -> str:
        e = self.event or {}
        return (
            f"{self.id}  {self.at:%Y-%m-%d %H:%M:%S}Z  monitor={e.get('monitor_id', '?')} "
            f"kind={e.get('kind', '?')} event={e.get('event_id', '?')} channel={self.channel or '-'}  "
            f"error={self.error}"
        )


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _parse(entry_id: Any, fields: dict[Any, Any]) -> DeadLetter:
    data = {_text(k): _text(v) for k, v in fields.items()}
    try:
        event = json.loads(data.get(keys.EVENT_FIELD, ""))
    except ValueError:
        event = None
    ident = _text(entry_id)
    at = datetime.fromtimestamp(int(ident.split("-")[0]) / 1000, UTC)
    return DeadLetter(
        ident, at, event if isinstance(event, dict) else None, data.get("channel", ""), data.get("error", "")
    )


async def list_dead(redis: aioredis.Redis, count: int = 1000) -> list[DeadLetter]:
    entries: Any = await redis.xrange(keys.DEAD_STREAM, count=count)
    return [_parse(i, f) for i, f in entries]


async def redrive(redis: aioredis.Redis, pool: asyncpg.Pool, ids: list[str] | None) -> list[str]:
    """Re-drive the given dead letters (all when ``ids`` is None); returns the ids re-driven.

    Unknown ids raise KeyError before anything changes.
    """
    letters = {d.id: d for d in await list_dead(redis, count=100_000)}
    chosen = list(letters) if ids is None else ids
    missing = [i for i in chosen if i not in letters]
    if missing:
        raise KeyError(", ".join(missing))
    done: list[str] = []
    for ident in chosen:
        letter = letters[ident]
        if letter.event is None:
            continue  # not an event we can re-send: stays for a human to read
        if letter.channel:
            await pool.execute(
                "DELETE FROM deliveries WHERE event_id = $1 AND channel = $2 AND status = 'dead'",
                letter.event.get("event_id"),
                letter.channel,
            )
        await redis.xadd(
            keys.EVENTS_STREAM,
            {keys.EVENT_FIELD: json.dumps(letter.event, separators=(",", ":"))},
            maxlen=keys.EVENTS_MAXLEN,
            approximate=True,
        )
        await redis.xdel(keys.DEAD_STREAM, ident)
        done.append(ident)
    return done
