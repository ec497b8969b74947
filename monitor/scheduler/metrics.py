"""The scheduler's Prometheus metrics, in a registry of its own (no process-wide globals)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class SchedulerMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.checks = Counter(
            "monitor_checks", "Checks completed, by result (up, down, blocked)", ["result"], registry=r
        )
        # Bound once: labels() on every check costs a lock and a dict lookup.
        self.checks_up = self.checks.labels("up")
        self.checks_down = self.checks.labels("down")
        self.checks_blocked = self.checks.labels("blocked")
        self.check_duration = Histogram(
            "monitor_check_duration_seconds", "Wall time of one check", buckets=LATENCY_BUCKETS, registry=r
        )
        self.lateness = Histogram(
            "monitor_schedule_lateness_seconds",
            "Actual start of a check minus its scheduled time",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.skipped = Counter(
            "monitor_checks_skipped", "Ticks skipped because the previous check still ran", registry=r
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
        self.events_published = Counter(
            "monitor_events_published", "Outbox events published to Redis", registry=r
        )
        self.monitors = Gauge("monitor_monitors_scheduled", "Monitors with a running ticker", registry=r)
        self.loop_blocked = Counter(
            "monitor_event_loop_blocked", "Times the event loop was blocked for more than 100 ms", registry=r
        )
