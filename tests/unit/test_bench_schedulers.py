"""The several-scheduler benchmark's arithmetic (bench/cluster_figures.py): merged lateness
histograms, CPU by group, and who owns which monitor."""

from __future__ import annotations

import math

import pytest

from bench import proc
from bench.cluster_figures import (
    Scrape,
    bucket_of,
    cpu_by_group,
    group_of,
    merge_lateness,
    owners,
    parse_metrics,
    share_above,
)
from monitor.scheduler.cluster import owner

METRICS = """\
# TYPE monitor_checks counter
monitor_checks_total{result="up"} 90.0
monitor_checks_total{result="down"} 10.0
# TYPE monitor_schedule_lateness_seconds histogram
monitor_schedule_lateness_seconds_bucket{le="0.05"} 80.0
monitor_schedule_lateness_seconds_bucket{le="0.1"} 99.0
monitor_schedule_lateness_seconds_bucket{le="+Inf"} 100.0
monitor_schedule_lateness_seconds_sum 3.0
monitor_schedule_lateness_seconds_count 100.0
# TYPE monitor_monitors_scheduled gauge
monitor_monitors_scheduled 42.0
# TYPE monitor_write_buffered_rows gauge
monitor_write_buffered_rows 7.0
"""


def test_parse_metrics_sums_labels_and_keeps_buckets() -> None:
    got = parse_metrics(METRICS)
    assert got.counters == {"checks": 100.0}
    assert got.lateness == {0.05: 80.0, 0.1: 99.0, math.inf: 100.0}
    assert (got.monitors, got.buffered) == (42.0, 7.0)


def _scrape(lateness: dict[float, float]) -> Scrape:
    return Scrape({}, lateness, 0.0, 0.0)


def test_merge_lateness_is_the_sum_of_window_deltas() -> None:
    a = (_scrape({0.1: 10, math.inf: 10}), _scrape({0.1: 60, math.inf: 70}))
    b = (_scrape({0.1: 0, math.inf: 0}), _scrape({0.1: 30, math.inf: 30}))
    assert merge_lateness([a, b]) == {0.1: 80, math.inf: 90}


@pytest.mark.parametrize(
    ("cumulative", "q", "bucket", "over_100ms"),
    [
        ({0.05: 80, 0.1: 99, math.inf: 100}, 0.99, 0.1, 0.01),
        ({0.05: 80, 0.1: 98, math.inf: 100}, 0.99, math.inf, 0.02),
        ({0.05: 100, 0.1: 100, math.inf: 100}, 0.5, 0.05, 0.0),
        ({0.1: 0, math.inf: 0}, 0.99, None, None),
    ],
)
def test_bucket_and_share(
    cumulative: dict[float, float], q: float, bucket: float | None, over_100ms: float | None
) -> None:
    assert bucket_of(cumulative, q) == bucket
    got = share_above(cumulative, 0.1)
    assert got == over_100ms if over_100ms is None else got == pytest.approx(over_100ms)


def _task(cmdline: str, cpu: float = 0.0, *, ppid: int = 1, comm: str = "python") -> proc.Task:
    return proc.Task(ppid=ppid, comm=comm, cmdline=cmdline, cpu_s=cpu)


@pytest.mark.parametrize(
    ("pid", "task", "group"),
    [
        (10, _task("python -m monitor scheduler"), "schedulers"),
        (20, _task("nginx: master process", comm="nginx"), "nginx"),
        (21, _task("nginx: worker process", ppid=20, comm="nginx"), "nginx"),
        (30, _task("python -m bench.scheduler"), "harness"),
        (40, _task("postgres: postgres bench 127.0.0.1(5) idle", comm="postgres"), "postgres_bench"),
        (41, _task("postgres: postgres other 127.0.0.1(6) idle", comm="postgres"), "postgres_other"),
        (42, _task("postgres: walwriter", comm="postgres"), "postgres_other"),
        (50, _task("", comm="kworker/0:1"), "kernel"),
        (60, _task("python -m pytest tests"), "foreign"),
        (61, _task("python -m monitor scheduler"), "foreign"),  # someone else's
    ],
)
def test_group_of(pid: int, task: proc.Task, group: str) -> None:
    assert group_of(pid, task, schedulers={10}, nginx=20, harness=30, database_name="bench") == group


def test_cpu_by_group_counts_new_processes_from_zero_and_a_reused_pid_afresh() -> None:
    before = {1: _task("a", 5.0), 2: _task("b", 1.0, comm="old")}
    after = {1: _task("a", 7.5), 2: _task("b", 0.5, comm="new"), 3: _task("c", 2.0)}
    assert cpu_by_group(before, after, lambda pid, _t: "x" if pid == 1 else "y") == {"x": 2.5, "y": 2.5}


def test_owners_agree_with_the_cluster_and_cover_every_monitor() -> None:
    names = ["bench-0", "bench-1"]
    got = owners(range(1, 1001), names)
    assert sorted(i for ids in got.values() for i in ids) == list(range(1, 1001))
    assert all(owner(i, names) == name for name, ids in got.items() for i in ids)
    assert 400 < len(got["bench-0"]) < 600
