"""The dead-letter stream: list what could not be delivered, re-drive it, or drop it.

A dead letter carries the event, the channel that failed and the last error. Re-driving
forgets that channel's 'dead' delivery record and puts the event back on
``monitor:events``, so the alerter tries that channel again; channels already sent
are skipped by the delivery key as always. Dropping removes the letter from the stream only:
the 'dead' delivery record stays, as the audit of what was not sent.

Not every event is about a monitor: a channel's test message names the channel (its
``monitor_name``), the checker's own notices (connectivity lost, restored) name nothing, and
an entry that is not an event at all is kept as it came. A listing says which it is.
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
    def about(self) -> str:
        """What the letter's event is about: ``monitor=3 "Shop"``, ``channel test "On call"``,
        ``checker`` (its own notices), or ``unreadable event``."""
        e = self.event
        if e is None:
            return "unreadable event"
        name = e.get("monitor_name") or ""
        if e.get("kind") == "test":
            return f"channel test {json.dumps(name, ensure_ascii=False)}"
        if e.get("monitor_id") is None:
            return "checker"
        return f"monitor={e['monitor_id']} {json.dumps(name, ensure_ascii=False)}"

    @property
    def summary(self) -> str:
        e = self.event or {}
        return (
            f"{self.id}  {self.at:%Y-%m-%d %H:%M:%S}Z  {self.about} "
            f"kind={e.get('kind', '-')} event={e.get('event_id', '-')} channel={self.channel or '-'}  "
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


async def _chosen(redis: aioredis.Redis, ids: list[str] | None) -> dict[str, DeadLetter]:
    """The dead letters ``ids`` name (every one when None), in that order; KeyError naming the
    ids that are not in the stream."""
    letters = {d.id: d for d in await list_dead(redis, count=keys.DEAD_MAXLEN)}
    chosen = list(letters) if ids is None else list(dict.fromkeys(ids))
    missing = [i for i in chosen if i not in letters]
    if missing:
        raise KeyError(", ".join(missing))
    return {i: letters[i] for i in chosen}


async def drop(redis: aioredis.Redis, ids: list[str]) -> list[str]:
    """Remove the given dead letters from the stream; returns the ids dropped.

    Unknown ids raise KeyError before anything changes.
    """
    chosen = await _chosen(redis, ids)
    if chosen:
        await redis.xdel(keys.DEAD_STREAM, *chosen)
    return list(chosen)


async def redrive(redis: aioredis.Redis, pool: asyncpg.Pool, ids: list[str] | None) -> list[str]:
    """Re-drive the given dead letters (all when ``ids`` is None); returns the ids re-driven.

    Unknown ids raise KeyError before anything changes.
    """
    done: list[str] = []
    for ident, letter in (await _chosen(redis, ids)).items():
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
