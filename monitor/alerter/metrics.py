"""The alerter's Prometheus metrics, in a registry of its own."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

from monitor.probes import new_registry


class AlerterMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or new_registry()
        r = self.registry
        self.deliveries = Counter(
            "monitor_deliveries",
            "Alert deliveries by outcome (sent, dead, duplicate)",
            ["outcome"],
            registry=r,
        )
        self.retries = Counter(
            "monitor_delivery_retries", "Delivery attempts after a transient failure", registry=r
        )
        self.dead_letters = Counter(
            "monitor_dead_letters", "Events moved to the dead-letter stream", registry=r
        )
        self.latency = Histogram(
            "monitor_delivery_latency_seconds",
            "From the state change to the message accepted by the channel",
            buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 900),
            registry=r,
        )
