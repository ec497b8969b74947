"""Reminders and a recurring maintenance window through the real processes, with the scheduler
SIGKILLed in the middle of both (issue 13, points 2, 3 and 8).

One run, three monitors checked every second (confirm_after 1), each alerting its own chat of
the fake Telegram. W is the window's start: the first whole minute at least SETUP_MARGIN after
the processes are up; the window (made through the API: FREQ=HOURLY from W, one minute long,
Europe/Berlin, notify on) covers "legacy-db" by id and "billing-web" by its tag.

    time          nagging-api (remind 1 min, max 2)  legacy-db (remind 1 min, max 1)  billing-web
    ------------  ---------------------------------  -------------------------------  ----------------------
    W-75..W-40    fails (HTTP 500): DOWN
    W-30                                             fails: DOWN
    W                                                MAINTENANCE                      MAINTENANCE
    W+1..                                                                             fails: down, DOWN held
    <= W+20       HTTP 503: REMIND 1 of 2 (60 s)     (reminder due at W+30: held)
    W+30          -- scheduler SIGKILLed and started again --
    W+60                                             MAINTENANCE_END, REMIND 1 of 1   MAINTENANCE_END, DOWN
                                                                                      ("held while ...")
    then                                             answers: UP                      answers: UP
    <= W+80       HTTP 502: REMIND 2 of 2 (120 s)
    REMIND 2+60   (a third reminder would be due: nothing)
    then          answers: UP

Asserted: the exact messages of each chat (nothing duplicated by the kill, nothing missing,
no DOWN or REMIND inside the window, no REMIND after an UP), the reminders' spacing and text
(how long it has lasted, the latest cause), the held DOWN's note, and the uptime figure of the
two window monitors leaving the window's minute out, like paused time.
"""

from __future__ import annotations

import html
import re
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import asyncpg
import pytest
from support import ApiClient, FakeTelegram, ProcessFactory, TargetServer, parse_time, wait_for
from support.alerts import said, said_to

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]

CHAT_NAG, CHAT_LEGACY, CHAT_BILLING = "7401", "7402", "7403"
NAG, LEGACY, BILLING = "nagging-api", "legacy-db", "billing-web"
WINDOW_NAME = "one-minute window"
ZONE = ZoneInfo("Europe/Berlin")
MINUTE = 60.0
# From "the processes are up" to the window's start: time for the reminder series to begin
# early enough that its first reminder comes before the kill, in the middle of the window.
SETUP_MARGIN = 40.0
# A reminder is due a full interval after the last down or reminder; the check that sends it
# comes within a check interval or two of that.
SPACING_TOLERANCE = 5.0
DEADLINE = 30.0  # for anything that should happen within a few checks


# -- the timeline --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """The instants of the timeline (epoch seconds)."""

    window_start: float

    @classmethod
    def from_now(cls, now: float) -> Plan:
        return cls(window_start=(int(now + SETUP_MARGIN) // 60 + 1) * 60.0)

    @property
    def window_end(self) -> float:
        return self.window_start + MINUTE

    @property
    def kill_at(self) -> float:
        return self.window_start + MINUTE / 2

    @property
    def nag_fails_at(self) -> float:
        # Reminder 1 at most 20 s into the window, reminder 2 at least 15 s after the kill.
        return self.window_start - 75

    @property
    def legacy_fails_at(self) -> float:
        # Down before the window; its reminder falls due inside it.
        return self.window_start - 30

    @property
    def window(self) -> tuple[datetime, datetime]:
        return _utc(self.window_start), _utc(self.window_end)


def _utc(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


async def clock_reaches(instant: float, what: str) -> None:
    """Wait (with a deadline) until the wall clock reaches ``instant``."""
    await wait_for(
        lambda: time.time() >= instant,
        timeout=max(0.0, instant - time.time()) + 5,
        interval=0.1,
        message=f"the clock to reach {what}",
    )


# -- what the chats and the database say --------------------------------------------------------


# What each chat must be told, in order, and nothing else.
EXPECTED = {
    CHAT_NAG: [(NAG, "DOWN"), (NAG, "REMIND"), (NAG, "REMIND"), (NAG, "UP")],
    CHAT_LEGACY: [
        (LEGACY, "DOWN"), (LEGACY, "MAINTENANCE"), (LEGACY, "MAINTENANCE_END"), (LEGACY, "REMIND"),
        (LEGACY, "UP"),
    ],
    CHAT_BILLING: [
        (BILLING, "MAINTENANCE"), (BILLING, "MAINTENANCE_END"), (BILLING, "DOWN"), (BILLING, "UP"),
    ],
}  # fmt: skip


async def told_first(fake: FakeTelegram, chat: str, count: int, *, timeout: float = DEADLINE) -> None:  # noqa: ASYNC109
    """Wait until ``chat`` was told the first ``count`` alerts of its :data:`EXPECTED` list;
    fail at once if it was told anything else (a duplicate, one out of order, a stray one)."""
    want = EXPECTED[chat]

    def reached() -> bool:
        got = said_to(fake, chat)
        assert got == want[: len(got)], f"chat {chat} was told {got}; expected {want}"
        return len(got) >= count

    await wait_for(reached, timeout=timeout, message=lambda: f"{want[:count]} to chat {chat}")


def texts_of(fake: FakeTelegram, chat: str, kind: str) -> list[str]:
    """The plain text of every message to ``chat`` that carries an alert of ``kind``."""
    ordered = sorted(fake.messages_to(chat), key=lambda r: r.received_at)
    return [
        html.unescape(re.sub(r"<[^>]+>", "", r.text or ""))
        for r in ordered
        if any(k == kind for _, k in said(r.text))
    ]


async def state_of(db: asyncpg.Connection, monitor_id: int) -> asyncpg.Record:
    row = await db.fetchrow("SELECT * FROM monitor_state WHERE monitor_id = $1", monitor_id)
    assert row is not None
    return row


async def outbox_of(db: asyncpg.Connection, monitor_id: int) -> list[tuple[str, datetime, dict[str, Any]]]:
    """(kind, the event's ``at``, payload) of the monitor's alerts, in their order."""
    rows = await db.fetch("SELECT kind, payload FROM outbox WHERE monitor_id = $1 ORDER BY seq", monitor_id)
    return [(r["kind"], parse_time(r["payload"]["at"]), r["payload"]) for r in rows]


async def all_delivered(db: asyncpg.Connection) -> bool:
    """Every alert written is on the stream and delivered, once."""
    rows = await db.fetchval("SELECT count(*) FROM outbox")
    unpublished = await db.fetchval("SELECT count(*) FROM outbox WHERE published_at IS NULL")
    sent = await db.fetchval("SELECT count(*) FROM deliveries WHERE status = 'sent'")
    others = await db.fetchval("SELECT count(*) FROM deliveries WHERE status <> 'sent'")
    return bool(unpublished == 0 and others == 0 and sent == rows)


def lasted(text: str) -> float:
    """Seconds of a reminder's "Down for 1m 2s"."""
    m = re.search(r"Down for ((?:\d+[dhms] ?)+)", text)
    assert m, text
    sizes = {"d": 86400, "h": 3600, "m": 60, "s": 1}
    return sum(int(part[:-1]) * sizes[part[-1]] for part in m[1].split())


# -- uptime with the window left out -------------------------------------------------------------

Span = tuple[datetime, datetime]


def _seconds(spans: Sequence[Span]) -> float:
    return sum((e - s).total_seconds() for s, e in spans)


def _clip(spans: Sequence[Span], start: datetime, end: datetime) -> list[Span]:
    return [(max(s, start), min(e, end)) for s, e in spans if min(e, end) > max(s, start)]


def expected_uptime(observed: Span, window: Span, incidents: Sequence[Span]) -> tuple[float, float]:
    """(percent, downtime seconds) over ``observed`` with ``window`` left out."""
    span = _seconds([observed]) - _seconds(_clip([window], *observed))
    seen = [part for incident in incidents for part in _clip([incident], *observed)]
    down = _seconds(seen) - _seconds([part for s in seen for part in _clip([s], *window)])
    return 100.0 * (1.0 - down / span), down


async def check_uptime_leaves_window_out(
    api: ApiClient, db: asyncpg.Connection, monitor_id: int, window: Span
) -> None:
    response = await api.get(f"/api/v1/monitors/{monitor_id}/uptime")
    assert response.status == 200, response
    body = response.json
    observed = (parse_time(body["observed_from"]), parse_time(body["observed_to"]))
    rows = await db.fetch("SELECT started_at, ended_at FROM incidents WHERE monitor_id = $1", monitor_id)
    incidents = [(r["started_at"], r["ended_at"]) for r in rows]
    assert len(incidents) == 1 and incidents[0][1] is not None, incidents
    percent, down = expected_uptime(observed, window, incidents)
    counted = expected_uptime(observed, (window[0], window[0]), incidents)  # as if there were none
    assert body["downtime_seconds"] == pytest.approx(down, abs=0.01), (body, down, counted)
    assert body["uptime_percent"] == pytest.approx(percent, abs=0.01), (body, percent, counted)
    assert abs(percent - counted[0]) > 1, "the window should change the figure noticeably"


# -- the test ------------------------------------------------------------------------------------


async def test_reminders_and_a_recurring_window_survive_a_scheduler_kill(
    db: asyncpg.Connection,
    monitor_factory,
    target: TargetServer,
    fake_telegram: FakeTelegram,
    procs: ProcessFactory,
    api: ApiClient,
) -> None:
    common = {"interval_seconds": 1, "timeout_seconds": 1, "confirm_after": 1}
    nag = await monitor_factory(
        name=NAG, url=target.url("/nag"), telegram_chat_id=CHAT_NAG,
        remind_every_minutes=1, remind_max=2, **common,
    )  # fmt: skip
    legacy = await monitor_factory(
        name=LEGACY, url=target.url("/legacy"), telegram_chat_id=CHAT_LEGACY,
        remind_every_minutes=1, remind_max=1, **common,
    )  # fmt: skip
    billing = await monitor_factory(
        name=BILLING, url=target.url("/billing"), telegram_chat_id=CHAT_BILLING, tags=["billing"], **common
    )
    ids = [nag["id"], legacy["id"], billing["id"]]
    scheduler = await procs.start("scheduler")
    await procs.start("alerter", env=fake_telegram.env())

    async def all_up() -> bool:
        rows = await db.fetch("SELECT status FROM monitor_state WHERE monitor_id = ANY($1::bigint[])", ids)
        return len(rows) == 3 and all(r["status"] == "up" for r in rows)

    await wait_for(all_up, timeout=DEADLINE, message="every monitor checked up once")

    # The window, through the API, on the wall clock of Berlin; the scheduler reloads its calendar.
    plan = Plan.from_now(time.time())
    starts_at = datetime.fromtimestamp(plan.window_start, ZONE).strftime("%Y-%m-%dT%H:%M")
    created = await api.post(
        "/api/v1/maintenance",
        json={
            "name": WINDOW_NAME,
            "recurring": {"rrule": "FREQ=HOURLY", "duration_minutes": 1, "timezone": "Europe/Berlin",
                          "starts_at": starts_at},
            "monitor_ids": [legacy["id"]],
            "tags": ["billing"],
            "notify": True,
        },
    )  # fmt: skip
    assert created.status == 201, created
    assert parse_time(created.json["next"]["from"]) == plan.window[0], created.json
    assert parse_time(created.json["next"]["to"]) == plan.window[1], created.json
    await scheduler.wait_log("maintenance.loaded", windows=1, timeout=DEADLINE)

    # nagging-api goes down; its reminders will carry the latest cause (503, then 502).
    await clock_reaches(plan.nag_fails_at, "nagging-api's outage")
    target.set(500, path="/nag")
    await told_first(fake_telegram, CHAT_NAG, 1)
    target.set(503, path="/nag")

    # legacy-db goes down before the window.
    await clock_reaches(plan.legacy_fails_at, "legacy-db's outage")
    target.set(500, path="/legacy")
    await told_first(fake_telegram, CHAT_LEGACY, 1)
    assert time.time() < plan.window_start, "legacy-db's DOWN should come before the window"

    # The window opens; billing-web goes down inside it, and its DOWN is held.
    await told_first(fake_telegram, CHAT_LEGACY, 2, timeout=plan.window_start - time.time() + DEADLINE)
    await told_first(fake_telegram, CHAT_BILLING, 1)
    target.set(500, path="/billing")

    async def billing_held() -> bool:
        row = await state_of(db, billing["id"])
        return row["status"] == "down" and row["held"] is not None and row["told"] == "up"

    await wait_for(billing_held, timeout=DEADLINE, message="billing-web down and its alert held")

    # Reminder 1 of nagging-api, then the kill in the middle of the window and of the series.
    await told_first(fake_telegram, CHAT_NAG, 2, timeout=plan.kill_at - time.time() + DEADLINE)
    target.set(502, path="/nag")
    await clock_reaches(plan.kill_at, "the middle of the window")
    assert (await state_of(db, nag["id"]))["reminders"] == 1
    assert (await state_of(db, legacy["id"]))["maintenance"] is not None
    scheduler.send_signal(signal.SIGKILL)
    await wait_for(lambda: not scheduler.running, timeout=10, message="the scheduler is gone")
    await procs.start("scheduler")

    # The window ends: legacy-db's reminder, billing-web's held DOWN; then both recover.
    to_window_end = plan.window_end - time.time() + DEADLINE
    await told_first(fake_telegram, CHAT_LEGACY, 4, timeout=to_window_end)
    await told_first(fake_telegram, CHAT_BILLING, 3, timeout=to_window_end)
    target.set(200, path="/legacy")
    target.set(200, path="/billing")
    await told_first(fake_telegram, CHAT_LEGACY, 5)
    await told_first(fake_telegram, CHAT_BILLING, 4)

    # nagging-api's second reminder, then nothing more while it stays down, then UP.
    await told_first(fake_telegram, CHAT_NAG, 3, timeout=plan.window_end + 30 - time.time() + DEADLINE)
    second = [at for kind, at, _ in await outbox_of(db, nag["id"]) if kind == "remind"][-1]
    await clock_reaches(second.timestamp() + MINUTE + SPACING_TOLERANCE, "past a third reminder's time")
    target.set(200, path="/nag")
    await told_first(fake_telegram, CHAT_NAG, 4)
    await wait_for(lambda: all_delivered(db), timeout=DEADLINE, message="every alert delivered")

    # -- the messages, exactly -------------------------------------------------------------
    told = {chat: said_to(fake_telegram, chat) for chat in EXPECTED}
    assert told == EXPECTED, fake_telegram.describe()

    # -- reminders: spacing and text -------------------------------------------------------
    nag_events = await outbox_of(db, nag["id"])
    assert [kind for kind, _, _ in nag_events] == ["down", "remind", "remind", "up"]
    down_at, first_at, second_at = (at for _, at, _ in nag_events[:3])
    for gap in (first_at - down_at, second_at - first_at):
        assert timedelta(seconds=MINUTE) <= gap <= timedelta(seconds=MINUTE + SPACING_TOLERANCE), nag_events
    reminders = texts_of(fake_telegram, CHAT_NAG, "REMIND")
    assert len(reminders) == 2, reminders
    causes = ("503", "502")
    for n, (text, cause, at) in enumerate(zip(reminders, causes, (first_at, second_at), strict=True), 1):
        assert f"Reminder {n} of 2" in text, text
        assert re.search(rf"Latest cause: .*\b{cause}\b", text), text
        assert lasted(text) == pytest.approx((at - down_at).total_seconds(), abs=1.5), text

    # -- the window: nothing but notices inside it; the held DOWN says why -----------------
    window = plan.window
    for monitor in (legacy, billing):
        for kind, at, _ in await outbox_of(db, monitor["id"]):
            if kind in ("down", "remind"):
                assert not window[0] <= at < window[1], (monitor["name"], kind, at)
    kinds = {m["name"]: [k for k, _, _ in await outbox_of(db, m["id"])] for m in (legacy, billing)}
    assert kinds == {
        LEGACY: ["down", "maintenance_start", "maintenance_end", "remind", "up"],
        BILLING: ["maintenance_start", "maintenance_end", "down", "up"],
    }
    billing_events = await outbox_of(db, billing["id"])
    held_down = billing_events[2][2]
    assert window[0] <= parse_time(held_down["started_at"]) < window[1], held_down
    note = f"Alert held while maintenance window '{WINDOW_NAME}' was open"
    assert held_down["details"].get("note") == note, held_down
    (down_text,) = texts_of(fake_telegram, CHAT_BILLING, "DOWN")
    if len(said(down_text)) == 1:  # a message of its own (a combined one has a line per alert)
        assert note in down_text, down_text

    # -- uptime leaves the window out, like paused time ------------------------------------
    for monitor in (legacy, billing):
        await check_uptime_leaves_window_out(api, db, monitor["id"], window)

    assert not procs.tracebacks()
