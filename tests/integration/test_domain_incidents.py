"""An open incident acknowledged through the domain's operation, with no HTTP in between: who may,
what is recorded (the incident, the audit log, an outbox row in the monitor's sequence), what is
refused, and the scheduler's writer keeping quiet about the incident's reminders afterwards."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest
from support import wait_for
from support.domain import Callers, callers_fixture, count, deps_fixture  # noqa: F401
from support.people import make_user

from monitor import db as monitor_db
from monitor.channels.notice import notice
from monitor.channels.text import plain
from monitor.domain import incidents
from monitor.domain import keys as api_keys
from monitor.domain.context import ROLES, Actor, Deps
from monitor.domain.errors import DomainError
from monitor.domain.roles import allows
from monitor.events import Event
from monitor.models import CheckResult
from monitor.scheduler import transitions
from monitor.scheduler.state import Alert, Outcome

CHAT = "4242"
STARTED = datetime(2026, 1, 1, 10, 0, tzinfo=UTC)


async def _outage(db: asyncpg.Connection, monitor_id: int, *, told: bool = True) -> tuple[int, str | None]:
    """An open incident of the monitor and, if ``told``, the down its channels were sent (as the
    scheduler writes them): the incident's id and the down's event id."""
    incident = await db.fetchval(
        "INSERT INTO incidents (monitor_id, started_at, status_code) VALUES ($1, $2, 503) RETURNING id",
        monitor_id,
        STARTED,
    )
    if not told:
        return incident, None
    event_id = uuid.uuid4()
    await db.execute(
        """INSERT INTO outbox (event_id, monitor_id, kind, payload, seq, destinations)
           VALUES ($1, $2, 'down', $3, 1, $4)""",
        event_id,
        monitor_id,
        {"incident_id": incident, "kind": "down"},
        [f"telegram:{CHAT}"],
    )
    return incident, str(event_id)


@pytest.fixture
async def shop(monitor_factory: Any) -> asyncpg.Record:
    return await monitor_factory(name="Shop", url="https://shop.example/", telegram_chat_id=CHAT)


async def test_an_editor_acknowledges_an_open_incident(
    deps: Deps, callers: Callers, db: asyncpg.Connection, shop: asyncpg.Record
) -> None:
    ada = await make_user(db, "ada@example.com", None, callers.owner.account_id, "editor")
    await db.execute("UPDATE users SET display_name = 'Ada Lovelace' WHERE id = $1", ada)
    editor = Actor(callers.owner.account_id, role="editor", user_id=ada, address="192.0.2.7")
    incident, down = await _outage(db, shop["id"])

    answer = await incidents.acknowledge(deps, editor, shop["id"], incident, {"note": "  failing over  "})

    assert answer["id"] == incident and answer["ongoing"]
    assert (answer["acknowledged_by"], answer["acknowledged_note"]) == ("Ada Lovelace", "failing over")
    assert answer["acknowledged_at"] is not None
    assert await incidents.get(deps, callers.viewer, shop["id"], incident) == {
        **answer,
        "duration_seconds": pytest.approx(answer["duration_seconds"], abs=5),
    }
    row = await db.fetchrow("SELECT * FROM incidents WHERE id = $1", incident)
    assert (row["acknowledged_by"], row["acknowledged_key_id"]) == (ada, None)
    audit = await db.fetchrow("SELECT * FROM audit_log WHERE resource = 'incidents'")
    assert (audit["operation"], audit["object_id"], audit["user_id"], list(audit["fields"])) == (
        "acknowledge",
        str(incident),
        ada,
        ["note"],
    )
    # The channels' note: next in the monitor's sequence, to the down's destinations, after it.
    told = await db.fetchrow("SELECT * FROM outbox WHERE kind = 'acknowledged'")
    assert (told["monitor_id"], told["seq"], list(told["destinations"])) == (
        shop["id"],
        2,
        [f"telegram:{CHAT}"],
    )
    event = Event.from_dict(told["payload"])
    assert (event.incident_id, event.after_event_id, event.started_at) == (
        incident,
        down,
        "2026-01-01T10:00:00Z",
    )
    assert event.details == {"acknowledged_by": "Ada Lovelace", "note": "failing over"}
    assert plain(notice(event).gist) == "Shop acknowledged by Ada Lovelace: failing over"


@pytest.mark.parametrize("role", ROLES)
async def test_editors_and_up_may_acknowledge(
    deps: Deps, callers: Callers, db: asyncpg.Connection, shop: asyncpg.Record, role: Any
) -> None:
    incident, _ = await _outage(db, shop["id"])
    caller = Actor(callers.owner.account_id, role=role)
    if allows(role, "incidents", "acknowledge"):
        assert role in ("editor", "admin", "owner")
        answer = await incidents.acknowledge(deps, caller, shop["id"], incident, {})
        assert answer["acknowledged_by"] == "the operator" and answer["acknowledged_note"] is None
        return
    with pytest.raises(DomainError) as caught:
        await incidents.acknowledge(deps, caller, shop["id"], incident, {})
    assert (caught.value.status, caught.value.code) == (403, "forbidden")
    assert "editor" in caught.value.message
    assert await db.fetchval("SELECT acknowledged_at FROM incidents WHERE id = $1", incident) is None
    assert await count(db, "audit_log") == 0


async def test_another_accounts_or_another_monitors_incident_is_not_found(
    deps: Deps, callers: Callers, db: asyncpg.Connection, shop: asyncpg.Record, monitor_factory: Any
) -> None:
    incident, _ = await _outage(db, shop["id"])
    sibling = await monitor_factory(name="Other", url="https://other.example/")
    for monitor_id, incident_id, caller, what in (
        (shop["id"], incident, callers.other, "monitor"),
        (sibling["id"], incident, callers.owner, "incident"),
        (shop["id"], incident + 1000, callers.owner, "incident"),
        (shop["id"], 0, callers.owner, "incident"),
    ):
        for call in (
            incidents.acknowledge(deps, caller, monitor_id, incident_id, {}),
            incidents.get(deps, caller, monitor_id, incident_id),
        ):
            with pytest.raises(DomainError) as caught:
                await call
            assert caught.value.status == 404
            assert caught.value.message in (f"{what} not found", "incident not found")
    assert await db.fetchval("SELECT acknowledged_at FROM incidents WHERE id = $1", incident) is None
    assert await db.fetchval("SELECT count(*) FROM outbox WHERE kind = 'acknowledged'") == 0


async def test_an_ended_or_acknowledged_incident_is_a_conflict(
    deps: Deps, callers: Callers, db: asyncpg.Connection, shop: asyncpg.Record
) -> None:
    incident, _ = await _outage(db, shop["id"])
    first = await incidents.acknowledge(deps, callers.owner, shop["id"], incident, {"note": "mine"})
    with pytest.raises(DomainError) as caught:
        await incidents.acknowledge(deps, callers.owner, shop["id"], incident, {"note": "no, mine"})
    assert (caught.value.status, caught.value.code) == (409, "already_acknowledged")
    assert await incidents.get(deps, callers.owner, shop["id"], incident) == {
        **first,
        "duration_seconds": pytest.approx(first["duration_seconds"], abs=5),
    }  # the first stands

    await db.execute(
        "UPDATE incidents SET ended_at = $2 WHERE id = $1", incident, STARTED + timedelta(minutes=5)
    )
    later, _ = await _outage(db, shop["id"], told=False)
    await db.execute(
        "UPDATE incidents SET ended_at = $2 WHERE id = $1", later, STARTED + timedelta(minutes=9)
    )
    with pytest.raises(DomainError) as caught:
        await incidents.acknowledge(deps, callers.owner, shop["id"], later, {})
    assert (caught.value.status, caught.value.code) == (409, "not_open")
    assert await db.fetchval("SELECT count(*) FROM outbox WHERE kind = 'acknowledged'") == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"note": "x" * 281}, "note"),
        ({"note": "two\nlines"}, "note"),
        ({"note": 5}, "note"),
        ({"note": "a\x00b"}, "note"),
        ({"by": "someone else"}, "by"),
    ],
)
async def test_a_bad_note_is_refused_before_anything_is_written(
    deps: Deps,
    callers: Callers,
    db: asyncpg.Connection,
    shop: asyncpg.Record,
    body: dict[str, Any],
    field: str,
) -> None:
    incident, _ = await _outage(db, shop["id"])
    with pytest.raises(DomainError) as caught:
        await incidents.acknowledge(deps, callers.owner, shop["id"], incident, body)
    assert (caught.value.status, caught.value.field) == (422, field)
    assert await db.fetchval("SELECT acknowledged_at FROM incidents WHERE id = $1", incident) is None


async def test_a_note_of_280_characters_is_kept_and_an_empty_one_is_none(
    deps: Deps, callers: Callers, db: asyncpg.Connection, shop: asyncpg.Record
) -> None:
    incident, _ = await _outage(db, shop["id"])
    longest = "é" * 280
    answer = await incidents.acknowledge(deps, callers.owner, shop["id"], incident, {"note": longest})
    assert answer["acknowledged_note"] == longest
    await db.execute("UPDATE incidents SET ended_at = now() WHERE id = $1", incident)
    second, _ = await _outage(db, shop["id"], told=False)
    assert (await incidents.acknowledge(deps, callers.owner, shop["id"], second, {"note": "  "}))[
        "acknowledged_note"
    ] is None


async def test_who_acknowledged_a_key_says(
    deps: Deps, callers: Callers, db: asyncpg.Connection, shop: asyncpg.Record
) -> None:
    account = callers.owner.account_id
    maker = await make_user(db, "grace@example.com", None, account, "editor")  # no display name
    made = await api_keys.create_key(db, account, "deploy", "editor", created_by=maker)
    orphan = await api_keys.create_key(db, account, "old", "editor")
    first, _ = await _outage(db, shop["id"], told=False)
    answer = await incidents.acknowledge(
        deps, Actor(account, "editor", key_id=made.id), shop["id"], first, {}
    )
    assert answer["acknowledged_by"] == "grace@example.com"  # the key's maker, by e-mail
    row = await db.fetchrow("SELECT acknowledged_by, acknowledged_key_id FROM incidents WHERE id = $1", first)
    assert tuple(row) == (maker, made.id)
    await db.execute("UPDATE incidents SET ended_at = now() WHERE id = $1", first)
    second, _ = await _outage(db, shop["id"], told=False)
    answer = await incidents.acknowledge(
        deps, Actor(account, "editor", key_id=orphan.id), shop["id"], second, {}
    )
    assert answer["acknowledged_by"] == f"API key #{orphan.id}"


async def test_an_incident_never_told_is_acknowledged_without_a_message(
    deps: Deps, callers: Callers, db: asyncpg.Connection, shop: asyncpg.Record
) -> None:
    # Held in a maintenance window, or while flapping: its channels never heard of it.
    incident, _ = await _outage(db, shop["id"], told=False)
    answer = await incidents.acknowledge(deps, callers.owner, shop["id"], incident, {})
    assert answer["acknowledged_at"] is not None
    assert await db.fetchval("SELECT count(*) FROM outbox WHERE kind = 'acknowledged'") == 0


async def test_the_scheduler_writes_no_reminder_of_an_acknowledged_incident(
    deps: Deps, callers: Callers, db: asyncpg.Connection, shop: asyncpg.Record
) -> None:
    incident, _ = await _outage(db, shop["id"])

    async def remind(at: datetime) -> None:
        result = CheckResult(monitor_id=shop["id"], time=at, ok=False, status_code=503)
        alert = Alert("remind", at, {"reminder": 1, "reminder_max": None})
        pending = transitions.Pending(_Subject(shop["id"]), Outcome((), (alert,)), result)
        async with db.transaction():
            await transitions.apply(db, pending)

    async def kinds() -> list[str]:
        return [
            r["kind"]
            for r in await db.fetch("SELECT kind FROM outbox WHERE monitor_id = $1 ORDER BY seq", shop["id"])
        ]

    await remind(STARTED + timedelta(minutes=1))
    assert await kinds() == ["down", "remind"]
    await incidents.acknowledge(deps, callers.owner, shop["id"], incident, {"note": "on it"})
    await remind(STARTED + timedelta(minutes=2))
    assert await kinds() == ["down", "remind", "acknowledged"]


async def test_an_acknowledgement_that_raced_the_writer_to_the_next_seq_takes_the_one_after(
    deps: Deps, callers: Callers, db: asyncpg.Connection, shop: asyncpg.Record, migrated: str
) -> None:
    incident, _ = await _outage(db, shop["id"])
    # A writer's batch holding seq 2 of the monitor, not yet committed: the acknowledgement
    # reads max(seq) = 1, waits on the unique index, is refused once it commits, and goes again.
    writer = await monitor_db.connect(migrated)
    try:
        batch = writer.transaction()
        await batch.start()
        await writer.execute(
            """INSERT INTO outbox (event_id, monitor_id, kind, payload, seq)
               VALUES ($1, $2, 'remind', '{}', 2)""",
            uuid.uuid4(),
            shop["id"],
        )
        acking = asyncio.ensure_future(incidents.acknowledge(deps, callers.owner, shop["id"], incident, {}))

        async def waiting() -> bool:
            return bool(
                await db.fetchval(
                    """SELECT count(*) FROM pg_stat_activity
                       WHERE wait_event_type = 'Lock' AND datname = current_database()"""
                )
            )

        await wait_for(waiting, timeout=10, message="the acknowledgement waiting on the writer's seq")
        await batch.commit()
        answer = await asyncio.wait_for(acking, 10)
    finally:
        await writer.close()
    assert answer["acknowledged_at"] is not None
    rows = await db.fetch("SELECT kind, seq FROM outbox WHERE monitor_id = $1 ORDER BY seq", shop["id"])
    assert [(r["kind"], r["seq"]) for r in rows] == [("down", 1), ("remind", 2), ("acknowledged", 3)]


class _Subject:
    def __init__(self, monitor_id: int) -> None:
        self.id, self.name, self.url = monitor_id, "Shop", "https://shop.example/"
