"""A trial check: a monitor's body checked once by a scheduler, before it is saved (the form's
"test now"); nothing is written.

The body is a monitor's create body, validated and vetted as :func:`monitors.create` does it
(``monitors.prepare``: the same 422s naming the field, 400 ``target_blocked`` for a host the
SSRF policy denies, before anything is asked of anyone). The api runs no check itself: the
request goes to the schedulers through a Redis stream (``keys.TRIALS_STREAM``), one of them runs
it through the path its ticks take (``scheduler/trials.py``) and pushes the answer on a list
named for this request, which this waits on for the check's timeout (at most
``keys.TRIAL_MAX_TIMEOUT_SECONDS``) and ``keys.TRIAL_WAIT_MARGIN_SECONDS`` more, at most
``keys.TRIAL_WAIT_MAX_SECONDS``. No live scheduler (none holds a lease), or none answering in
that time: 503 ``no_scheduler``.

The answer: ``status`` (up, degraded, down), why it is degraded, the failure's kind, how long the
check took, and the check as ``GET /api/v1/monitors/{id}/checks`` shows one (its timings, and
in ``details`` each assertion's outcome, the certificate, DNS answers).
"""

from __future__ import annotations

import json
import secrets
import time
from datetime import datetime
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from monitor import keys
from monitor.checks.jobs import row_form
from monitor.domain import monitors
from monitor.domain.context import Actor, Deps
from monitor.domain.errors import DomainError
from monitor.domain.history import render_check
from monitor.domain.roles import authorize
from monitor.secrets import seal_monitor_secrets

RETRY_AFTER = {"Retry-After": "5"}
LIVE_SQL = "SELECT EXISTS (SELECT 1 FROM scheduler_members WHERE lease_until > now())"


def no_scheduler(message: str) -> DomainError:
    return DomainError(503, "no_scheduler", message, headers=RETRY_AFTER)


def wait_for(timeout: float) -> float:
    """How long the api waits for the answer to a trial whose check has ``timeout`` seconds."""
    return min(timeout + keys.TRIAL_WAIT_MARGIN_SECONDS, keys.TRIAL_WAIT_MAX_SECONDS)


async def trial(
    deps: Deps, actor: Actor, body: dict[str, Any], redis: aioredis.Redis | None
) -> dict[str, Any]:
    """Check ``body`` (a monitor's create body) once through a scheduler; nothing saved."""
    authorize(actor, monitors.RESOURCE, "write")
    ready = await monitors.prepare(deps, body)
    if not ready.check.scheduled:
        kind = ready.spec.type
        raise DomainError(422, "invalid", f"type: a {kind} monitor has no check to try: its pings", "type")
    if redis is None:
        raise no_scheduler("trial checks reach the schedulers through Redis; the api has no Redis URL")
    if not await deps.pool.fetchval(LIVE_SQL):
        raise no_scheduler("no scheduler is running; is `monitor scheduler` running?")
    timeout = min(float(ready.values["timeout_seconds"]), keys.TRIAL_MAX_TIMEOUT_SECONDS)
    wait = wait_for(timeout)
    trial_id = secrets.token_hex(16)
    reply = keys.TRIAL_REPLY_PREFIX + trial_id
    row = row_form({
        **ready.values,
        "timeout_seconds": timeout,
        "account_id": actor.account_id,
        "secrets": seal_monitor_secrets(deps.secret_box, ready.secrets),
    })  # fmt: skip
    request = {"id": trial_id, "reply": reply, "deadline": time.time() + wait, "row": row}
    try:
        entry = await redis.xadd(
            keys.TRIALS_STREAM,
            {keys.TRIAL_FIELD: json.dumps(request, separators=(",", ":"))},
            maxlen=keys.TRIALS_MAXLEN,
            approximate=True,
        )
        answered = await redis.blpop([reply], timeout=wait)
        if answered is None:
            await redis.xdel(keys.TRIALS_STREAM, entry)  # should a scheduler come: not after we left
    except RedisError as exc:
        message = f"Redis is unreachable ({type(exc).__name__}); try again"
        raise DomainError(503, "redis_unavailable", message, headers=RETRY_AFTER) from None
    if answered is None:
        raise no_scheduler(f"no scheduler answered within {wait:g} s; is `monitor scheduler` running?")
    return render(json.loads(answered[1]))


def render(answer: dict[str, Any]) -> dict[str, Any]:
    """A scheduler's answer (``scheduler/trials.answer``) as every face shows it."""
    check = dict(answer["check"])
    check["time"] = datetime.fromisoformat(check["time"])
    return {
        "status": answer["status"],
        "degraded": answer["degraded"],
        "failure": answer["failure"],
        "duration_ms": answer["duration_ms"],
        "check": render_check(check),
    }
