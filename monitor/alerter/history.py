"""What the ``deliveries`` table says went to a destination lately: the pacer's memory when
Redis lost its windows (:mod:`monitor.alerter.pacing`).

Every message an alerter sends is recorded there with its time (``sent_at``), by whichever
alerter sent it, so it is the one account of a destination's recent messages that outlives a
Redis without its data. One message is one statement (every alert it carried has the same
``sent_at``), so its ``sent_at`` in µs names it, the same for every alerter that asks. Asked
only after Redis lost its data, once per destination, through the partial index of migration
017 (a handful of rows per destination and window, whatever the table's size).
"""

from __future__ import annotations

import asyncpg

from monitor import logging as mlog

log = mlog.get(__name__)

UNAVAILABLE = (asyncpg.PostgresError, asyncpg.InterfaceError, OSError, TimeoutError)


class DeliveryHistory:
    """``await history(destination, seconds)``: (message id, age in seconds) of every message
    sent to ``destination`` in the last ``seconds``; None when the database cannot say."""

    def __init__(self, pool: asyncpg.Pool, *, timeout: float = 5.0) -> None:
        self._pool = pool
        self._timeout = timeout
        self._failing = False  # one warning per streak of failures, not one a second

    async def __call__(self, destination: str, seconds: float) -> list[tuple[str, float]] | None:
        try:
            rows = await self._pool.fetch(
                """SELECT (extract(epoch FROM sent_at) * 1000000)::bigint::text AS id,
                          extract(epoch FROM now() - sent_at)::float8 AS age
                   FROM deliveries
                   WHERE channel = $1 AND status = 'sent'
                     AND sent_at > now() - make_interval(secs => $2::float8)
                   GROUP BY sent_at""",
                destination,
                seconds,
                timeout=self._timeout,
            )
        except UNAVAILABLE as exc:
            if not self._failing:
                error = str(exc) or type(exc).__name__
                log.warning("pacing.history_unavailable", destination=destination, error=error)
            self._failing = True
            return None
        self._failing = False
        return [(row["id"], row["age"]) for row in rows]
