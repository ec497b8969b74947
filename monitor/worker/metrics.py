"""A worker's Prometheus metrics, in a registry of its own."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from monitor.probes import new_registry


class WorkerMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or new_registry()
        r = self.registry
        self.jobs = Counter(
            "monitor_worker_jobs",
            "Jobs answered, by result (up, down, not_run)",
            ["result"],
            registry=r,
        )
        self.taken_over = Counter(
            "monitor_worker_jobs_taken_over",
            "Jobs taken over from a worker that stopped renewing",
            registry=r,
        )
        self.claims_lost = Counter(
            "monitor_worker_claims_lost",
            "Runs stopped because another worker took their job over",
            registry=r,
        )
        self.running = Gauge("monitor_worker_running", "Jobs running now", registry=r)
        self.duration = Histogram(
            "monitor_worker_job_duration_seconds",
            "Wall time of one heavy check",
            buckets=(0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300),
            registry=r,
        )
        self.loop_blocked = Counter(
            "monitor_event_loop_blocked", "Times the event loop was blocked for over 100 ms", registry=r
        )
