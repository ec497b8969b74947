"""The scheduler's Prometheus metrics, in a registry of its own (no process-wide globals).

The ones every check moves (lateness, duration, results) are :class:`LoopHistogram` and
:class:`LoopCounter`: plain numbers updated on the event loop's thread, exposed through a
prometheus_client collector at scrape time. prometheus_client's own metric objects take a lock
and walk their buckets in Python on every update, which at a hundred checks a second was a
measurable part of the scheduler's CPU per check (issue 4).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterator, Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from monitor.probes import new_registry

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class LoopHistogram(Collector):
    """A histogram for one thread (the loop's): ``observe`` is a bisect and two additions."""

    def __init__(
        self, name: str, documentation: str, buckets: Sequence[float], registry: CollectorRegistry
    ) -> None:
        self._name, self._doc = name, documentation
        self._bounds = tuple(buckets)
        self._counts = [0] * (len(self._bounds) + 1)  # the last one: above every bound (+Inf)
        self._sum = 0.0
        registry.register(self)

    def observe(self, value: float) -> None:
        self._counts[bisect.bisect_left(self._bounds, value)] += 1  # le: value <= bound
        self._sum += value

    def collect(self) -> Iterator[Metric]:
        cumulative = list(itertools.accumulate(self._counts))
        labels = [*(floatToGoString(bound) for bound in self._bounds), "+Inf"]
        yield HistogramMetricFamily(
            self._name,
            self._doc,
            buckets=list(zip(labels, cumulative, strict=True)),
            sum_value=self._sum,
        )


class LoopCounter(Collector):
    """A counter with one label, for one thread: ``inc`` is an addition to a plain number."""

    def __init__(
        self, name: str, documentation: str, label: str, values: Sequence[str], registry: CollectorRegistry
    ) -> None:
        self._name, self._doc, self._label = name, documentation, label
        self._counts = dict.fromkeys(values, 0)
        registry.register(self)

    def labels(self, value: str) -> _Child:
        return _Child(self._counts, value)

    def total(self) -> int:
        return sum(self._counts.values())

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(self._name, self._doc, labels=[self._label])
        for value, count in self._counts.items():
            family.add_metric([value], count)
        yield family


class _Child:
    __slots__ = ("_counts", "_key")

    def __init__(self, counts: dict[str, int], key: str) -> None:
        self._counts, self._key = counts, key

    def inc(self, amount: int = 1) -> None:
        self._counts[self._key] += amount


class SchedulerMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or new_registry()
        r = self.registry
        self.checks = LoopCounter(
            "monitor_checks", "Checks completed, by result (up, down, blocked, not_run)", "result",
            ("up", "down", "blocked", "not_run"), registry=r,
        )  # fmt: skip
        self.checks_up = self.checks.labels("up")
        self.checks_down = self.checks.labels("down")
        self.checks_blocked = self.checks.labels("blocked")
        # Heavy checks no worker finished (Failure.NOT_RUN): judged as unknown.
        self.checks_not_run = self.checks.labels("not_run")
        self.check_duration = LoopHistogram(
            "monitor_check_duration_seconds", "Wall time of one check", buckets=LATENCY_BUCKETS, registry=r
        )
        self.lateness = LoopHistogram(
            "monitor_schedule_lateness_seconds",
            "Actual start of a check minus its scheduled time",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.skipped = Counter(
            "monitor_checks_skipped",
            "Ticks not checked: the previous check still ran, the scheduler fell behind, or the tick"
            " fell in a handover between schedulers",
            registry=r,
        )
        self.batch_rows = Histogram(
            "monitor_write_batch_rows",
            "Check rows per COPY batch",
            buckets=(1, 10, 50, 100, 500, 1000, 5000, 10000),
            registry=r,
        )
        self.buffered = Gauge(
            "monitor_write_buffered_rows", "Check results waiting to be written", registry=r
        )
        self.dropped = Counter(
            "monitor_write_dropped_rows", "Check results dropped because the buffer was full", registry=r
        )
        self.write_failures = Counter(
            "monitor_write_failures", "Batches the database refused or missed", registry=r
        )
        self.spool_bytes = Gauge(
            "monitor_spool_bytes", "Bytes in the local spool of results not yet written", registry=r
        )
        self.spool_dropped = Counter(
            "monitor_spool_dropped_records",
            "Records not spooled: the spool was full (MONITOR_SPOOL_MAX_MB) or could not be written",
            registry=r,
        )
        self.spool_skipped = Counter(
            "monitor_spool_skipped",
            "Spool files or their tails skipped at replay: torn (a record cut by a kill), corrupt,"
            " or of another version or database",
            ["reason"],
            registry=r,
        )
        self.spool_replayed = Counter(
            "monitor_spool_replayed_rows", "Check rows replayed from a spool at start", registry=r
        )
        self.events_published = Counter(
            "monitor_events_published", "Outbox events published to Redis", registry=r
        )
        self.monitors = Gauge("monitor_monitors_scheduled", "Monitors with a running ticker", registry=r)
        self.heavy_waiting = Gauge(
            "monitor_heavy_checks_waiting", "Heavy checks waiting for a worker's reply", registry=r
        )
        self.cluster_members = Gauge(
            "monitor_cluster_members", "Live schedulers in this scheduler's view of the cluster", registry=r
        )
        self.cluster_changes = Counter(
            "monitor_cluster_membership_changes",
            "New generations of the cluster's member list seen (a join, a leave, a lapsed lease)",
            registry=r,
        )
        self.takeovers = Counter(
            "monitor_cluster_takeovers", "Monitors this scheduler started that another one ran", registry=r
        )
        self.handovers = Counter(
            "monitor_cluster_handovers",
            "Monitors this scheduler stopped because they moved to another",
            registry=r,
        )
        self.lease_lost = Counter(
            "monitor_cluster_lease_lost",
            "Times this scheduler found its lease lapsed and its monitors taken (it joins again)",
            registry=r,
        )
        self.loop_blocked = Counter(
            "monitor_event_loop_blocked", "Times the event loop was blocked for more than 100 ms", registry=r
        )
