"""A Redis master, its replica and three sentinels a test owns, to fail the master over.

Debian's ``redis-server`` is also the sentinel (``redis-server <conf> --sentinel``; a sentinel
rewrites its config file, so each has its own). Everything listens on free loopback ports and
is started, signalled and waited for by PID. The sentinels agree on a failure with a quorum of
2 and take ``down-after-milliseconds`` of silence as one; :meth:`RedisSentinels.failover` asks
them for a switchover (``SENTINEL FAILOVER``), :meth:`RedisSentinels.kill_master` makes one.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
from pathlib import Path

import redis.asyncio as aioredis

from .procs import free_port, stop_process
from .waiting import wait_for

SERVICE = "mymaster"
DOWN_AFTER_MS = 1000


def available() -> str | None:
    """Why these servers cannot run here (None when they can): Debian's redis-server."""
    if shutil.which("redis-server") is None and not Path("/usr/bin/redis-server").exists():
        return "redis-server is not installed"
    return None


class RedisProcess:
    def __init__(self, name: str, directory: Path, argv: list[str], port: int) -> None:
        self.name = name
        self.dir = directory
        self.port = port
        self.argv = argv
        self.log_path = directory / "redis.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def __repr__(self) -> str:
        return f"<{self.name} 127.0.0.1:{self.port} pid={self.proc.pid if self.proc else None}>"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"

    def spawn(self) -> None:
        assert not self.running
        self.proc = subprocess.Popen(
            self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )

    def client(self, db: int = 0) -> aioredis.Redis:
        return aioredis.Redis(
            host="127.0.0.1",
            port=self.port,
            db=db,
            socket_timeout=2,
            socket_connect_timeout=2,
            decode_responses=True,
        )

    async def ping(self) -> bool:
        if not self.running:
            raise AssertionError(f"{self!r} exited: {self.tail()}")
        client = self.client()
        try:
            return bool(await client.ping())
        finally:
            await client.aclose()

    async def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> None:  # noqa: ASYNC109
        if self.proc is None:
            return
        await stop_process(self.proc, sig, timeout, repr(self))


class RedisSentinels:
    """``servers`` (the first starts as master) and ``sentinels``; :meth:`url` names the sentinels."""

    def __init__(self, base: Path, *, binary: str | None = None, sentinels: int = 3) -> None:
        self.binary = binary or shutil.which("redis-server") or "/usr/bin/redis-server"
        self.base = base
        self.servers: list[RedisProcess] = []
        self.sentinels: list[RedisProcess] = []
        first = free_port()
        for index in range(2):
            port = first if index == 0 else free_port()
            directory = base / f"redis-{index}"
            directory.mkdir(parents=True)
            argv = [
                self.binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(directory),
                "--save", "", "--appendonly", "no", "--logfile", str(directory / "redis.log"),
                "--daemonize", "no",
                # A replica's first sync at once (Redis waits 5 s for more replicas by default).
                "--repl-diskless-sync-delay", "0",
            ]  # fmt: skip
            if index:
                argv += ["--replicaof", "127.0.0.1", str(first)]
            self.servers.append(RedisProcess(f"redis-{index}", directory, argv, port))
        for index in range(sentinels):
            port = free_port()
            directory = base / f"sentinel-{index}"
            directory.mkdir(parents=True)
            conf = directory / "sentinel.conf"
            conf.write_text(
                f"port {port}\nbind 127.0.0.1\ndir {directory}\nlogfile {directory / 'redis.log'}\n"
                f"sentinel monitor {SERVICE} 127.0.0.1 {first} 2\n"
                f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}\n"
                f"sentinel failover-timeout {SERVICE} 10000\n"
                f"sentinel parallel-syncs {SERVICE} 1\n"
            )
            self.sentinels.append(
                RedisProcess(f"sentinel-{index}", directory, [self.binary, str(conf), "--sentinel"], port)
            )

    def url(self, db: int = 0) -> str:
        hosts = ",".join(f"127.0.0.1:{s.port}" for s in self.sentinels)
        return f"redis+sentinel://{hosts}/{SERVICE}/{db}"

    def describe(self) -> str:
        return "\n".join(f"{p!r}:\n{p.tail(8)}" for p in [*self.servers, *self.sentinels])

    async def start(self) -> RedisSentinels:
        for proc in [*self.servers, *self.sentinels]:
            proc.spawn()
        for proc in [*self.servers, *self.sentinels]:
            await wait_for(proc.ping, message=lambda p=proc: f"{p!r} answers PING:\n{p.tail()}")  # type: ignore[misc]
        await self.wait_settled(self.servers[0].port)
        return self

    async def master_port(self, sentinel: RedisProcess | None = None) -> int:
        client = (sentinel or self.sentinels[0]).client()
        try:
            _host, port = await client.sentinel_get_master_addr_by_name(SERVICE)
            return int(port)
        finally:
            await client.aclose()

    def server(self, port: int) -> RedisProcess:
        return next(s for s in self.servers if s.port == port)

    async def wait_settled(self, master: int, *, known: bool = True, timeout: float = 30.0) -> None:  # noqa: ASYNC109
        """Until every sentinel names ``master`` and it has a replica in sync; with ``known``,
        also until every sentinel knows the others and that replica, so a failover can run
        (sentinels learn of replicas from INFO every 10 s: this part is slow)."""

        async def settled() -> bool:
            for sentinel in self.sentinels:
                if await self.master_port(sentinel) != master:
                    return False
                if not known:
                    continue
                client = sentinel.client()
                try:
                    state = await client.sentinel_master(SERVICE)
                    replicas = await client.sentinel_slaves(SERVICE)
                finally:
                    await client.aclose()
                if int(state["num-other-sentinels"]) < len(self.sentinels) - 1:
                    return False
                if not any(r["master-link-status"] == "ok" and not r["is_sdown"] for r in replicas):
                    return False
            client = self.server(master).client()
            try:
                info = await client.info("replication")
            finally:
                await client.aclose()
            return info["role"] == "master" and any(
                isinstance(v, dict) and v.get("state") == "online"
                for k, v in info.items()
                if k.startswith("slave")
            )

        await wait_for(
            settled, timeout=timeout, message=lambda: f"sentinels settled on {master}:\n{self.describe()}"
        )

    async def _named(self, port: int, timeout: float) -> None:  # noqa: ASYNC109
        async def named() -> bool:
            return all([await self.master_port(s) == port for s in self.sentinels])

        await wait_for(named, timeout=timeout, message=lambda: f"sentinels name {port}:\n{self.describe()}")

    async def failover(self, timeout: float = 30.0) -> int:  # noqa: ASYNC109
        """A switchover the sentinels run (``SENTINEL FAILOVER``): the replica is promoted at once;
        the old master goes on taking writes (which it loses) until a sentinel's INFO, every 10 s,
        finds it and makes it a replica. Returns the new master's port once every sentinel names it
        (:meth:`wait_settled` waits for the old master to replicate from it)."""
        old = await self.master_port()
        client = self.sentinels[0].client()
        try:
            await client.execute_command("SENTINEL", "FAILOVER", SERVICE)
        finally:
            await client.aclose()
        new = next(s.port for s in self.servers if s.port != old)
        await self._named(new, timeout)
        return new

    async def kill_master(self, timeout: float = 30.0) -> int:  # noqa: ASYNC109
        """SIGKILL the master: the sentinels notice after ``DOWN_AFTER_MS`` and promote the replica.
        Returns the new master's port once every sentinel names it (the old one stays down)."""
        old = await self.master_port()
        await self.server(old).stop(signal.SIGKILL)
        new = next(s.port for s in self.servers if s.port != old)
        await self._named(new, timeout)
        return new

    async def close(self) -> None:
        for proc in [*self.sentinels, *self.servers]:
            try:
                await proc.stop()
            except AssertionError:
                pass  # killed
