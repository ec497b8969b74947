"""Telegram's flood limits, kept on our side so the API never has to refuse us.

Per chat about one message a second; in a group (negative chat id, or an @channel)
at most 20 a minute; per bot about 30 a second. Each limiter answers "when may the
next message go" and is told when one went; a 429's ``retry_after`` blocks a chat
until then.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

PER_CHAT_INTERVAL = 1.05  # a little over 1 s: clocks and network jitter differ
GROUP_WINDOW = 60.0
GROUP_MAX = 20
BOT_PER_SECOND = 30


def is_group(chat_id: str) -> bool:
    return chat_id.startswith("-") or chat_id.startswith("@")


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
        self._times.append(at)


class ChatLimiter:
    def __init__(self, chat_id: str, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._windows = [SlidingWindow(1, PER_CHAT_INTERVAL)]
        if is_group(chat_id):
            # A margin of a second on the minute, for the same reason as PER_CHAT_INTERVAL.
            self._windows.append(SlidingWindow(GROUP_MAX, GROUP_WINDOW + 1.0))
        self._blocked_until = 0.0

    def ready_at(self, now: float | None = None) -> float:
        now = self._clock() if now is None else now
        return max([self._blocked_until, *(w.ready_at(now) for w in self._windows)])

    def record(self) -> None:
        now = self._clock()
        for window in self._windows:
            window.record(now)

    def block_for(self, seconds: float) -> None:
        self._blocked_until = max(self._blocked_until, self._clock() + seconds)


class BotLimiter(SlidingWindow):
    def __init__(self) -> None:
        super().__init__(BOT_PER_SECOND, 1.0)
