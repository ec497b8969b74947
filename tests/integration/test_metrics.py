"""Metrics and probes of the three processes, and the API's request ids.

``GET /metrics`` on the api, and on the scheduler's and alerter's probe listeners, names every
metric of the issue. Then a monitor is checked, fails (one alert, whose first send fails once
and is retried) and recovers (an alert to a chat that now refuses it: a dead letter), and the
counters that describe each step move by exactly what happened.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import aiohttp
import asyncpg
import pytest
from prometheus_client.parser import text_string_to_metric_families
from support import ApiClient, FakeTelegram, MonitorProcess, ProcessFactory, TargetServer, wait_for

from monitor import __version__ as monitor_version

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]

CHAT_ID = "-1009876543210"
DEADLINE = 30.0

NAMED = {
    "api": {
        "monitor_api_requests_total": "counter",
        "monitor_api_request_duration_seconds": "histogram",
    },
    "scheduler": {
        "monitor_checks_total": "counter",
        "monitor_check_duration_seconds": "histogram",
        "monitor_schedule_lateness_seconds": "histogram",
        "monitor_write_batch_rows": "histogram",
        "monitor_write_buffered_rows": "gauge",
        "monitor_events_published_total": "counter",
    },
    "alerter": {
        "monitor_deliveries_total": "counter",
        "monitor_delivery_retries_total": "counter",
        "monitor_dead_letters_total": "counter",
        "monitor_delivery_latency_seconds": "histogram",
    },
}


class Scrape:
    """One ``/metrics`` answer: the declared metric types, and sample values by name and labels."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, flags=re.MULTILINE))
        self.samples: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                self.samples[(sample.name, frozenset(sample.labels.items()))] = sample.value

    def value(self, name: str, **labels: str) -> float:
        """A sample's value; 0 for a labelled series not seen yet (as Prometheus would read it)."""
        return self.samples.get((name, frozenset(labels.items())), 0.0)


async def scrape(session: aiohttp.ClientSession, proc: MonitorProcess) -> Scrape:
    async with session.get(f"{proc.base_url}/metrics") as response:
        assert response.status == 200, await response.text()
        assert response.headers["Content-Type"].startswith("text/plain"), response.headers
        return Scrape(await response.text())


async def test_metrics_are_named_and_move_with_checks_and_alerts(
    db: asyncpg.Connection,
    target: TargetServer,
    fake_telegram: FakeTelegram,
    procs: ProcessFactory,
    api_client: Callable[[str], ApiClient],
) -> None:
    processes = {
        "api": await procs.start("api"),
        "scheduler": await procs.start("scheduler"),
        # A short backoff, so the retried first send goes again at once.
        "alerter": await procs.start(
            "alerter", env={**fake_telegram.env(), "MONITOR_ALERT_BACKOFF_BASE_SECONDS": "0.1"}
        ),
    }
    api = api_client(processes["api"].base_url)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:

        async def now(name: str) -> Scrape:
            return await scrape(session, processes[name])

        # -- every named metric is declared, with its type, before anything happened -------------
        for name, metrics in NAMED.items():
            found = (await now(name)).types
            assert {m: found.get(m) for m in metrics} == metrics, (name, found)

        # -- probes of the scheduler and the alerter ----------------------------------------------
        for name in ("scheduler", "alerter"):
            for path in ("/healthz", "/readyz"):
                async with session.get(processes[name].base_url + path) as response:
                    assert response.status == 200, (name, path, await response.text())

        # -- checks run ----------------------------------------------------------------------------
        monitor = await api.create_monitor(
            url=target.url("/metrics-target"),
            interval_seconds=1,
            timeout_seconds=1,
            confirm_after=2,
            telegram_chat_id=CHAT_ID,
        )
        scheduler: list[Scrape] = []

        async def checked(times: int) -> bool:
            scheduler[:] = [await now("scheduler")]
            return scheduler[0].value("monitor_checks_total", result="up") >= times

        await wait_for(lambda: checked(3), timeout=DEADLINE, message="three checks up")
        s = scheduler[0]
        ran = s.value("monitor_checks_total", result="up")
        assert s.value("monitor_check_duration_seconds_count") >= ran
        assert s.value("monitor_schedule_lateness_seconds_count") >= ran
        # Rows are written in batches a second apart: at least one batch, of at most what ran.
        assert s.value("monitor_write_batch_rows_count") >= 1
        assert 1 <= s.value("monitor_write_batch_rows_sum") <= ran
        assert s.value("monitor_events_published_total") == 0

        # -- down: one alert, whose first send fails and is retried ---------------------------------
        fake_telegram.fail_next(500)
        target.set(500)
        await fake_telegram.wait_messages(1, timeout=DEADLINE)
        alerter: list[Scrape] = []

        async def delivered(outcome: str) -> bool:
            alerter[:] = [await now("alerter")]
            return alerter[0].value("monitor_deliveries_total", outcome=outcome) >= 1

        await wait_for(lambda: delivered("sent"), timeout=DEADLINE, message="one delivery counted")
        a = alerter[0]
        assert a.value("monitor_deliveries_total", outcome="sent") == 1
        assert a.value("monitor_delivery_retries_total") == 1
        assert a.value("monitor_delivery_latency_seconds_count") == 1
        assert 0 < a.value("monitor_delivery_latency_seconds_sum") < DEADLINE
        assert a.value("monitor_dead_letters_total") == 0
        s = await now("scheduler")
        assert s.value("monitor_checks_total", result="down") >= monitor["confirm_after"]
        assert s.value("monitor_events_published_total") == 1

        # -- up again: the recovery alert goes to a chat that now refuses it, for good --------------
        fake_telegram.reject_chat(CHAT_ID)
        target.set(200)
        await wait_for(lambda: delivered("dead"), timeout=DEADLINE, message="the recovery dead-lettered")
        a = alerter[0]
        assert a.value("monitor_dead_letters_total") == 1
        assert a.value("monitor_deliveries_total", outcome="sent") == 1
        assert a.value("monitor_delivery_latency_seconds_count") == 1  # only sent messages count
        assert (await now("scheduler")).value("monitor_events_published_total") == 2

        # -- the api counted the requests made, by route, method and status -------------------------
        assert (await api.get("/api/v1/monitors/999999")).status == 404
        m = await now("api")
        assert (
            m.value("monitor_api_requests_total", route="/api/v1/monitors", method="POST", status="201") == 1
        )
        assert (
            m.value("monitor_api_requests_total", route="/api/v1/monitors/{id}", method="GET", status="404")
            == 1
        )
        assert m.value("monitor_api_request_duration_seconds_count", route="/api/v1/monitors") == 1
        assert m.value("monitor_api_request_duration_seconds_count", route="/api/v1/monitors/{id}") == 1
        assert m.value("monitor_api_requests_total", route="/metrics", method="GET", status="200") >= 1

        # -- every process says what it is and what it uses ------------------------------------------
        for name in ("api", "scheduler", "alerter"):
            seen = await now(name)
            assert seen.value("monitor_build_info", version=monitor_version) == 1, name
            assert seen.value("process_cpu_seconds_total") > 0, name
            assert seen.value("process_resident_memory_bytes") > 0, name

    for proc in processes.values():
        assert not proc.tracebacks(), proc.tail()


GENERATED = re.compile(r"^[0-9a-f]{32}$")


@pytest.mark.parametrize(
    ("path", "sent", "status"),
    [
        ("/api/v1/monitors", "req-123.abc:def_9", 200),  # a good id is echoed
        ("/api/v1/monitors", None, 200),  # none given: one is made
        ("/api/v1/monitors", "bad id with spaces", 200),  # unusable: replaced
        ("/api/v1/monitors", "x" * 129, 200),  # too long: replaced
        ("/api/v1/monitors/999999", "lost-1", 404),  # errors carry it too
        ("/api/v1/nowhere", "lost-2", 404),
        ("/healthz", "probe-1", 200),
    ],
)
async def test_every_response_carries_a_request_id(
    api: ApiClient, path: str, sent: str | None, status: int
) -> None:
    headers = {"X-Request-ID": sent} if sent is not None else {}
    response = await api.get(path, headers=headers)
    assert response.status == status, response
    got = response.headers.get("X-Request-ID", "")
    if sent is not None and re.fullmatch(r"[A-Za-z0-9._:-]{1,128}", sent):
        assert got == sent
    else:
        assert GENERATED.match(got), got


async def test_request_ids_are_generated_afresh_and_unauthenticated_answers_carry_one(
    api: ApiClient,
) -> None:
    first = await api.get("/api/v1/monitors")
    second = await api.get("/api/v1/monitors")
    assert first.headers["X-Request-ID"] != second.headers["X-Request-ID"]
    unauthenticated = await api.get(
        "/api/v1/monitors", headers={"Authorization": "", "X-Request-ID": "anon-1"}
    )
    assert unauthenticated.status == 401 and unauthenticated.headers["X-Request-ID"] == "anon-1"
