"""An outage acknowledged through the real processes (issue 29): its reminders stop, the
acknowledgement reaches the chat as a short note, and the recovery is still sent.

One monitor checked every second (confirm_after 1, a reminder every minute without limit),
alerting a chat of the fake Telegram; the api, the scheduler and the alerter as processes.

    time       the target              the chat is told
    ---------  ----------------------  -------------------------------------------------
    T          fails (HTTP 500)        DOWN
    T+60                               REMIND 1
    then       (acknowledged by Ada)   ACKNOWLEDGED ("... acknowledged by Ada Lovelace: ...")
    T+120                              nothing: the second reminder falls due, is not sent
    then       answers 200             UP

Asserted: exactly those messages in that order, the note's text, the outbox holding no
reminder after the acknowledgement while the state machine did count the one it held back,
and the incident recording who acknowledged it.
"""

from __future__ import annotations

import html
import re
import time

import asyncpg
import pytest
from support import ApiClient, FakeTelegram, MonitorProcess, ProcessFactory, TargetServer, leaks, wait_for
from support.alerts import said_to
from support.db import ensure_account
from support.people import make_user

from monitor.domain import keys as api_keys

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

CHAT = "7501"
NAME = "acked-shop"
MINUTE = 60.0
# A reminder is due a full interval after the last one; the check that would send it comes
# within a check interval or two, and its delivery within a few seconds more.
SPACING_TOLERANCE = 8.0
DEADLINE = 30.0
NOTE = "failing over the database"


async def test_an_acknowledged_outage_is_not_reminded_and_its_recovery_is_still_sent(
    db: asyncpg.Connection,
    monitor_factory,
    target: TargetServer,
    fake_telegram: FakeTelegram,
    procs: ProcessFactory,
    api_server: MonitorProcess,
) -> None:
    monitor = await monitor_factory(
        name=NAME, url=target.url("/"), telegram_chat_id=CHAT, interval_seconds=1, timeout_seconds=1,
        confirm_after=1, remind_every_minutes=1, remind_max=None,
    )  # fmt: skip
    mid = monitor["id"]
    account = await ensure_account(db)
    ada = await make_user(db, "ada@example.com", None, account, "editor")
    await db.execute("UPDATE users SET display_name = 'Ada Lovelace' WHERE id = $1", ada)
    key = await api_keys.create_key(db, account, "ada's", "editor", created_by=ada)
    leaks.secret("API key", key.key)

    await procs.start("scheduler")
    await procs.start("alerter", env=fake_telegram.env())

    async def checked_up() -> bool:
        return await db.fetchval("SELECT status FROM monitor_state WHERE monitor_id = $1", mid) == "up"

    await wait_for(checked_up, timeout=DEADLINE, message="the monitor checked up once")

    def told(count: int, want: list[str]) -> bool:
        got = [kind for name, kind in said_to(fake_telegram, CHAT) if name == NAME]
        assert got == want[: len(got)], f"the chat was told {got}; expected {want}"
        return len(got) >= count

    expected = ["DOWN", "REMIND", "ACKNOWLEDGED", "UP"]
    target.set(500)
    await wait_for(lambda: told(1, expected), timeout=DEADLINE, message="the DOWN")
    await wait_for(lambda: told(2, expected), timeout=MINUTE + DEADLINE, message="the first reminder")

    incident = await db.fetchval("SELECT id FROM incidents WHERE monitor_id = $1 AND ended_at IS NULL", mid)
    async with ApiClient(api_server.base_url, key=key.key) as client:
        acked = await client.post(
            f"/api/v1/monitors/{mid}/incidents/{incident}/acknowledge", json={"note": NOTE}
        )
    assert acked.status == 200, acked
    assert (acked.json["acknowledged_by"], acked.json["acknowledged_note"]) == ("Ada Lovelace", NOTE)
    await wait_for(lambda: told(3, expected), timeout=DEADLINE, message="the acknowledgement")
    (text,) = [
        html.unescape(re.sub(r"<[^>]+>", "", r.text or ""))
        for r in fake_telegram.messages_to(CHAT)
        if "acknowledged by" in (r.text or "")
    ]
    assert f"{NAME} acknowledged by Ada Lovelace" in text and f"Note: {NOTE}" in text, text

    # The second reminder falls due a minute after the first: the state machine counts it, and
    # nothing is written or sent.
    first = await db.fetchval(
        "SELECT max(created_at) FROM outbox WHERE monitor_id = $1 AND kind = 'remind'", mid
    )
    until = first.timestamp() + MINUTE + SPACING_TOLERANCE

    async def held_back() -> bool:
        return await db.fetchval("SELECT reminders FROM monitor_state WHERE monitor_id = $1", mid) >= 2

    await wait_for(held_back, timeout=until - time.time() + DEADLINE, message="the second reminder fell due")
    await wait_for(lambda: time.time() >= until, timeout=until - time.time() + 5, interval=0.2)
    kinds = [
        r["kind"] for r in await db.fetch("SELECT kind FROM outbox WHERE monitor_id = $1 ORDER BY seq", mid)
    ]
    assert kinds == ["down", "remind", "acknowledged"], kinds
    assert told(3, expected) and not told(4, expected)

    target.set(200)
    await wait_for(lambda: told(4, expected), timeout=DEADLINE, message="the UP")
    row = await db.fetchrow("SELECT * FROM incidents WHERE id = $1", incident)
    assert row["ended_at"] is not None and row["acknowledged_by"] == ada
    assert (row["acknowledged_by_name"], row["acknowledged_note"]) == ("Ada Lovelace", NOTE)
    assert not procs.tracebacks()
