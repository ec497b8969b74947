"""Shared pacing (monitor/alerter/pacing.py) against the real Redis, database 6 only.

Each pacer gets its own client (its own connections), as separate alerters would. Limits
are checked on the server's own grant times: an observer copies every window's members
(score = the server's grant time in µs) while the pacers run, long before a window trims them.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
import redis.asyncio as aioredis
from structlog.testing import capture_logs
from support import free_port, wait_for
from support.tcpproxy import TcpProxy

from monitor.alerter.pacing import PREFIX, SharedPacer
from monitor.channels.base import Bucket

pytestmark = pytest.mark.timeout(60)

DB = 6  # this module's Redis database: flushed before and after each test


def _pacing_url() -> str:
    base = urlsplit(os.environ.get("MONITOR_REDIS_URL") or "redis://127.0.0.1:56379/0")
    return urlunsplit(base._replace(path=f"/{DB}"))


Connect = Callable[..., aioredis.Redis]


@pytest.fixture
async def connect() -> AsyncIterator[Connect]:
    """``connect()``: a new client on database 6 (``connect(url)`` for another address);
    database 6 is emptied first and last, and every client closed."""
    url = _pacing_url()
    clients: list[aioredis.Redis] = []

    def make(at: str = url, **options: Any) -> aioredis.Redis:
        client = aioredis.Redis.from_url(at, **options)
        clients.append(client)
        return client

    admin = make()
    await admin.flushdb()
    try:
        yield make
    finally:
        await admin.flushdb()
        for client in clients:
            await client.aclose()


@pytest.fixture
def admin(connect: Connect) -> aioredis.Redis:
    return connect(decode_responses=True)


async def _keys(client: aioredis.Redis) -> list[str]:
    """The pacing keys that expire (all but the epoch, which stays)."""
    return sorted([k async for k in client.scan_iter(match=PREFIX + "*") if k != PREFIX + "epoch"])


# -- N pacers, one limit ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pacers", "count", "per"),
    [(2, 1, 0.08), (3, 1, 0.08), (3, 5, 0.4)],
    ids=["2 pacers, 1 per 0.08 s", "3 pacers, 1 per 0.08 s", "3 pacers, 5 per 0.4 s"],
)
async def test_pacers_together_never_exceed_the_limit(
    connect: Connect, admin: aioredis.Redis, pacers: int, count: int, per: float
) -> None:
    bucket = Bucket("test:hammered", count, per)
    shared = [SharedPacer(connect()) for _ in range(pacers)]
    window_key = shared[0].window_key(bucket.key)
    duration = 2.0
    granted = [0] * pacers
    seen: dict[str, int] = {}
    stop, done = asyncio.Event(), asyncio.Event()

    async def observe() -> None:
        while True:
            last = done.is_set()
            entries: list[Any] = await admin.zrange(window_key, 0, -1, withscores=True)
            seen.update((member, int(score)) for member, score in entries)
            if last:
                return
            await asyncio.sleep(0.01)

    async def hammer(index: int) -> None:
        while not stop.is_set():
            await shared[index].acquire([bucket])
            granted[index] += 1

    observer = asyncio.create_task(observe())
    # Two callers per pacer, as an alerter has several senders at once. Each ends after the
    # grant it is waiting for when told to stop.
    workers = [asyncio.create_task(hammer(i)) for i in range(pacers) for _ in range(2)]
    await asyncio.sleep(duration)  # how long to hammer, not a condition
    stop.set()
    await asyncio.gather(*workers)
    done.set()
    await observer

    times = sorted(seen.values())
    assert len(times) == sum(granted), f"observer saw {len(times)} grants, pacers got {granted}"
    window_us = bucket.window_us
    crowded = [
        (times[i], times[i + count])
        for i in range(len(times) - count)
        if times[i + count] - times[i] < window_us
    ]
    assert not crowded, f"more than {count} grants within {per}s (server µs): {crowded[:5]}"
    # Paced, not starved: near the limit, and every alerter got its turns (with ~25 grants
    # shared at random, one of three pacers gets none about once in 10,000 runs). Each grant
    # after a wait costs a round trip to Redis, which a loaded machine makes slow, so "near"
    # is two fifths; pacers that waited far past the window (a starving one) get a tenth.
    most = count * (duration / per + 1)
    assert sum(granted) >= 0.4 * count * duration / per, f"{granted} grants, the limit allows ~{most:g}"
    assert all(granted), granted


# -- several buckets ------------------------------------------------------------------------


async def test_several_buckets_are_all_or_nothing(connect: Connect, admin: aioredis.Redis) -> None:
    one, other = SharedPacer(connect()), SharedPacer(connect())
    chat = Bucket("test:chat", 1, 30.0)
    bot = Bucket("test:bot", 3, 30.0)

    assert await one.reserve([chat, bot]) == 0.0
    wait = await other.reserve([chat, bot])
    assert 29.0 < wait <= 30.0
    # The refused reservation took nothing from the bot's bucket.
    assert await admin.zcard(one.window_key(bot.key)) == 1
    assert await other.reserve([bot]) == 0.0
    assert await one.reserve([bot]) == 0.0
    assert 29.0 < await other.reserve([bot]) <= 30.0
    # Now the bot is full, so the chat's next message would be refused even on its own
    # turn; a free bucket alongside a full one takes nothing either.
    free = Bucket("test:free", 5, 30.0)
    assert await one.reserve([free, bot]) > 0
    assert await admin.zcard(one.window_key(free.key)) == 0
    assert await admin.zcard(one.window_key(chat.key)) == 1
    assert await admin.zcard(one.window_key(bot.key)) == 3


async def test_a_bucket_key_given_twice_is_refused(connect: Connect) -> None:
    pacer = SharedPacer(connect())
    with pytest.raises(ValueError, match="twice"):
        await pacer.reserve([Bucket("test:same", 1, 1.0), Bucket("test:same", 20, 61.0)])
    assert await pacer.reserve([]) == 0.0


@pytest.mark.parametrize(
    ("key", "count", "per"),
    [("", 1, 1.0), ("k", 0, 1.0), ("k", 1, 0.0), ("k", 1, -1.0), ("k", 1, float("nan"))],
    ids=["no key", "count 0", "per 0", "per negative", "per nan"],
)
def test_a_bucket_refuses_a_limit_that_means_nothing(key: str, count: int, per: float) -> None:
    with pytest.raises(ValueError):
        Bucket(key, count, per)


# -- the wait ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("count", "per"), [(1, 0.3), (3, 0.4)], ids=["1 per 0.3 s", "3 per 0.4 s"])
async def test_the_returned_wait_is_accurate(
    connect: Connect, admin: aioredis.Redis, count: int, per: float
) -> None:
    pacer = SharedPacer(connect())
    bucket = Bucket("test:accurate", count, per)
    for _ in range(2):
        first = time.monotonic()
        for _ in range(count):
            assert await pacer.reserve([bucket]) == 0.0
        wait = await pacer.reserve([bucket])
        after = time.monotonic()
        # The window frees when the first of those grants leaves it: no sooner, no later.
        assert per - (after - first) - 0.005 <= wait <= per
        await asyncio.sleep(wait)
        assert await pacer.reserve([bucket]) == 0.0, "refused after sleeping the wait it gave"
        # Back to an empty window for the next round (the grant just made included).
        await asyncio.sleep(await _until_free(admin, pacer, bucket))


async def _until_free(client: aioredis.Redis, pacer: SharedPacer, bucket: Bucket) -> float:
    """How long until ``bucket``'s window is empty (its latest grant has left it)."""
    newest: list[Any] = await client.zrange(pacer.window_key(bucket.key), -1, -1, withscores=True)
    if not newest:
        return 0.0
    seconds, micros = await client.time()
    now_us = int(seconds) * 1_000_000 + int(micros)
    return max(0.0, (newest[0][1] + bucket.window_us - now_us) / 1_000_000)


# -- block ------------------------------------------------------------------------------------


async def test_block_holds_every_pacer(connect: Connect, admin: aioredis.Redis) -> None:
    pacers = [SharedPacer(connect()) for _ in range(3)]
    bucket = Bucket("test:blocked", 10, 1.0)
    elsewhere = Bucket("test:elsewhere", 10, 1.0)

    start = time.monotonic()

    def left() -> float:
        """What is left of the block, give or take the two clocks (see the accurate-wait test)."""
        return 0.6 - (time.monotonic() - start) - 0.005

    await pacers[0].block(bucket.key, 0.6)
    waits = [await pacer.reserve([bucket]) for pacer in pacers]
    assert all(left() <= wait <= 0.6 for wait in waits), (waits, left())
    # Another destination is not held; one reserved with the blocked one is.
    assert await pacers[1].reserve([elsewhere]) == 0.0
    assert left() <= await pacers[1].reserve([elsewhere, bucket]) <= 0.6
    # A shorter Retry-After from another alerter does not shorten the block.
    await pacers[2].block(bucket.key, 0.05)
    wait = await pacers[1].reserve([bucket])
    assert wait >= left(), (wait, left())
    assert await admin.zcard(pacers[0].window_key(bucket.key)) == 0, "a blocked reservation took a slot"

    await asyncio.sleep(wait)
    assert await pacers[1].reserve([bucket]) == 0.0
    assert time.monotonic() - start >= 0.6 - 0.01
    assert await pacers[2].reserve([bucket]) == 0.0


async def test_block_of_nothing_is_a_no_op(connect: Connect, admin: aioredis.Redis) -> None:
    pacer = SharedPacer(connect())
    await pacer.block("test:none", 0)
    await pacer.block("test:none", -3)
    assert await _keys(admin) == []
    assert await pacer.reserve([Bucket("test:none", 1, 1.0)]) == 0.0


# -- expiry -----------------------------------------------------------------------------------


async def test_keys_expire_after_their_window(connect: Connect, admin: aioredis.Redis) -> None:
    pacer = SharedPacer(connect())
    bucket = Bucket("test:expiring", 1, 0.3)
    assert await pacer.reserve([bucket]) == 0.0
    assert await pacer.reserve([bucket]) > 0  # refused: must not leave a key without a TTL
    await pacer.block("test:held", 0.4)

    keys = await _keys(admin)
    assert keys == [pacer.block_key("test:held"), pacer.window_key(bucket.key)]
    ttls = {key: await admin.pttl(key) for key in keys}
    assert 0 < ttls[pacer.window_key(bucket.key)] <= 300, ttls
    assert 0 < ttls[pacer.block_key("test:held")] <= 400, ttls

    await wait_for(
        lambda: _nothing_left(admin), timeout=10.0, message="pacing keys still there after their window"
    )


async def _nothing_left(client: aioredis.Redis) -> bool:
    return not await _keys(client)


# -- Redis away -------------------------------------------------------------------------------


async def test_without_redis_pacing_goes_on_in_process(connect: Connect) -> None:
    closed = f"redis://127.0.0.1:{free_port()}/{DB}"
    pacer = SharedPacer(connect(closed), timeout=0.5, retry_interval=0.2)
    bucket = Bucket("test:local", 2, 0.3)

    with capture_logs() as logs:
        grants: list[float] = []
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            wait = await pacer.reserve([bucket])
            if wait == 0.0:
                grants.append(time.monotonic())
            else:
                await asyncio.sleep(wait)
        blocked_at = time.monotonic()
        await pacer.block("test:local-held", 0.5)
        held = await pacer.reserve([Bucket("test:local-held", 5, 1.0)])
        held_left = 0.5 - (time.monotonic() - blocked_at)

    assert not pacer.redis_available
    assert len(grants) >= 4, grants  # 2 at once, 2 more 0.3 s later, ...
    crowded = [(a, b) for a, b in zip(grants, grants[2:], strict=False) if b - a < 0.3 - 0.001]
    assert not crowded, f"more than 2 grants within 0.3 s: {crowded}"
    assert held_left <= held <= 0.5 and held > 0, (held, held_left)
    events = [entry["event"] for entry in logs]
    assert events.count("pacing.redis_unavailable") == 1, logs
    assert "pacing.redis_back" not in events


async def test_pacing_returns_to_redis_after_an_outage(connect: Connect, admin: aioredis.Redis) -> None:
    upstream = urlsplit(_pacing_url())
    proxy = await TcpProxy(upstream.hostname or "127.0.0.1", upstream.port or 6379).start()
    try:
        through = urlunsplit(upstream._replace(netloc=f"127.0.0.1:{proxy.port}"))
        pacer = SharedPacer(connect(through), timeout=0.5, retry_interval=0.2)
        other = SharedPacer(connect())
        bucket = Bucket("test:outage", 1, 0.3)
        with capture_logs() as logs:
            assert await pacer.reserve([bucket]) == 0.0
            proxy.cut()
            # Still paced (in-process), never an exception.
            assert await pacer.reserve([Bucket("test:during", 1, 5.0)]) == 0.0
            assert await pacer.reserve([Bucket("test:during", 1, 5.0)]) > 4.0
            assert not pacer.redis_available
            proxy.restore()
            await wait_for(
                lambda: _shared_again(pacer, other, bucket),
                timeout=5.0,
                message="the pacer's grants reach Redis again",
            )
        events = [entry["event"] for entry in logs]
        assert events.count("pacing.redis_unavailable") == 1, logs
        assert events.count("pacing.redis_back") == 1, logs
        assert pacer.redis_available
    finally:
        await proxy.close()


async def _shared_again(pacer: SharedPacer, other: SharedPacer, bucket: Bucket) -> bool:
    """True once a grant to ``pacer`` holds ``other`` back (both on Redis)."""
    wait = await pacer.reserve([bucket])
    if wait > 0:
        await asyncio.sleep(wait)
        return False
    return pacer.redis_available and await other.reserve([bucket]) > 0


async def test_without_redis_the_pacer_remembers_what_redis_granted_it(connect: Connect) -> None:
    upstream = urlsplit(_pacing_url())
    proxy = await TcpProxy(upstream.hostname or "127.0.0.1", upstream.port or 6379).start()
    try:
        through = urlunsplit(upstream._replace(netloc=f"127.0.0.1:{proxy.port}"))
        pacer = SharedPacer(connect(through), timeout=0.5, retry_interval=0.2)
        bucket = Bucket("test:remembered", 2, 5.0)
        assert await pacer.reserve([bucket]) == 0.0
        assert await pacer.reserve([bucket]) == 0.0
        assert pacer.redis_available
        proxy.cut()
        # In-process now, from this pacer's own two messages, not from an empty window.
        assert 4.0 < await pacer.reserve([bucket]) <= 5.0
        assert not pacer.redis_available
    finally:
        await proxy.close()


# -- Redis without its data -------------------------------------------------------------------


class Sent:
    """What went where, as the deliveries table tells it (monitor/alerter/history.py): the
    test records each message it had a grant for. ``asked``: how often it was asked."""

    def __init__(self) -> None:
        self.messages: dict[str, list[tuple[str, float]]] = defaultdict(list)
        self.known = True
        self.asked = 0

    def record(self, destination: str) -> None:
        self.messages[destination].append((f"m{len(self.messages[destination])}", time.monotonic()))

    def ids(self, destination: str) -> list[str]:
        return [f"seed:{destination}:{message}" for message, _ in self.messages[destination]]

    async def __call__(self, destination: str, seconds: float) -> list[tuple[str, float]] | None:
        self.asked += 1
        if not self.known:
            return None
        now = time.monotonic()
        return [(message, now - at) for message, at in self.messages[destination] if now - at < seconds]


async def test_a_window_lost_with_redis_data_is_seeded_before_the_next_message(
    connect: Connect, admin: aioredis.Redis
) -> None:
    sent = Sent()
    one, other = SharedPacer(connect(), history=sent), SharedPacer(connect(), history=sent)
    bucket = Bucket("test:seeded", 3, 5.0)
    for pacer in (one, other, one):
        assert await pacer.reserve([bucket], destination="chat") == 0.0
        sent.record("chat")

    await admin.flushdb()  # as a restart of a Redis that keeps nothing
    with capture_logs() as logs:
        waits = await asyncio.gather(*(p.reserve([bucket], destination="chat") for p in (one, other)))

    # Both know the three messages again, from the history, and neither sends a fourth.
    assert all(4.0 < wait <= 5.0 for wait in waits), waits
    assert sorted(await admin.zrange(one.window_key(bucket.key), 0, -1)) == sent.ids("chat")
    assert [e["event"] for e in logs].count("pacing.redis_data_lost") == 2, logs


async def test_seeding_adds_each_message_once_and_none_sent_since(
    connect: Connect, admin: aioredis.Redis
) -> None:
    sent = Sent()
    one = SharedPacer(connect(), history=sent)
    bucket = Bucket("test:once", 10, 30.0)
    for _ in range(2):
        assert await one.reserve([bucket], destination="chat") == 0.0
        sent.record("chat")

    await admin.flushdb()
    asked = sent.asked
    assert await one.reserve([bucket], destination="chat") == 0.0  # seeds, then sends
    sent.record("chat")
    assert sent.asked == asked + 1
    # A pacer that comes later seeds too: the two lost messages are there already, and the one
    # sent since holds its own grant, so nothing is added twice.
    late = SharedPacer(connect(), history=sent)
    assert await late.reserve([bucket], destination="chat") == 0.0
    members = await admin.zrange(one.window_key(bucket.key), 0, -1)
    assert len(members) == 4, members
    assert sorted(m for m in members if m.startswith("seed:")) == sent.ids("chat")[:2]
    # Once seeded, a destination's messages cost no history query.
    asked = sent.asked
    for pacer in (one, late, one):
        assert await pacer.reserve([bucket], destination="chat") == 0.0
    assert sent.asked == asked


async def test_a_destination_whose_history_is_unknown_waits(connect: Connect, admin: aioredis.Redis) -> None:
    sent = Sent()
    sent.known = False  # the database is away
    pacer = SharedPacer(connect(), history=sent)
    bucket = Bucket("test:unknown", 5, 10.0)
    # A new epoch (the first reservation makes it): what went there in the last 10 s must be
    # known first.
    assert await pacer.reserve([bucket], destination="chat") > 0
    assert await admin.zcard(pacer.window_key(bucket.key)) == 0
    sent.known = True
    assert await pacer.reserve([bucket], destination="chat") == 0.0


async def test_blocks_are_set_again_after_redis_lost_its_data(
    connect: Connect, admin: aioredis.Redis
) -> None:
    one, other = SharedPacer(connect()), SharedPacer(connect())
    blocked, elsewhere = Bucket("test:held", 5, 1.0), Bucket("test:other", 5, 1.0)
    assert await one.reserve([elsewhere]) == 0.0
    await one.block(blocked.key, 3.0)
    await admin.flushdb()
    assert await one.reserve([elsewhere]) == 0.0  # one learns of the loss, and holds again
    assert 2.0 < await other.reserve([blocked]) <= 3.0
