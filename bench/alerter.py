"""Alerter benchmark: event-to-Telegram latency and throughput of the real ``monitor alerter``.

    python -m bench.alerter --events 1000 [--monitors 100] [--chats 10] [--groups 0]
                            [--kinds telegram,webhook,slack,discord,ntfy,pagerduty,email]
                            [--rate 50 | --burst] [--json PATH] [--keep]

One run: the benchmark database (``monitor_bench_alerter``, created and migrated when missing)
and Redis db 4 are emptied; a fake Telegram (tests/support/fake_telegram.py, enforcing the
flood limits with 429s) listens on loopback; the real alerter is started against both; then
``--events`` events are published to ``monitor:events`` exactly as the scheduler's relay does,
paced at ``--rate`` events a second (one XADD each) or, with ``--burst``, all in one pipeline.
Each monitor alternates down, up, down...; monitor ``m`` alerts chat ``m mod --chats`` (the
first ``--groups`` chats are group chats, 20 messages a minute). With ``--kinds``, monitor ``m``
alerts a channel of kind ``kinds[m mod k]`` instead (``k`` kinds; destination
``(m div k) mod --chats`` of that kind), each kind's fake from the test suite
(tests/support/fake_channels.py, a real aiosmtpd server for email) enforcing its service's
limits; secrets are sealed as the API stores them, so the alerter opens them as in
production. The run ends when every event is in a delivered message (or at ``--timeout``),
then the alerter is stopped by its PID.

Latency of an event: from its XADD (the millisecond in its stream entry id, Redis's clock on
this host) to the fake's receipt of the message that carries it; the k-th alert of a monitor
in arrival order is its k-th event (the alerter keeps order per monitor, which is checked).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import redis.asyncio as aioredis

from bench import database, proc, process
from bench.nginx import free_port
from monitor.events import Event, publish

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
BENCH_DB = "monitor_bench_alerter"
BENCH_REDIS_DB = 4

# The fake Telegram of the test suite, reused as is.
sys.path.insert(0, str(REPO / "tests"))
from support.alerts import alerts_in  # noqa: E402
from support.fake_channels import FakeChannels  # noqa: E402
from support.fake_smtp import FakeSmtp  # noqa: E402
from support.fake_telegram import FakeTelegram  # noqa: E402

from monitor.secrets import SecretBox  # noqa: E402

KINDS = ("telegram", "webhook", "slack", "discord", "ntfy", "pagerduty", "email")
ALERT_TITLE = re.compile(r"(?P<name>bench-\d{4}) (?:is )?(?P<kind>DOWN|UP)\b")
NTFY_LINE = re.compile(r"^\S+ (?P<name>bench-\d{4}) (?P<kind>DOWN|UP)\b", re.M)
SLACK_SECTION = re.compile(r"\|(?P<name>bench-\d{4})>\* (?P<kind>DOWN|UP)\b")
EMAIL_SUBJECT = re.compile(r"^\[(?P<kind>DOWN|UP)\] (?P<name>bench-\d{4})")


class Fakes:
    """The fake of every kind the run uses, and each one's channel for a destination index."""

    def __init__(self, telegram: FakeTelegram, web: FakeChannels, smtp: FakeSmtp) -> None:
        self.telegram, self.web, self.smtp = telegram, web, smtp
        self._box = SecretBox.from_setting(database.BENCH_SECRET_KEY)

    def channel(self, kind: str, index: int, groups: int) -> dict[str, Any]:
        """The channel as an event carries it (secrets sealed) for destination ``index``."""
        seal = self._box.seal
        name = f"{kind}-{index}"
        config: dict[str, Any]
        if kind == "telegram":
            config = {"chat_id": chat_id(index, groups)}
        elif kind == "webhook":
            url = self.web.webhooks.url_for(name)
            config = {"url": seal(url), "secret": seal(self.web.webhooks.secret(name))}
        elif kind == "slack":
            config = {"url": seal(self.web.slack.url_for(name))}
        elif kind == "discord":
            config = {"url": seal(self.web.discord.url_for(name))}
        elif kind == "ntfy":
            config = {"url": seal(self.web.ntfy.url_for(name)), "priority_down": 5, "priority_up": 3}
        elif kind == "pagerduty":
            key = self.web.pagerduty.new_routing_key()
            config = {"routing_key": seal(key), "url": self.web.pagerduty.url_for(), "severity": "critical"}
        else:
            # STARTTLS and AUTH, as a mail provider asks (the fake's CA: MONITOR_CA_FILE).
            config = {"host": "127.0.0.1", "port": self.smtp.port, "security": "starttls",
                      "username": self.smtp.user, "password": seal(self.smtp.password),
                      "from_address": "monitor@bench.test", "to": [f"{name}@bench.test"]}  # fmt: skip
        channel_id = KINDS.index(kind) * 100_000 + index + 1
        return {"id": channel_id, "kind": kind, "name": name, **config}

    def delivered(self) -> list[tuple[str, str, str, float]]:
        """(kind of channel, monitor name, "down" | "up", received at) of every alert that arrived."""
        found: list[tuple[str, str, str, float]] = []

        def add(kind: str, matches: Any, at: float) -> None:
            found.extend((kind, m["name"], m["kind"].lower(), at) for m in matches)

        for request in self.telegram.messages:
            found.extend(("telegram", n, k.lower(), request.received_at) for n, k in alerts_in(request.text))
        for request in self.web.webhooks.messages:
            body = request.json
            if body.get("type") in ("monitor.down", "monitor.up"):
                kind = body["type"].removeprefix("monitor.")
                found.append(("webhook", body["monitor"]["name"], kind, request.received_at))
        for request in self.web.slack.messages:
            blocks = request.json.get("blocks") or []
            texts = [b["text"]["text"] for b in blocks if b.get("type") == "section" and "text" in b]
            header = next((b["text"]["text"] for b in blocks if b.get("type") == "header"), "")
            single = ALERT_TITLE.search(header)
            add(
                "slack", [single] if single else SLACK_SECTION.finditer("\n".join(texts)), request.received_at
            )
        for request in self.web.discord.messages:
            titles = "\n".join(e.get("title", "") for e in request.json.get("embeds") or [])
            add("discord", ALERT_TITLE.finditer(titles), request.received_at)
        for request in self.web.ntfy.messages:
            message = request.payload if isinstance(request.payload, dict) else request.json
            single = ALERT_TITLE.match(message.get("title") or "")
            add("ntfy", [single] if single else NTFY_LINE.finditer(message.get("message") or ""),
                request.received_at)  # fmt: skip
        for request in self.web.pagerduty.messages:
            body = request.json
            name = f"bench-{int(body['dedup_key'].split('-')[1]) - 1:04d}"
            if body["event_action"] in ("trigger", "resolve"):
                kind = "down" if body["event_action"] == "trigger" else "up"
                found.append(("pagerduty", name, kind, request.received_at))
        for mail in self.smtp.messages:
            add("email", [m] if (m := EMAIL_SUBJECT.match(mail.subject or "")) else [], mail.received_at)
        return sorted(found, key=lambda item: item[3])

    def requests_429(self) -> int:
        web = sum(f.statuses()[429] for f in (self.web.slack, self.web.discord, self.web.ntfy,
                                               self.web.pagerduty, self.web.webhooks))  # fmt: skip
        return web + sum(1 for r in self.telegram.requests if r.status == 429)

    def messages(self) -> Counter[str]:
        return Counter(kind for kind, *_ in self.delivered_messages())

    def delivered_messages(self) -> list[tuple[str, float]]:
        out = [("telegram", r.received_at) for r in self.telegram.messages]
        for kind in ("webhooks", "slack", "discord", "ntfy", "pagerduty"):
            out += [(kind.removesuffix("s"), r.received_at) for r in getattr(self.web, kind).messages]
        out += [("email", m.received_at) for m in self.smtp.messages]
        return out


def make_events(args: argparse.Namespace, fakes: Fakes) -> list[dict[str, Any]]:
    """``--events`` events over ``--monitors`` monitors, round robin, each monitor down/up/down..."""
    now = datetime.now(UTC)
    events = []
    channels = {
        m: fakes.channel(args.kinds[m % len(args.kinds)], m // len(args.kinds) % args.chats, args.groups)
        for m in range(args.monitors)
    }
    for i in range(args.events):
        m = i % args.monitors
        kind = "down" if (i // args.monitors) % 2 == 0 else "up"
        started = now - timedelta(seconds=60)
        round_ = i // args.monitors
        events.append(
            Event(
                event_id=str(uuid.uuid4()),
                kind=kind,
                monitor_id=m + 1,
                monitor_name=f"bench-{m:04d}",
                monitor_url=f"https://service-{m:04d}.example.com/health",
                telegram_chat_id=None,
                incident_id=m + 1 + (i // (2 * args.monitors)) * args.monitors,
                seq=round_ + 1,
                after_event_id=events[i - args.monitors]["event_id"] if kind == "up" else None,
                at=_iso(now),
                started_at=_iso(started),
                ended_at=_iso(now) if kind == "up" else None,
                duration_seconds=60.0 if kind == "up" else None,
                cause={"status_code": 503, "error": None, "latency_ms": 87.0},
                channels=[channels[m]],
            ).to_dict()
        )
    return events


def chat_id(index: int, groups: int) -> str:
    return f"-100{7000 + index}" if index < groups else str(7000 + index)


def _iso(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


def alerter_env(urls: database.Urls, fake: FakeTelegram, args: argparse.Namespace) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MONITOR_")}
    env.update(
        MONITOR_DATABASE_URL=urls.database,
        MONITOR_REDIS_URL=urls.redis,
        MONITOR_SECRET_KEY=database.BENCH_SECRET_KEY,
        MONITOR_TELEGRAM_API_BASE=fake.base_url,
        MONITOR_TELEGRAM_BOT_TOKEN=fake.token,
        # The fakes of the other kinds listen on loopback, which the SSRF guard refuses otherwise.
        MONITOR_ALLOW_CIDRS="127.0.0.0/8",
        MONITOR_LOG_FORMAT="json",
        MONITOR_LOG_LEVEL="info",
        MONITOR_ALERTER_HTTP_PORT=str(free_port()),
        PYTHONUNBUFFERED="1",
    )
    for item in args.set:
        name, _, value = item.partition("=")
        env[name if name.startswith("MONITOR_") else f"MONITOR_{name.upper()}"] = value
    return env


async def reset(urls: database.Urls) -> None:
    """The benchmark database made (or remade) and migrated by this tree, then emptied; Redis too."""
    await database.create_and_migrate(urls)
    conn = await asyncpg.connect(urls.database)
    try:
        await database.reset(conn)
    finally:
        await conn.close()
    client = aioredis.Redis.from_url(urls.redis)
    try:
        await client.flushdb()
    finally:
        await client.aclose()


async def publish_all(
    redis: aioredis.Redis, events: list[dict[str, Any]], args: argparse.Namespace
) -> list[str]:
    """XADD the events (paced, or in one pipeline); their stream entry ids, in order."""
    if args.burst:
        return await publish(redis, events)
    ids: list[str] = []
    start = time.monotonic()
    for i, event in enumerate(events):
        delay = start + i / args.rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        ids.extend(await publish(redis, [event]))
    return ids


def by_monitor(fakes: Fakes) -> dict[str, list[tuple[str, float, str]]]:
    """(kind, received_at, channel kind) of each delivered alert, by monitor name, in arrival order."""
    out: dict[str, list[tuple[str, float, str]]] = defaultdict(list)
    for channel_kind, name, kind, at in fakes.delivered():
        out[name].append((kind, at, channel_kind))
    return out


def percentile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def git_code() -> str:
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "monitor", "sql"], cwd=REPO, capture_output=True, text=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("+dirty" if dirty else "")


async def run(args: argparse.Namespace) -> dict[str, Any]:
    urls = database.service_urls(args.db_name, args.redis_db)
    await reset(urls)
    tmp = Path(tempfile.mkdtemp(prefix="bench-alerter-"))
    log = tmp / "alerter.log"
    async with (
        FakeTelegram(enforce_rate_limits=True) as fake,
        FakeChannels() as web_fakes,
        FakeSmtp() as smtp,
    ):
        fakes = Fakes(fake, web_fakes, smtp)
        events = make_events(args, fakes)
        argv = [sys.executable, "-m", "monitor", "alerter"]
        env = {**alerter_env(urls, fake, args), "MONITOR_CA_FILE": str(smtp.write_ca(tmp / "smtp-ca.pem"))}
        alerter = process.spawn(argv, log=log, env=env, core=args.core)
        redis = aioredis.Redis.from_url(urls.redis)
        try:
            await process.wait_for(
                lambda: "alerter.started" in log.read_text(errors="replace"),
                within=30,
                what="alerter",
                proc=alerter,
            )
            cpu_before = proc.cpu(alerter.pid)
            started = time.time()
            ids = await publish_all(redis, events, args)
            published = time.time()
            deadline = time.monotonic() + args.timeout
            while len(fakes.delivered()) < len(events):
                if alerter.poll() is not None:
                    raise RuntimeError(f"the alerter exited ({alerter.returncode}); log: {log}")
                if time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.1)
            finished = time.time()
            cpu = (proc.cpu(alerter.pid) - cpu_before).total
        finally:
            await redis.aclose()
            process.stop(alerter, signal.SIGTERM, timeout=30)
        await asyncio.sleep(0)  # answers that came in while the alerter stopped
        got_by_monitor = by_monitor(fakes)
        if args.keep:
            (tmp / "ntfy.json").write_text(json.dumps([r.payload for r in web_fakes.ntfy.messages], indent=1))
        arrivals = fakes.delivered_messages()
        requests_429 = fakes.requests_429()

    expected: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for event, entry_id in zip(events, ids, strict=True):
        expected[event["monitor_name"]].append((event["kind"], int(entry_id.split("-")[0]) / 1000))
    latencies: list[float] = []
    per_kind: dict[str, list[float]] = defaultdict(list)
    order_errors = missing = doubled = 0
    wrong_by_kind: Counter[str] = Counter()
    for name, sent in expected.items():
        got = got_by_monitor.get(name, [])
        missing += max(0, len(sent) - len(got))
        doubled += max(0, len(got) - len(sent))
        for (kind, xadd_at), (got_kind, received_at, channel_kind) in zip(sent, got, strict=False):
            order_errors += kind != got_kind
            wrong_by_kind[channel_kind] += kind != got_kind
            latencies.append(received_at - xadd_at)
            per_kind[channel_kind].append((received_at - xadd_at) * 1000)
    conn = await asyncpg.connect(urls.database)
    try:
        recorded = await conn.fetchval("SELECT count(*) FROM deliveries WHERE status = 'sent'")
    finally:
        await conn.close()
    last = max((at for _, at in arrivals), default=finished)
    first_xadd = int(ids[0].split("-")[0]) / 1000
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    ms = [x * 1000 for x in latencies] or [math.nan]
    return {
        "events": len(events),
        "monitors": args.monitors,
        "chats": args.chats,
        "group_chats": min(args.groups, args.chats),
        "pattern": "burst" if args.burst else f"paced {args.rate:g}/s",
        "delivered": len(latencies),
        "missing": missing,
        "doubled": doubled,
        "order_errors": order_errors,
        "deliveries_recorded": recorded,
        "latency_ms_p50": round(percentile(ms, 0.50), 1),
        "latency_ms_p90": round(percentile(ms, 0.90), 1),
        "latency_ms_p99": round(percentile(ms, 0.99), 1),
        "latency_ms_max": round(max(ms), 1),
        "latency_ms_min": round(min(ms), 1),
        "publish_s": round(published - started, 3),
        "throughput_events_per_s": round(len(latencies) / max(1e-9, last - first_xadd), 1),
        "messages": len(arrivals),
        "events_per_message": round(len(latencies) / max(1, len(arrivals)), 2),
        "requests_429": requests_429,
        "kinds": list(args.kinds),
        "order_errors_by_kind": dict(wrong_by_kind),
        "delivered_by_kind": {k: len(v) for k, v in sorted(per_kind.items())},
        "latency_ms_p99_by_kind": {k: round(percentile(v, 0.99), 1) for k, v in sorted(per_kind.items())},
        "latency_ms_p50_by_kind": {k: round(percentile(v, 0.50), 1) for k, v in sorted(per_kind.items())},
        "alerter_cpu_s": round(cpu, 3),
        "alerter_cpu_ms_per_event": round(1000 * cpu / max(1, len(latencies)), 3),
        "timed_out": len(latencies) < len(events),
        "code": git_code(),
        "log": str(log) if args.keep else None,
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "messages_per_kind": dict(Counter(kind for kind, _ in arrivals)),
    }


def render(result: dict[str, Any]) -> str:
    return "\n".join(
        [
            f"alerter: {result['events']} events ({result['pattern']}) over {result['monitors']} monitors, "
            f"{result['chats']} chats ({result['group_chats']} groups), code {result['code']}",
            f"  delivered {result['delivered']} (missing {result['missing']}, doubled {result['doubled']}, "
            f"out of order {result['order_errors']}; delivery rows {result['deliveries_recorded']})",
            f"  latency ms: p50 {result['latency_ms_p50']}  p90 {result['latency_ms_p90']}  "
            f"p99 {result['latency_ms_p99']}  max {result['latency_ms_max']}",
            f"  throughput {result['throughput_events_per_s']} events/s in {result['messages']} messages "
            f"({result['events_per_message']} events each), 429s: {result['requests_429']}",
            f"  alerter CPU {result['alerter_cpu_s']} s ({result['alerter_cpu_ms_per_event']} ms/event)",
            *(
                f"  {kind}: p50 {result['latency_ms_p50_by_kind'][kind]} ms, p99 {p99} ms"
                for kind, p99 in result["latency_ms_p99_by_kind"].items()
            ),
        ]
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.alerter", description=__doc__.split("\n\n")[0])
    add = p.add_argument
    add("--events", type=int, default=1000, help="events to publish (at least 1)")
    add("--monitors", type=int, default=100, help="monitors the events are spread over")
    add("--chats", type=int, default=10, help="destinations of each kind the monitors are spread over")
    add(
        "--kinds",
        default="telegram",
        help=f"comma-separated channel kinds, round robin over monitors ({','.join(KINDS)})",
    )
    add("--groups", type=int, default=0, help="how many of the chats are group chats (20 msg/min)")
    add("--rate", type=float, default=50.0, help="events per second, one XADD each")
    add("--burst", action="store_true", help="publish every event at once (one pipeline)")
    add("--timeout", type=float, default=300.0, help="give up waiting for deliveries after this, s")
    add("--json", type=Path, default=None, help="write the result here (default bench/results/)")
    add("--set", action="append", default=[], metavar="NAME=VALUE", help="another alerter setting")
    add("--core", type=int, default=None, help="pin the alerter to this core")
    add("--db-name", default=BENCH_DB)
    add("--redis-db", type=int, default=BENCH_REDIS_DB)
    add("--keep", action="store_true", help="keep the temporary directory with the alerter's log")
    args = p.parse_args(argv)
    args.kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    if not args.kinds or set(args.kinds) - set(KINDS):
        p.error(f"--kinds: choose from {', '.join(KINDS)}")
    if args.events < 1 or args.monitors < 1 or args.chats < 1 or args.rate <= 0:
        p.error("--events, --monitors and --chats must be at least 1, --rate positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    result = process.run_and_report(
        lambda: run(args), render, args.json or RESULTS / f"alerter-{args.events}.json"
    )
    if result is None:
        return 130
    return 1 if result["timed_out"] or result["doubled"] or result["order_errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
