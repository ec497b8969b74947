"""The figures of several schedulers (bench/schedulers.py): their metrics, merged; the CPU of
every process on the machine, by the part of the run it belongs to; who owns which monitor.

Pure but for :func:`scrape` (one GET of a member's ``/metrics``) and :func:`by_member` (one
query of the stored rows); tests/unit/test_bench_schedulers.py holds the arithmetic.
"""

from __future__ import annotations

import http.client
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg
from prometheus_client.parser import text_string_to_metric_families

from bench import database, proc
from monitor.scheduler.cluster import owner


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


COUNTERS = {
    "checks": "monitor_checks_total",
    "skipped": "monitor_checks_skipped_total",
    "loop_blocked": "monitor_event_loop_blocked_total",
    "lease_lost": "monitor_cluster_lease_lost_total",
    "membership_changes": "monitor_cluster_membership_changes_total",
    "handovers": "monitor_cluster_handovers_total",
    "takeovers": "monitor_cluster_takeovers_total",
}
LATENESS = "monitor_schedule_lateness_seconds"
_BACKEND = re.compile(r"^postgres: \S+ (\S+) \S+")


@dataclass(frozen=True)
class Scrape:
    counters: dict[str, float]
    lateness: dict[float, float]  # cumulative count per upper bound (inf for +Inf)
    monitors: float
    buffered: float  # check results waiting in its writer


def parse_metrics(text: str) -> Scrape:
    counters: dict[str, float] = {}
    lateness: dict[float, float] = {}
    monitors = buffered = 0.0
    wanted = {v: k for k, v in COUNTERS.items()}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name in wanted:
                counters[wanted[s.name]] = counters.get(wanted[s.name], 0.0) + s.value
            elif s.name == f"{LATENESS}_bucket":
                lateness[float(s.labels["le"])] = s.value
            elif s.name == "monitor_monitors_scheduled":
                monitors = s.value
            elif s.name == "monitor_write_buffered_rows":
                buffered = s.value
    return Scrape(counters, lateness, monitors, buffered)


def scrape(port: int) -> Scrape:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", "/metrics")
        return parse_metrics(conn.getresponse().read().decode())
    finally:
        conn.close()


def merge_lateness(pairs: Sequence[tuple[Scrape, Scrape]]) -> dict[float, float]:
    """The members' lateness histograms over the window (end minus start), summed."""
    merged: dict[float, float] = {}
    for before, after in pairs:
        for bound, count in after.lateness.items():
            merged[bound] = merged.get(bound, 0.0) + count - before.lateness.get(bound, 0.0)
    return dict(sorted(merged.items()))


def bucket_of(cumulative: Mapping[float, float], q: float) -> float | None:
    """The upper bound (s) of the bucket holding quantile ``q`` of a cumulative histogram."""
    total = max(cumulative.values(), default=0.0)
    if total <= 0:
        return None
    return next(bound for bound, count in cumulative.items() if count >= q * total)


def share_above(cumulative: Mapping[float, float], bound: float) -> float | None:
    total = max(cumulative.values(), default=0.0)
    return None if total <= 0 else 1 - cumulative.get(bound, 0.0) / total


def group_of(
    pid: int, task: proc.Task, *, schedulers: set[int], nginx: int | None, harness: int, database_name: str
) -> str:
    """Which part of the run a process's CPU belongs to (see the module docstring)."""
    if pid in schedulers:
        return "schedulers"
    if nginx is not None and nginx in (pid, task.ppid):
        return "nginx"
    if pid == harness:
        return "harness"
    if not task.cmdline:
        return "kernel"
    if task.comm == "postgres":
        backend = _BACKEND.match(task.cmdline)
        if backend and backend.group(1) == database_name:
            return "postgres_bench"
        return "postgres_other"
    return "foreign"


def cpu_by_group(
    before: Mapping[int, proc.Task], after: Mapping[int, proc.Task], group: Callable[[int, proc.Task], str]
) -> dict[str, float]:
    """CPU seconds between two readings by group; a process new in ``after`` counts from 0
    (one that ended in between is lost: it shows as the cores' unattributed time)."""
    out: dict[str, float] = {}
    for pid, task in after.items():
        earlier = before.get(pid)
        used = task.cpu_s - (earlier.cpu_s if earlier is not None and earlier.comm == task.comm else 0.0)
        name = group(pid, task)
        out[name] = out.get(name, 0.0) + used
    return {k: round(v, 3) for k, v in sorted(out.items())}


def top_foreign(
    before: Mapping[int, proc.Task], after: Mapping[int, proc.Task], group: Callable[[int, proc.Task], str]
) -> list[tuple[str, float]]:
    """The five command lines (cut short) of the ``foreign`` group that used the most CPU."""
    used: dict[str, float] = {}
    for pid, task in after.items():
        if group(pid, task) == "foreign":
            earlier = before.get(pid)
            name = task.cmdline[:80]
            used[name] = used.get(name, 0.0) + task.cpu_s - (earlier.cpu_s if earlier else 0.0)
    return [(n, round(v, 2)) for n, v in sorted(used.items(), key=lambda kv: -kv[1])[:5] if v > 0]


def owners(monitor_ids: range, names: Sequence[str]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {name: [] for name in names}
    for monitor_id in monitor_ids:
        out[str(owner(monitor_id, names))].append(monitor_id)
    return out


async def by_member(
    conn: asyncpg.Connection, start: float, end: float, owned: Mapping[str, list[int]]
) -> dict[str, dict[str, Any]]:
    """Window checks and lateness p50/p99/max of each member's monitors, from the stored rows."""
    ids = [i for members in owned.values() for i in members]
    names = [name for name, members in owned.items() for _ in members]
    rows = await conn.fetch(
        f"""SELECT o.member, count(*) AS checks,
                   percentile_cont(ARRAY[0.5, 0.99]) WITHIN GROUP (ORDER BY w.lateness_raw) AS p,
                   max(w.lateness_raw) AS max
            FROM ({database._WINDOW}) w
            JOIN unnest($3::bigint[], $4::text[]) AS o(monitor_id, member) USING (monitor_id)
            GROUP BY o.member""",
        start,
        end,
        ids,
        names,
    )
    return {
        r["member"]: {
            "checks": r["checks"],
            "lateness_ms_p50": _round(r["p"][0]),
            "lateness_ms_p99": _round(r["p"][1]),
            "lateness_ms_max": _round(r["max"]),
        }
        for r in rows
    }
