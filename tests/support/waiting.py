"""Waiting on a condition with a deadline, never with a fixed sleep.

Helpers here and in the other support modules take ``timeout=`` (ruff's ASYNC109 is silenced
for them): a deadline named at the call site reads better in a test than a wrapping block.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")

DEFAULT_TIMEOUT = 20.0


async def wait_for(
    condition: Callable[[], T | Awaitable[T]],
    *,
    timeout: float = DEFAULT_TIMEOUT,  # noqa: ASYNC109
    interval: float = 0.05,
    message: str | Callable[[], str] | None = None,
    retry_on: tuple[type[BaseException], ...] = (Exception,),
) -> T:
    """Call ``condition`` (sync or async) until it returns something truthy, and return that.

    Fails with an ``AssertionError`` after ``timeout`` seconds, naming ``message`` (a string or
    a callable evaluated at failure time, for a description of the state) and the last value or
    exception seen. An exception of ``retry_on`` raised by ``condition`` (e.g. a connection
    refused while a server starts) counts as "not yet"; any other, and an ``AssertionError``
    always (an assertion inside the condition failed: waiting will not fix it), fails at once.
    """
    deadline = time.monotonic() + timeout
    last: Any = None
    last_exc: BaseException | None = None
    while True:
        try:
            value = condition()
            if inspect.isawaitable(value):
                value = await value
            last, last_exc = value, None
            if value:
                return value  # type: ignore[return-value]
        except AssertionError:
            raise
        except retry_on as exc:
            last_exc = exc
        if time.monotonic() >= deadline:
            what = message() if callable(message) else message
            detail = f"{what or getattr(condition, '__name__', 'condition')}: not true after {timeout:g}s"
            if last_exc is not None:
                raise AssertionError(f"{detail} (last error: {last_exc!r})") from last_exc
            raise AssertionError(f"{detail} (last value: {last!r})")
        await asyncio.sleep(interval)
