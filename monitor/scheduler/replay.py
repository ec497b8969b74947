"""The spool at the scheduler's start: its own opened, and those left in the directory replayed
(spool.py).

Before it joins the cluster, a scheduler reads every spool in its directory that no running
process holds (the lock is free: its writer was killed, or stopped without reaching the
database): its own predecessor's, whatever its name (``host:pid`` changes at each start), and
any other's on the machine. Each epoch's records go through a writer fenced by that epoch, as
its own writer would have written them: while the member's row still stands, nobody has taken
its monitors and the batch is written whole (checks, states, incidents, alerts); once another
member removed it and took them, only the checks made within its lease are (writer.py).

Nothing is written twice: check rows are keyed by (time, monitor_id) (``ON CONFLICT DO
NOTHING``, and only new rows count in the rollups), a state older than the stored one is not
written over it, an incident is opened once per start and closed once, and an alert is one
event id, written to the outbox once. So a segment that was half written when the process died
is simply written again. Then the dead member's row is removed (as a stopped member releases
its own), so that its monitors move at once rather than a lease later, and the files go.

A spool of another database (the header says which) is left alone, with a log line; a file of
another version or none of ours is renamed ``*.unreadable``; a torn or corrupt tail is skipped
(a SIGKILL mid-write leaves the last record torn: expected) and counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import asyncpg

from monitor import logging as mlog
from monitor.config import ConfigError, Settings
from monitor.scheduler import spool as spool_files
from monitor.scheduler.membership import release_epoch
from monitor.scheduler.metrics import SchedulerMetrics
from monitor.scheduler.spooled import runs
from monitor.scheduler.writer import Writer

log = mlog.get(__name__)

# Which database a spool belongs to: the cluster's identifier and the database's name.
DATABASE = "SELECT system_identifier::text || '/' || current_database() FROM pg_control_system()"


@dataclass
class _Fence:
    """The fence of a spooled epoch, as writer.Fence: its row, and its lease as last spooled."""

    epoch: int | None
    lease: float
    end: float

    def lease_end(self) -> float:
        return self.end


async def open_spool(
    settings: Settings, name: str, pool: asyncpg.Pool, metrics: SchedulerMetrics
) -> spool_files.Spool | None:
    """This scheduler's spool with its lock taken (None with MONITOR_SPOOL_MAX_MB=0). The lock
    is waited for a little: a scheduler starting beside this one on the machine may be replaying
    this name's spool (a killed predecessor's) for a moment."""
    if settings.spool_max_mb == 0:
        return None
    directory = (
        Path(settings.spool_dir) if settings.spool_dir else spool_files.default_directory(dict(os.environ))
    )
    spool = spool_files.Spool(
        directory,
        name,
        database=str(await pool.fetchval(DATABASE)),
        max_bytes=settings.spool_max_mb * 1024 * 1024,
        metrics=metrics,
        sync_seconds=settings.spool_sync_ms / 1000,
    )
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 2 * settings.lease_seconds
    while True:
        try:
            spool.open()
            break
        except spool_files.SpoolBusy:
            if loop.time() > deadline:
                raise ConfigError(
                    f"MONITOR_SPOOL_DIR: {directory} holds the spool of a running scheduler named"
                    f" {name!r}; give each scheduler its own MONITOR_SCHEDULER_NAME"
                ) from None
            await asyncio.sleep(0.2)
        except OSError as exc:
            raise ConfigError(f"MONITOR_SPOOL_DIR: {directory}: {exc.strerror or exc}") from None
    log.info("spool.opened", path=str(directory), max_mb=settings.spool_max_mb)
    return spool


async def replay_all(
    pool: asyncpg.Pool,
    own: spool_files.Spool,
    *,
    lease: float,
    metrics: SchedulerMetrics,
    on_transitions: Callable[[], None] | None = None,
    operator_chat: str | None = None,
    operator_channel: int | None = None,
) -> int:
    """Replay every spool of ``own``'s directory that no running process holds (``own``'s lock
    is taken already); the check rows replayed."""
    directory = own.directory
    stems = sorted({path.name.rsplit(".", 2)[0] for path in directory.glob(f"*{spool_files.SUFFIX}")})
    replayed = 0
    for stem in stems:
        lock_path = directory / f"{stem}.lock"
        fd = None
        if stem != own.stem:
            try:
                fd = spool_files.lock(lock_path)
            except spool_files.SpoolBusy:
                continue  # a running scheduler's
        try:
            writer_of = _writers(pool, lease, on_transitions, operator_chat, operator_channel)
            replayed += await _replay(directory, stem, own.database, metrics, pool, writer_of)
        finally:
            if fd is not None:
                if not spool_files.segments(directory, stem):
                    lock_path.unlink(missing_ok=True)
                os.close(fd)
    return replayed


def _writers(
    pool: asyncpg.Pool,
    lease: float,
    on_transitions: Callable[[], None] | None,
    operator_chat: str | None,
    operator_channel: int | None,
) -> Callable[[int | None, float], Writer]:
    def make(epoch: int | None, end: float) -> Writer:
        # Metrics of its own: the scheduler's gauges follow the scheduler's own writer.
        return Writer(
            pool,
            on_transitions=on_transitions,
            metrics=SchedulerMetrics(),
            operator_chat=operator_chat,
            operator_channel=operator_channel,
            fence=_Fence(epoch, lease, end),
        )

    return make


async def _replay(
    directory: Path,
    stem: str,
    database: str,
    metrics: SchedulerMetrics,
    pool: asyncpg.Pool,
    writer_of: Callable[[int | None, float], Writer],
) -> int:
    records = []
    read_paths = []
    for _, path in spool_files.segments(directory, stem):
        found = spool_files.read(path)
        if found.header is None and found.records == [] and found.problem in (None, "torn"):
            read_paths.append(path)  # empty, or killed while its header was written
            continue
        if found.header is None:
            metrics.spool_skipped.labels("unreadable").inc()
            log.error("spool.unreadable", path=str(path), problem=found.problem)
            with contextlib.suppress(OSError):
                path.rename(path.with_name(path.name + ".unreadable"))
            continue
        if found.header.get("database") != database:
            metrics.spool_skipped.labels("other_database").inc()
            log.warning("spool.other_database", path=str(path), database=found.header.get("database"))
            return 0  # another database's: left for a scheduler of that database
        if found.problem is not None:
            metrics.spool_skipped.labels(found.problem).inc()
            log.warning(f"spool.{found.problem}_tail", path=str(path), skipped_bytes=found.left_bytes)
        records.extend(found.records)
        read_paths.append(path)
    rows = 0
    for run in runs(records):
        writer = writer_of(run.epoch, run.lease_end)
        writer.restore(run)
        for attempt in range(1_000_000):
            if await writer.flush():
                break
            await asyncio.sleep(min(1.0 + attempt, 10.0))  # the database is needed to start anyway
        rows += len(run.rows)
        released = False
        if run.epoch is not None:
            async with pool.acquire() as conn:
                released = await release_epoch(conn, run.epoch)
        log.info(
            "spool.replayed",
            spool=stem,
            epoch=run.epoch,
            rows=len(run.rows),
            transitions=len(run.transitions),
            # Its row was gone: another member had its monitors, only checks within its lease went.
            fenced=run.epoch is not None and not released,
        )
    metrics.spool_replayed.inc(rows)
    for path in read_paths:
        path.unlink(missing_ok=True)
    return rows
