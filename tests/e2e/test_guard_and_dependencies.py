"""The connectivity guard and dependencies through the real scheduler and alerter and the fake
Telegram (issue 13, points 5 and 6). Every target sits behind a :class:`Gate` the test shuts
(new connections refused, open ones reset: what a checker whose network is down sees) and opens.

**Guard with references** (``MONITOR_CONNECTIVITY_TARGETS``: an http:// and a host:port one);
five monitors (interval 1 s, confirm_after 2) in the monitors' chat::

    t0      every target and both references shut at once
    t0+1..2 a second failure would take a monitor down: the guard probes the references, all
            refused -> operator chat: NETWORK_DOWN. From then on every failing check is recorded
            "unknown: the checker's network is down (references failing: ...)"; nobody is down
    ...     the outage outlasts the guard's cached verdict (5 s): still one NETWORK_DOWN
    t1      everything opens -> the guard's next probe: NETWORK_BACK; the monitors, judged from
            fresh checks, are up with no failure counted
    t2      control: shop-1's target alone shut; the references answer: shop-1 DOWN; opened: UP
    monitors' chat: [shop-1 DOWN, shop-1 UP]   operator chat: [NETWORK_DOWN, NETWORK_BACK]

**Guard without references** (the share test, at least 5 monitors, 0.8 failing): six monitors
(confirm_after 3), five of them shut at once: "5 of 6 monitors failing at once" ->
NETWORK_DOWN, their checks unknown, the sixth (answering) stays up; opened: NETWORK_BACK.
confirm_after is 3 so that every monitor has failed once before any could be confirmed down:
with 2, a check in flight across the cut could make a monitor's first failure coincide with
another's confirming one, the share not reached yet (monitor/scheduler/connectivity.py).

**Dependencies**: router <- server <- site (server depends on router, site on server), each on
its own target; all three alert the ops chat, site the web chat too; confirm_after router 2,
server and site 3, so the router is confirmed first, as an operator would set it up::

    t0      the three targets shut (a router outage cuts what is behind it)
    t0+1..2 router DOWN, "Also affects: server, site"
    t0+2..3 server and site confirmed down and held: their checks say "depends on router, which
            is down (...)"; their incidents are recorded, nothing is sent
    t1      router and server open: router UP; server recovers in silence; site, still failing,
            DOWN ("Alert held while router was down") once nothing it depends on is down
    t2      site opens: site UP
    ops chat: [router DOWN, router UP, site DOWN, site UP]   web chat: [site DOWN, site UP]
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest
from support import FakeTelegram, ProcessFactory, TargetServer, wait_for
from support.alerts import said_to
from support.api import parse_time
from support.tcpproxy import TcpProxy

pytestmark = pytest.mark.e2e

MONITORS_CHAT = "8100"
OPERATOR_CHAT = "8199"
OPS_CHAT = "8200"
WEB_CHAT = "8201"
DEADLINE = 20.0
# While cut off, the guard probes the references again on its own every 5 s, and a verdict is
# cached for 5 s: the return is found within about 10 s.
RETURN_DEADLINE = 25.0
CUT_OFF = "unknown: the checker's network is down ("
NETWORK_DOWN, NETWORK_BACK = ("", "NETWORK_DOWN"), ("", "NETWORK_BACK")


class Gate(TcpProxy):
    """A target's path through the network: shut, it stops listening (new connections are
    refused) and resets the connections it carried; opened, it listens on the same port again.
    (A cut TcpProxy still accepts connections before resetting them: a host:port reference,
    which only connects, would count as answering.)"""

    def shut(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()

    async def open(self) -> None:
        self._server = await asyncio.start_server(self._accept, self.host, self.port)
        self.restore()

    def url(self) -> str:
        return f"http://{self.host}:{self.port}/"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


GateFactory = Callable[[], Awaitable[Gate]]
MonitorFactory = Callable[..., Awaitable[asyncpg.Record]]


@pytest.fixture
async def gate(target: TargetServer) -> AsyncIterator[GateFactory]:
    """``await gate()``: a new way to the target, closed at teardown."""
    made: list[Gate] = []

    async def make() -> Gate:
        assert target.port is not None
        new = await Gate(target.host, target.port).start()
        made.append(new)
        return new

    yield make
    for each in made:
        await each.close()


def shut(gates: Sequence[Gate]) -> None:
    """Shut every gate in one step of the loop: at the same moment, as far as the checker sees."""
    for each in gates:
        each.shut()


async def reopen(gates: Sequence[Gate]) -> datetime:
    """Open the gates again; the moment they all were."""
    await asyncio.gather(*(each.open() for each in gates))
    return datetime.now(UTC)


async def watch(
    monitor_factory: MonitorFactory,
    name: str,
    to: Gate,
    chat: str,
    *,
    confirm_after: int,
    depends_on: Sequence[int] = (),
) -> int:
    """A monitor checking the target through ``to`` every second, alerting ``chat``; its id."""
    row = await monitor_factory(
        name=name,
        url=to.url(),
        interval_seconds=1,
        timeout_seconds=1,
        confirm_after=confirm_after,
        depends_on=list(depends_on),
        telegram_chat_id=chat,
    )
    return int(row["id"])


async def start(procs: ProcessFactory, fake: FakeTelegram, **scheduler_env: str) -> None:
    await asyncio.gather(
        procs.start("scheduler", env={"MONITOR_OPERATOR_CHAT": OPERATOR_CHAT, **scheduler_env}),
        procs.start("alerter", env=fake.env()),
    )


# -- what the database says ----------------------------------------------------------------


async def all_up(
    db: asyncpg.Connection, ids: Sequence[int], *, checked_after: datetime | None = None
) -> bool:
    """Every monitor up, no failure counted, its latest check a success (after ``checked_after``)."""
    count = await db.fetchval(
        """SELECT count(*) FROM monitor_state WHERE monitor_id = ANY($1::bigint[]) AND status = 'up'
           AND consecutive_failures = 0 AND last_ok AND last_check_at > $2""",
        list(ids),
        checked_after or datetime.fromtimestamp(0, UTC),
    )
    return count == len(ids)


async def failures(
    db: asyncpg.Connection, ids: Sequence[int], since: datetime, until: datetime | None = None
) -> list[asyncpg.Record]:
    """Failing checks of these monitors after ``since`` (and before ``until``), in time order."""
    return await db.fetch(
        """SELECT monitor_id, time, error FROM checks WHERE NOT ok AND monitor_id = ANY($1::bigint[])
           AND time > $2 AND time < $3 ORDER BY time""",
        list(ids),
        since,
        until or datetime.now(UTC) + timedelta(days=1),
    )


def per_monitor(rows: Sequence[asyncpg.Record], ids: Sequence[int], prefix: str) -> dict[int, int]:
    """How many of the rows of each monitor have an error starting with ``prefix``."""
    found = dict.fromkeys(ids, 0)
    for row in rows:
        if (row["error"] or "").startswith(prefix):
            found[row["monitor_id"]] += 1
    return found


async def outbox_kinds(db: asyncpg.Connection) -> list[tuple[int | None, str]]:
    """(monitor id, kind) of every event written, in order."""
    return [
        (r["monitor_id"], r["kind"])
        for r in await db.fetch("SELECT monitor_id, kind FROM outbox ORDER BY id")
    ]


async def notice_at(db: asyncpg.Connection, kind: str) -> datetime | None:
    """When the scheduler found the checker cut off (``connectivity_lost``) or back."""
    payload = await db.fetchval("SELECT payload FROM outbox WHERE kind = $1 ORDER BY id LIMIT 1", kind)
    return parse_time(payload["at"]) if payload is not None else None


async def chat_says(
    fake: FakeTelegram,
    chat: str,
    expected: list[tuple[str, str]],
    *,
    timeout: float = DEADLINE,  # noqa: ASYNC109
) -> None:
    """Wait until the chat received exactly ``expected``, (name, KIND) in order."""
    await wait_for(
        lambda: said_to(fake, chat) == expected,
        timeout=timeout,
        message=lambda: f"chat {chat}: {said_to(fake, chat)} (want {expected}); {fake.describe()}",
    )


def message_with(fake: FakeTelegram, chat: str, needle: str) -> str:
    """The one message to ``chat`` containing ``needle``."""
    texts = [r.text or "" for r in fake.messages_to(chat) if needle in (r.text or "")]
    assert len(texts) == 1, (needle, [r.text for r in fake.messages_to(chat)])
    return texts[0]


# -- the connectivity guard ----------------------------------------------------------------


async def test_a_checker_cut_off_from_every_target_and_reference_tells_only_the_operator(
    db: asyncpg.Connection,
    monitor_factory: MonitorFactory,
    gate: GateFactory,
    fake_telegram: FakeTelegram,
    procs: ProcessFactory,
) -> None:
    web_reference, tcp_reference = await gate(), await gate()
    gates = [await gate() for _ in range(5)]
    shops = [
        await watch(monitor_factory, f"shop-{n}", to, MONITORS_CHAT, confirm_after=2)
        for n, to in enumerate(gates, 1)
    ]
    await start(
        procs, fake_telegram, MONITOR_CONNECTIVITY_TARGETS=f"{web_reference.url()},{tcp_reference.address}"
    )
    await wait_for(lambda: all_up(db, shops), timeout=DEADLINE, message="every shop checked up")

    shut([*gates, web_reference, tcp_reference])
    lost_at = await wait_for(
        lambda: notice_at(db, "connectivity_lost"), timeout=DEADLINE, message="cut off found"
    )

    async def outlasted_the_cached_verdict() -> bool:
        counts = per_monitor(await failures(db, shops, lost_at), shops, CUT_OFF)
        return min(counts.values()) >= 7

    await wait_for(outlasted_the_cached_verdict, timeout=DEADLINE, message="7 unknown checks of each shop")
    meanwhile = await failures(db, shops, lost_at)
    assert all(r["error"].startswith(CUT_OFF + "references failing: ") for r in meanwhile), meanwhile
    assert web_reference.url() in meanwhile[0]["error"] and tcp_reference.address in meanwhile[0]["error"]
    assert await db.fetchval("SELECT count(*) FROM monitor_state WHERE status = 'down'") == 0
    assert await db.fetchval("SELECT count(*) FROM incidents") == 0
    assert await outbox_kinds(db) == [(None, "connectivity_lost")]
    await chat_says(fake_telegram, OPERATOR_CHAT, [NETWORK_DOWN])
    assert "references failing" in message_with(fake_telegram, OPERATOR_CHAT, "network is down")

    opened_at = await reopen([*gates, web_reference, tcp_reference])
    await chat_says(fake_telegram, OPERATOR_CHAT, [NETWORK_DOWN, NETWORK_BACK], timeout=RETURN_DEADLINE)
    back_at = await notice_at(db, "connectivity_restored")
    assert back_at is not None and back_at >= opened_at
    await wait_for(
        lambda: all_up(db, shops, checked_after=back_at), timeout=DEADLINE, message="judged afresh"
    )
    assert await failures(db, shops, opened_at) == []
    assert await outbox_kinds(db) == [(None, "connectivity_lost"), (None, "connectivity_restored")]

    # Control: one target failing while the references answer is an outage like any other.
    shut(gates[:1])
    await chat_says(fake_telegram, MONITORS_CHAT, [("shop-1", "DOWN")])
    cause = await db.fetchval("SELECT error FROM incidents WHERE monitor_id = $1", shops[0])
    assert cause and not cause.startswith(CUT_OFF), cause
    await reopen(gates[:1])
    await chat_says(fake_telegram, MONITORS_CHAT, [("shop-1", "DOWN"), ("shop-1", "UP")])
    assert said_to(fake_telegram, OPERATOR_CHAT) == [NETWORK_DOWN, NETWORK_BACK]
    assert await outbox_kinds(db) == [
        (None, "connectivity_lost"),
        (None, "connectivity_restored"),
        (shops[0], "down"),
        (shops[0], "up"),
    ]
    assert not procs.tracebacks()


async def test_most_monitors_failing_at_once_without_references_tells_only_the_operator(
    db: asyncpg.Connection,
    monitor_factory: MonitorFactory,
    gate: GateFactory,
    fake_telegram: FakeTelegram,
    procs: ProcessFactory,
) -> None:
    gates = [await gate() for _ in range(6)]
    ids = [
        await watch(monitor_factory, f"shop-{n}", to, MONITORS_CHAT, confirm_after=3)
        for n, to in enumerate(gates, 1)
    ]
    cut, steady = ids[:5], ids[5]
    await start(
        procs,
        fake_telegram,
        MONITOR_CONNECTIVITY_TARGETS="",
        MONITOR_CONNECTIVITY_MIN_MONITORS="5",
        MONITOR_CONNECTIVITY_FAILING_SHARE="0.8",
    )
    await wait_for(lambda: all_up(db, ids), timeout=DEADLINE, message="every shop checked up")

    shut(gates[:5])
    lost_at = await wait_for(
        lambda: notice_at(db, "connectivity_lost"), timeout=DEADLINE, message="cut off found"
    )

    async def unknown_for_a_while() -> bool:
        return min(per_monitor(await failures(db, cut, lost_at), cut, CUT_OFF).values()) >= 4

    await wait_for(unknown_for_a_while, timeout=DEADLINE, message="4 unknown checks of each cut shop")
    meanwhile = await failures(db, ids, lost_at)
    assert {r["error"] for r in meanwhile} == {CUT_OFF + "5 of 6 monitors failing at once)"}, meanwhile
    assert await db.fetchval("SELECT count(*) FROM monitor_state WHERE status = 'down'") == 0
    assert await db.fetchval("SELECT count(*) FROM incidents") == 0
    assert await all_up(db, [steady])
    assert await outbox_kinds(db) == [(None, "connectivity_lost")]
    await chat_says(fake_telegram, OPERATOR_CHAT, [NETWORK_DOWN])
    assert "5 of 6 monitors failing at once" in message_with(fake_telegram, OPERATOR_CHAT, "network is down")

    opened_at = await reopen(gates[:5])
    await chat_says(fake_telegram, OPERATOR_CHAT, [NETWORK_DOWN, NETWORK_BACK], timeout=RETURN_DEADLINE)
    back_at = await notice_at(db, "connectivity_restored")
    assert back_at is not None and back_at >= opened_at
    await wait_for(lambda: all_up(db, ids, checked_after=back_at), timeout=DEADLINE, message="judged afresh")
    assert said_to(fake_telegram, MONITORS_CHAT) == []
    assert await outbox_kinds(db) == [(None, "connectivity_lost"), (None, "connectivity_restored")]
    assert not procs.tracebacks()


# -- dependencies --------------------------------------------------------------------------


async def also_alert(db: asyncpg.Connection, monitor_id: int, chat: str) -> None:
    """Attach a second Telegram chat to a monitor (as the API's channel_ids would)."""
    channel = await db.fetchval(
        """INSERT INTO channels (account_id, kind, name, config)
           SELECT account_id, 'telegram', $2, $3 FROM monitors WHERE id = $1 RETURNING id""",
        monitor_id,
        f"Telegram {chat}",
        {"chat_id": chat},
    )
    await db.execute(
        "INSERT INTO monitor_channels (monitor_id, channel_id) VALUES ($1, $2)", monitor_id, channel
    )


async def test_a_chain_of_three_sends_one_message_for_the_router_and_holds_the_rest(
    db: asyncpg.Connection,
    monitor_factory: MonitorFactory,
    gate: GateFactory,
    fake_telegram: FakeTelegram,
    procs: ProcessFactory,
) -> None:
    to_router, to_server, to_site = await gate(), await gate(), await gate()
    router = await watch(monitor_factory, "router", to_router, OPS_CHAT, confirm_after=2)
    server = await watch(monitor_factory, "server", to_server, OPS_CHAT, confirm_after=3, depends_on=[router])
    site = await watch(monitor_factory, "site", to_site, OPS_CHAT, confirm_after=3, depends_on=[server])
    await also_alert(db, site, WEB_CHAT)
    await start(procs, fake_telegram)
    await wait_for(
        lambda: all_up(db, [router, server, site]), timeout=DEADLINE, message="all three checked up"
    )

    shut([to_router, to_server, to_site])
    await chat_says(fake_telegram, OPS_CHAT, [("router", "DOWN")])
    assert "Also affects: server, site" in message_with(fake_telegram, OPS_CHAT, "router")

    seen: list[tuple[str, str | None]] = []

    async def held_down() -> bool:
        rows = await db.fetch(
            "SELECT status, held FROM monitor_state WHERE monitor_id = ANY($1::bigint[]) ORDER BY monitor_id",
            [server, site],
        )
        seen[:] = [(r["status"], r["held"]) for r in rows]
        return seen == [("down", "router was down")] * 2

    await wait_for(
        held_down,
        timeout=DEADLINE,
        message=lambda: f"server and site down, held while the router is: {seen}; {fake_telegram.describe()}",
    )
    # From the check after the one that took the router down on (the next slot, 0.1 s later),
    # every failure of the two is blamed on the router.
    router_down_at = await db.fetchval(
        "SELECT time FROM checks WHERE monitor_id = $1 AND NOT ok ORDER BY time OFFSET 1 LIMIT 1", router
    )
    blamed = "depends on router, which is down ("

    async def blamed_for_a_while() -> bool:
        rows = await failures(db, [server, site], router_down_at + timedelta(seconds=0.05))
        return min(per_monitor(rows, [server, site], blamed).values()) >= 3

    await wait_for(blamed_for_a_while, timeout=DEADLINE, message="3 failures of each blamed on the router")
    meanwhile = await failures(db, [server, site], router_down_at + timedelta(seconds=0.05))
    assert all(r["error"].startswith(blamed) for r in meanwhile), meanwhile
    open_incidents = (
        "SELECT count(*) FROM incidents WHERE ended_at IS NULL AND monitor_id = ANY($1::bigint[])"
    )
    assert await db.fetchval(open_incidents, [server, site]) == 2  # recorded as down all the same
    assert await outbox_kinds(db) == [(router, "down")]

    await reopen([to_router, to_server])
    await chat_says(fake_telegram, OPS_CHAT, [("router", "DOWN"), ("router", "UP"), ("site", "DOWN")])
    await chat_says(fake_telegram, WEB_CHAT, [("site", "DOWN")])
    assert "Alert held while router was down" in message_with(fake_telegram, WEB_CHAT, "site")
    assert await all_up(db, [router, server])
    assert await db.fetchval(
        "SELECT count(*) FROM incidents WHERE monitor_id = $1 AND ended_at IS NOT NULL", server
    )

    await reopen([to_site])
    await chat_says(
        fake_telegram, OPS_CHAT, [("router", "DOWN"), ("router", "UP"), ("site", "DOWN"), ("site", "UP")]
    )
    await chat_says(fake_telegram, WEB_CHAT, [("site", "DOWN"), ("site", "UP")])
    assert await outbox_kinds(db) == [(router, "down"), (router, "up"), (site, "down"), (site, "up")]
    assert not procs.tracebacks()
