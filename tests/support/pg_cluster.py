"""A PostgreSQL primary and a streaming standby a test owns, to promote the one and stop the other.

They run as scripts/services.sh runs the shared server: the Debian trixie root's postgres 17
(with TimescaleDB), chrooted, as the host's ``postgres`` user, each in a private mount namespace
in which its own data directory (under the test's temporary directory) is bind-mounted at
``/srv/monitor``. When a postmaster exits, its namespace and mounts go with it. Each listens on
a free loopback port; every process is started, signalled and waited for by its PID (the chain
unshare, bash, chroot, env execs all the way, so the PID is the postmaster's).

The standby is a ``pg_basebackup -R`` of the primary (streaming replication, asynchronous; a
clean stop of the primary sends it every WAL record first, so a switchover loses nothing).
"""

from __future__ import annotations

import os
import pwd
import signal
import subprocess
from pathlib import Path

import asyncpg

from .procs import free_port, kill_process, stop_process
from .waiting import wait_for

ROOTFS = Path(os.environ.get("MONITOR_ROOTFS", "/var/cache/monitor/rootfs-trixie-pg17"))
PG_BIN = "/usr/lib/postgresql/17/bin"
MOUNT = "/srv/monitor"
DATABASE = "monitor"
# The inner script of scripts/services.sh's pg_in_root_prefix, verbatim in effect.
_IN_ROOT = r"""
state=$1 etc=$2 root=$3 mnt=$4 user=$5 bin=$6; shift 6
mkdir -p "$root$mnt" "$root/dev/shm"
mount --bind "$state" "$root$mnt"
mount --bind "$etc/passwd" "$root/etc/passwd"
mount --bind "$etc/group" "$root/etc/group"
mount -t tmpfs -o mode=1777,nosuid,nodev shm "$root/dev/shm"
mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
exec chroot --userspec="$user" "$root" /usr/bin/env -i LANG=C.UTF-8 PATH="$bin:/usr/bin:/bin" "$@"
"""
HBA = "host all all 127.0.0.1/32 trust\nhost replication all 127.0.0.1/32 trust\n"


def available() -> str | None:
    """Why these servers cannot run here (None when they can): root and the trixie root."""
    if os.geteuid() != 0:
        return "needs root (chroot, mount namespaces)"
    if not (ROOTFS / PG_BIN.lstrip("/") / "postgres").exists():
        return f"no PostgreSQL root at {ROOTFS} (make services builds it)"
    return None


class PgNode:
    """One postgres of the pair: its state directory, port and postmaster."""

    def __init__(self, name: str, state: Path, etc: Path, ids: tuple[int, int]) -> None:
        self.name = name
        self.state = state
        self.etc = etc
        self.uid, self.gid = ids
        self.port = free_port()
        self.log_path = state.parent / f"{name}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def __repr__(self) -> str:
        return f"<PgNode {self.name} 127.0.0.1:{self.port} pid={self.proc.pid if self.proc else None}>"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def url(self, database: str = DATABASE) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"

    def in_root(self, *argv: str) -> list[str]:
        ids = f"{self.uid}:{self.gid}"
        return [
            "unshare", "--mount", "--propagation", "private", "--", "/bin/bash", "-euc", _IN_ROOT,
            "pg-in-root", str(self.state), str(self.etc), str(ROOTFS), MOUNT, ids, PG_BIN, *argv,
        ]  # fmt: skip

    def run(self, *argv: str, timeout: float = 60.0) -> None:
        """Run a tool of the root in this node's namespace; fails with its output."""
        done = subprocess.run(self.in_root(*argv), capture_output=True, timeout=timeout, check=False)
        if done.returncode != 0:
            raise AssertionError(f"{argv[0]} failed ({done.returncode}): {done.stdout!r} {done.stderr!r}")

    def spawn(self) -> None:
        assert not self.running, f"{self!r} already runs"
        argv = self.in_root(
            "postgres", "-D", f"{MOUNT}/data",
            "-c", "listen_addresses=127.0.0.1", "-c", f"port={self.port}", "-c", "unix_socket_directories=",
            "-c", "shared_preload_libraries=timescaledb", "-c", "timescaledb.telemetry_level=off",
            # A test's data: no need to survive a crash of the machine.
            "-c", "fsync=off", "-c", "full_page_writes=off",
        )  # fmt: skip
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )

    async def wait_ready(self, timeout: float = 60.0) -> None:  # noqa: ASYNC109
        async def ready() -> bool:
            if not self.running:
                raise AssertionError(f"{self!r} exited: {self.tail()}")
            conn = await asyncpg.connect(self.url("postgres"), timeout=2)
            await conn.close()
            return True

        await wait_for(
            ready, timeout=timeout, message=lambda: f"{self!r} accepts connections:\n{self.tail()}"
        )

    async def stop(self, timeout: float = 30.0) -> int:  # noqa: ASYNC109
        """A fast shutdown (SIGINT, what ``pg_ctl stop`` sends): clients are cut off; a primary sends
        its standby every WAL record before it exits. SIGKILL after ``timeout``."""
        assert self.proc is not None
        return await stop_process(self.proc, signal.SIGINT, timeout, repr(self), self.tail)

    def kill(self) -> None:
        if self.proc is not None:
            kill_process(self.proc)

    async def in_recovery(self) -> bool:
        conn = await asyncpg.connect(self.url("postgres"), timeout=5)
        try:
            return bool(await conn.fetchval("SELECT pg_is_in_recovery()"))
        finally:
            await conn.close()


class PgCluster:
    """``primary`` and ``standby`` of one database; :meth:`dsn` names both, read-write first."""

    def __init__(self, base: Path) -> None:
        self.base = base
        entry = pwd.getpwnam("postgres")  # the host's system user, as scripts/services.sh makes it
        ids = (entry.pw_uid, entry.pw_gid)
        self.etc = base / "etc"
        nodes = []
        for name in ("pg-a", "pg-b"):
            state = base / name
            state.mkdir(parents=True)
            os.chown(state, *ids)
            state.chmod(0o700)
            nodes.append(PgNode(name, state, self.etc, ids))
        self.primary, self.standby = nodes
        self.a, self.b = nodes  # fixed names: the DSN's host order never changes with promotions

    def _overlay(self) -> None:
        """The root's passwd and group with ``postgres`` given the host user's ids."""
        self.etc.mkdir(exist_ok=True)
        uid, gid = self.a.uid, self.a.gid
        lines = []
        for line in (ROOTFS / "etc/passwd").read_text().splitlines():
            f = line.split(":")
            if f[0] == "postgres":
                f[2], f[3] = str(uid), str(gid)
            lines.append(":".join(f))
        (self.etc / "passwd").write_text("\n".join(lines) + "\n")
        lines = []
        for line in (ROOTFS / "etc/group").read_text().splitlines():
            f = line.split(":")
            if f[0] == "postgres":
                f[2] = str(gid)
            lines.append(":".join(f))
        (self.etc / "group").write_text("\n".join(lines) + "\n")

    def dsn(self, database: str = DATABASE) -> str:
        """Both hosts, as an operator writes it: asyncpg keeps the one that takes writes."""
        return (
            f"postgresql://postgres@{self.a.address},{self.b.address}/{database}"
            "?target_session_attrs=read-write"
        )

    async def start(self) -> PgCluster:
        """initdb, start the primary, make the database (TimescaleDB), then the standby from a
        base backup, streaming; returns once the standby has replayed the database."""
        self._overlay()
        primary = self.primary
        primary.run(
            "initdb", "-D", f"{MOUNT}/data", "--username=postgres", "--auth=trust", "--encoding=UTF8",
            "--locale=C.UTF-8",
        )  # fmt: skip
        (primary.state / "data/pg_hba.conf").write_text(HBA)
        primary.spawn()
        await primary.wait_ready()
        conn = await asyncpg.connect(primary.url("postgres"))
        try:
            await conn.execute(f'CREATE DATABASE "{DATABASE}"')
        finally:
            await conn.close()
        conn = await asyncpg.connect(primary.url())
        try:
            await conn.execute("CREATE EXTENSION IF NOT EXISTS timescaledb")
        finally:
            await conn.close()
        self.standby.run(
            "pg_basebackup", "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres",
            "-D", f"{MOUNT}/data", "-R", "-X", "stream", "-c", "fast",
        )  # fmt: skip
        self.standby.spawn()
        await self.standby.wait_ready()
        return self

    async def replicated(self) -> bool:
        """Whether the standby has replayed everything the primary wrote so far."""
        conn = await asyncpg.connect(self.primary.url("postgres"), timeout=5)
        try:
            return bool(
                await conn.fetchval(
                    "SELECT count(*) = 1 AND bool_and(replay_lsn >= pg_current_wal_lsn())"
                    " FROM pg_stat_replication"
                )
            )
        finally:
            await conn.close()

    async def switch(self, timeout: float = 30.0) -> None:  # noqa: ASYNC109
        """A switchover: stop the primary (fast: its clients are cut off, the standby gets every
        WAL record), promote the standby; the roles swap."""
        old, new = self.primary, self.standby
        await old.stop()
        conn = await asyncpg.connect(new.url("postgres"))
        try:
            assert await conn.fetchval("SELECT pg_promote(true, $1::int)", int(timeout)), (
                "promotion timed out"
            )
        finally:
            await conn.close()
        self.primary, self.standby = new, old

    async def close(self) -> None:
        for node in (self.a, self.b):
            if node.running:
                try:
                    await node.stop()
                except AssertionError:
                    pass  # killed
