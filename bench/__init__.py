"""Benchmarks of the real processes against the local services (``make bench``).

``python -m bench.scheduler`` measures the scheduler (``--scenario mix``: every check type),
``python -m bench.pings`` the api's heartbeat ping endpoint; ``make bench BENCH=pings`` runs the
latter. bench/README.md explains how.
"""
