"""A loopback TCP proxy a test can cut and restore, to make a service "go away".

Pointing a process at the proxy instead of the service lets a test take the service
down for that process alone (all connections reset, new ones refused) without
stopping the shared server other tests use.
"""

from __future__ import annotations

import asyncio
import contextlib


class TcpProxy:
    def __init__(self, upstream_host: str, upstream_port: int, *, host: str = "127.0.0.1") -> None:
        self.upstream = (upstream_host, upstream_port)
        self.host = host
        self.port = 0
        self.up = True
        self._server: asyncio.Server | None = None
        self._links: set[asyncio.Task[None]] = set()
        self.connections = 0

    async def start(self) -> TcpProxy:
        self._server = await asyncio.start_server(self._accept, self.host, 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def cut(self) -> None:
        """Reset every connection and refuse new ones until :meth:`restore`."""
        self.up = False
        for task in list(self._links):
            task.cancel()

    def restore(self) -> None:
        self.up = True

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self.up:
            writer.transport.abort()
            return
        self.connections += 1
        task = asyncio.current_task()
        assert task is not None
        self._links.add(task)
        up_writer: asyncio.StreamWriter | None = None
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            self._links.discard(task)
            writer.transport.abort()
            if up_writer is not None:
                up_writer.transport.abort()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    writer.transport.abort()
