"""A private ``redis-server`` a test owns: started, stopped and started again by PID.

For tests that take Redis away from the processes under test without touching the shared
server other tests use. The data lives in an append-only file under ``data_dir``
(``--appendonly yes``, no RDB snapshots), so a stop and a start keep every stream, consumer
group and pending entry, as a production Redis with AOF does across a restart; with
``keep_data=False`` nothing is written, and every start is an empty Redis (a cache-only
server, or one whose disk was lost).
"""

from __future__ import annotations

import shutil
import signal
import subprocess
from pathlib import Path

import redis.asyncio as aioredis

from .procs import free_port, kill_process, stop_process
from .waiting import wait_for


class RedisServer:
    def __init__(
        self, data_dir: Path, *, port: int | None = None, binary: str | None = None, keep_data: bool = True
    ) -> None:
        self.data_dir = data_dir
        self.keep_data = keep_data
        self.port = port or free_port()
        found = binary or shutil.which("redis-server") or "/usr/bin/redis-server"
        self.binary = found
        self.log_path = data_dir / "redis-server.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def __repr__(self) -> str:
        pid = self.proc.pid if self.proc else None
        return f"<RedisServer 127.0.0.1:{self.port} pid={pid} running={self.running}>"

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int:
        assert self.proc is not None, "redis-server not started"
        return self.proc.pid

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"

    def spawn(self) -> None:
        """Start the process (again, on the same port and data), without waiting for it."""
        assert not self.running, f"{self!r} is already running"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        argv = [
            self.binary,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", str(self.data_dir),
            "--save", "",
            "--appendonly", "yes" if self.keep_data else "no",
            "--daemonize", "no",
            "--logfile", str(self.log_path),
        ]  # fmt: skip
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        self.starts += 1

    async def start(self, timeout: float = 15.0) -> RedisServer:  # noqa: ASYNC109
        """Start the server (again, on the same port and data) and wait until it answers PING."""
        self.spawn()
        await wait_for(
            self._ping,
            timeout=timeout,
            message=lambda: f"{self!r} answers PING; its log:\n{self.tail()}",
        )
        return self

    async def _ping(self) -> bool:
        if not self.running:
            code = self.proc.returncode if self.proc else None
            raise AssertionError(f"redis-server exited ({code}):\n{self.tail()}")
        client = aioredis.Redis(host="127.0.0.1", port=self.port, socket_connect_timeout=1, socket_timeout=1)
        try:
            return bool(await client.ping())
        finally:
            await client.aclose()

    async def stop(self, timeout: float = 15.0) -> int:  # noqa: ASYNC109
        """SIGTERM (Redis writes its AOF and exits), then wait for the exit; SIGKILL on a hang."""
        assert self.proc is not None, "redis-server not started"
        return await stop_process(self.proc, signal.SIGTERM, timeout, repr(self), self.tail)

    def kill(self) -> None:
        if self.proc is not None:
            kill_process(self.proc)

    async def __aenter__(self) -> RedisServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        if self.running:
            try:
                await self.stop()
            except AssertionError:
                pass  # killed
