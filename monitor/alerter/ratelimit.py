"""An in-process sliding window: at most ``limit`` events in any ``window`` seconds.

The alerters' limits are shared through Redis (:mod:`monitor.alerter.pacing`); this is the
same rule kept in one process, for when Redis cannot be reached.
"""

from __future__ import annotations

from collections import deque


class SlidingWindow:
    """At most ``limit`` events in any ``window`` seconds."""

    def __init__(self, limit: int, window: float) -> None:
        self._limit = limit
        self._window = window
        self._times: deque[float] = deque()

    def ready_at(self, now: float) -> float:
        while self._times and self._times[0] <= now - self._window:
            self._times.popleft()
        if len(self._times) < self._limit:
            return now
        return self._times[0] + self._window

    def record(self, at: float) -> None:
        # Trimmed here too: a window only recorded into (grants remembered while Redis
        # decides) holds no more than a window's worth.
        while self._times and self._times[0] <= at - self._window:
            self._times.popleft()
        self._times.append(at)
