"""Benchmarks of the real processes against the local services (``make bench``).

``python -m bench.scheduler`` measures the scheduler; bench/README.md explains how.
"""
