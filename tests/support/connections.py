"""Connections a check opens, closed before the test's event loop ends.

A check returns as soon as its answer is complete; a TLS connection then still exchanges
close_notify before its socket closes. The test's loop ends with the test, so a fixture that
makes a check session waits (with a deadline) until every connection opened meanwhile is
closed, rather than leave sockets to the garbage collector, and aborts any left after it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from .waiting import wait_for


@contextlib.asynccontextmanager
async def all_closed(monkeypatch: pytest.MonkeyPatch, timeout: float = 5.0) -> AsyncIterator[None]:  # noqa: ASYNC109
    """Record every connection the running loop opens inside the block; on leaving it (after
    the block closed its session), wait until each is closed, then abort what is still open."""
    loop = asyncio.get_running_loop()
    opened: list[asyncio.BaseTransport] = []
    dial = loop.create_connection

    async def recording(*args: Any, **kwargs: Any) -> Any:
        transport, protocol = await dial(*args, **kwargs)
        opened.append(transport)
        return transport, protocol

    monkeypatch.setattr(loop, "create_connection", recording)
    try:
        yield
    finally:
        try:
            await wait_for(
                lambda: all(_closed(t) for t in opened),
                timeout=timeout,
                interval=0.005,
                message=f"connections the check opened are still open {timeout:g} s after it returned",
            )
        finally:
            for transport in opened:
                if not _closed(transport):
                    transport.abort()  # type: ignore[attr-defined]


def _closed(transport: asyncio.BaseTransport) -> bool:
    sock = transport.get_extra_info("socket")
    return sock is None or sock.fileno() == -1
