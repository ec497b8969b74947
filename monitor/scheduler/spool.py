"""The scheduler's local spool: each result on disk as soon as the writer takes it.

Why: the writer keeps results in memory and writes them every second (writer.py). A scheduler
killed with SIGKILL (the OOM killer, a crash, a ``kill -9``) lost that second, and a short
outage seen only in it was never recorded. Now every record the writer takes (a check's row
with the state after it, a confirmed change with its alerts' event ids, an operator notice,
pings taken, a location's state) is also appended here, in the same call, and written at the
end of that turn of the event loop, with the other records of the turn in one write(2): the page
cache outlives the process, so a killed process loses nothing it had measured before the turn
ended (a result is taken a few microseconds before; a write per record cost about 9 us of CPU a
check at 100 checks a second, py-spy, issue 26; the checks of one tick slot mostly end in one
turn and share a write). A thread
fdatasyncs the file at most every ``MONITOR_SPOOL_SYNC_MS`` while records come in (an
operating-system crash loses at most that), without waking the event loop; a lease renewal
alone makes no sync due (an idle scheduler synced once a second for it). The default is a
second, as Redis's ``appendfsync everysec``: measured at 100 records a second on this project's
VM (ext4), a sync every 100 ms cost 41 us of CPU per record in all, every 250 ms 29, every
second 16, most of it the sync itself. Once a flush has written what was spooled before it,
it appends a watermark (``["W", offset]``: what precedes it in the segment is in the database,
and a replay skips it), and a segment wholly written is deleted; a new segment is begun once
the current one holds :data:`SEGMENT_BYTES`, not at every flush, since creating, syncing and
deleting a file a second cost about as much kernel time as all the records' writes.

Files, in ``MONITOR_SPOOL_DIR``: ``<name>.lock``, held with flock(2) while the scheduler runs,
and segments ``<name>.<seq>.spool``; ``<name>``
is the scheduler's name (``host:pid`` by default) made safe for a path, so several schedulers
on one machine keep theirs apart. The spool is bounded (``MONITOR_SPOOL_MAX_MB``): past it,
records are kept in memory only, counted and logged once.

Format: a stream of msgpack arrays (compact, timestamps typed, read back one record at a time,
and a record cut short by a kill told apart from garbage). A segment begins with
``["monitor-spool", VERSION, {"database": ..., "name": ...}]`` and the member's lease; the
records are spooled.py's. Reading stops at a torn or corrupt tail, which is counted and logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack

from monitor import logging as mlog
from monitor.scheduler.metrics import SchedulerMetrics

log = mlog.get(__name__)

MAGIC = "monitor-spool"
VERSION = 1
# How often, at most, the spool is fdatasynced while records come in (MONITOR_SPOOL_SYNC_MS).
SYNC_SECONDS = 1.0
SUFFIX = ".spool"
# A segment this large is followed by a new one at the next flush (about 25,000 check rows;
# a quarter of MONITOR_SPOOL_MAX_MB if that is less).
SEGMENT_BYTES = 4 * 1024 * 1024
_UNSAFE = re.compile(r"[^A-Za-z0-9_.@-]")


class SpoolBusy(Exception):
    """Another running process holds this scheduler name's spool."""


def stem(name: str) -> str:
    """A scheduler name as a file name (``host:123`` -> ``host_123``)."""
    return _UNSAFE.sub("_", name)


def default_directory(environ: dict[str, str]) -> Path:
    """Where the spool goes when ``MONITOR_SPOOL_DIR`` is not set: systemd's StateDirectory,
    else the XDG state directory of the user."""
    if environ.get("STATE_DIRECTORY"):
        return Path(environ["STATE_DIRECTORY"].split(":")[0]) / "spool"
    base = environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "monitor" / "spool"


def lock(path: Path) -> int:
    """Open and flock ``path``; raises :class:`SpoolBusy` if a running process holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise SpoolBusy(str(path)) from None
    return fd


def segments(directory: Path, name_stem: str) -> list[tuple[int, Path]]:
    """The segments of one spool, oldest first."""
    found = []
    for path in directory.glob(f"{glob_escape(name_stem)}.*{SUFFIX}"):
        seq = path.name[len(name_stem) + 1 : -len(SUFFIX)]
        if seq.isdigit():
            found.append((int(seq), path))
    return sorted(found)


def glob_escape(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)


@dataclass
class _Segment:
    seq: int
    path: Path
    fd: int
    size: int = 0
    data_end: int = 0  # after the last record that writes something (not a header or a lease)
    written: int = 0  # what precedes this offset is in the database (its last watermark)


@dataclass(frozen=True)
class Mark:
    """What a flush is about to write: everything spooled before this segment and offset."""

    seq: int
    offset: int


class Spool:
    """This scheduler's spool: :meth:`append` on the loop's thread, synced by a thread of its own."""

    def __init__(
        self,
        directory: Path,
        name: str,
        *,
        database: str,
        max_bytes: int,
        metrics: SchedulerMetrics,
        sync_seconds: float = SYNC_SECONDS,
    ) -> None:
        self.directory = directory
        self.stem = stem(name)
        self._name = name
        self.database = database
        self._max_bytes = max_bytes
        # A small bound gets small segments: a full spool frees room only segment by segment.
        self._segment_bytes = min(SEGMENT_BYTES, max(1, max_bytes // 4))
        self._metrics = metrics
        self._sync_seconds = sync_seconds
        self._packer = msgpack.Packer(datetime=True)
        self._segments: list[_Segment] = []  # oldest first; the last one takes the appends
        self._bytes = 0
        self._full = False
        self._lease: tuple[int, float] | None = None
        self._lock_fd: int | None = None
        # The records of this turn of the loop, written together at its end (append).
        self._pending = bytearray()
        self._pending_records = 0
        self._pending_data_end = 0  # in _pending, after its last counted record (0: none)
        # Whether _pending holds a record that is not a lease: only such a record makes a sync
        # due. A lease renewal alone (every few seconds, on an idle scheduler too) does not: a
        # kill loses nothing either way (the page cache keeps it), and after a crash of the
        # system the lease before it fences whatever was synced, as every record that follows
        # a renewal brings the renewal to disk with it in the sync it makes due.
        self._pending_sync = False
        self._write_soon = False
        # The sync thread: woken by the first append after a sync, it fdatasyncs every live
        # segment (opened by path: a segment deleted meanwhile needs no sync) and the directory.
        self._dirty = threading.Event()
        self._waiting = False  # an append since the thread last took the work
        self._new_files = False
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        metrics.spool_bytes.set_function(lambda: self._bytes)

    # -- lifecycle -------------------------------------------------------------------

    def open(self) -> None:
        """Take this name's lock (before the spools left in the directory are replayed)."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._lock_fd = lock(self.directory / f"{self.stem}.lock")

    def start(self) -> None:
        """Begin the first segment (after the replay) and the sync thread."""
        left = segments(self.directory, self.stem)
        self._new_segment(left[-1][0] + 1 if left else 1)
        self._thread = threading.Thread(target=self._syncing, name="spool-sync", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop syncing, sync once more; a spool whose records were all written leaves no file."""
        self._write_pending()
        self._stopping.set()
        self._dirty.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        empty = len(self._segments) <= 1 and all(s.data_end <= s.written for s in self._segments)
        for segment in self._segments:
            with contextlib.suppress(OSError):
                if not empty:
                    os.fdatasync(segment.fd)
                os.close(segment.fd)
            if empty:
                segment.path.unlink(missing_ok=True)
        self._segments.clear()
        if self._lock_fd is not None:
            if empty:
                (self.directory / f"{self.stem}.lock").unlink(missing_ok=True)
            os.close(self._lock_fd)
            self._lock_fd = None

    # -- what the writer and the membership call ---------------------------------------

    def append(self, record: tuple[Any, ...] | list[Any], counted: bool = True) -> None:
        """Spool one record: on the loop, held until the end of this turn of the loop, when the
        records of that turn go out in one write(2) (:meth:`_write_pending`); off it, written at
        once. A record not ``counted`` (a header, a lease) alone does not make the segment
        worth rotating."""
        if not self._segments:
            return
        try:
            data = self._packer.pack(record)
        except (TypeError, ValueError, OverflowError) as exc:
            self._drop("spool.unpackable", error=str(exc)[:200], kind=str(record[0]))
            return
        if counted and self._bytes + len(data) > self._max_bytes:
            if not self._full:
                self._full = True
                log.warning("spool.full", max_bytes=self._max_bytes, path=str(self.directory))
            self._metrics.spool_dropped.inc()
            return
        pending = self._pending
        pending += data
        self._pending_records += 1
        self._bytes += len(data)
        if counted:
            self._pending_data_end = len(pending)
        if record[0] != "L":
            self._pending_sync = True
        if self._write_soon:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._write_pending()
            return
        self._write_soon = True
        loop.call_soon(self._write_pending)

    def lease(self, epoch: int, lease_end: float) -> None:
        """The member's epoch and the end of its lease (epoch seconds), on every join and renewal:
        a replay fences the records that follow by them."""
        self._lease = (epoch, lease_end)
        self.append(("L", epoch, lease_end), counted=False)

    def mark(self) -> Mark:
        """Where a flush begins: :meth:`release` the mark once it has written what it holds.
        A current segment past :data:`SEGMENT_BYTES` is followed by a new one first."""
        if not self._segments:
            return Mark(0, 0)
        self._write_pending()
        current = self._segments[-1]
        if current.size >= self._segment_bytes and current.data_end > current.written:
            self._new_segment(current.seq + 1)
            current = self._segments[-1]
        return Mark(current.seq, current.size)

    def release(self, mark: Mark) -> None:
        """The database has everything spooled before ``mark``: delete the segments before it,
        and put a watermark in its own."""
        while len(self._segments) > 1 and self._segments[0].seq < mark.seq:
            segment = self._segments.pop(0)
            os.close(segment.fd)
            segment.path.unlink(missing_ok=True)
            self._bytes -= segment.size
        current = self._segments[-1] if self._segments else None
        if current is not None and current.seq == mark.seq and mark.offset > current.written:
            current.written = mark.offset
            self.append(("W", mark.offset), counted=False)
            self._write_pending()  # once a flush: on disk as the flush ends, not a turn later
        if self._full and self._bytes < self._max_bytes:
            self._full = False
            log.info("spool.room_again", bytes=self._bytes)

    # -- inside -------------------------------------------------------------------------

    def _write_pending(self) -> None:
        """The records held since the last write, to the current segment in one write(2)
        (none is left half written: a short write is cut off again and its records dropped)."""
        self._write_soon = False
        data = self._pending
        if not data or not self._segments:
            return
        records, data_end, sync = self._pending_records, self._pending_data_end, self._pending_sync
        self._pending, self._pending_records, self._pending_data_end = bytearray(), 0, 0
        self._pending_sync = False
        segment = self._segments[-1]
        try:
            written = os.write(segment.fd, data)
            if written < len(data):  # a full disk: no half record left in the middle
                os.ftruncate(segment.fd, segment.size)
                raise OSError(f"short write ({written} of {len(data)} bytes)")
        except OSError as exc:
            self._bytes -= len(data)
            self._metrics.spool_dropped.inc(records - 1)
            self._drop("spool.write_failed", error=str(exc) or type(exc).__name__, records=records)
            return
        if data_end:
            segment.data_end = segment.size + data_end
        segment.size += len(data)
        if sync and not self._waiting:
            self._waiting = True
            self._dirty.set()

    def _new_segment(self, seq: int) -> None:
        self._write_pending()  # what was held belongs to the segment before
        path = self.directory / f"{self.stem}.{seq:08d}{SUFFIX}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_TRUNC, 0o600)
        self._segments.append(_Segment(seq, path, fd))
        self._new_files = True
        self.append((MAGIC, VERSION, {"database": self.database, "name": self._name}), counted=False)
        if self._lease is not None:
            self.append(("L", *self._lease), counted=False)

    def _drop(self, event: str, **fields: Any) -> None:
        self._metrics.spool_dropped.inc()
        log.warning(event, **fields)

    def _syncing(self) -> None:
        while not self._stopping.is_set():
            self._dirty.wait()
            self._dirty.clear()
            self._waiting = False
            began = time.monotonic()
            self._sync_once()
            rest = self._sync_seconds - (time.monotonic() - began)
            if rest > 0:
                self._stopping.wait(rest)  # a pause between syncs that a close cuts short

    def _sync_once(self) -> None:
        for segment in list(self._segments):
            try:
                fd = os.open(segment.path, os.O_WRONLY)
            except FileNotFoundError:
                continue  # written to the database and deleted meanwhile
            except OSError as exc:
                log.warning("spool.sync_failed", error=str(exc) or type(exc).__name__)
                continue
            try:
                os.fdatasync(fd)
            except OSError as exc:
                log.warning("spool.sync_failed", error=str(exc) or type(exc).__name__)
            finally:
                os.close(fd)
        if self._new_files:  # a new segment's name is durable only once its directory is synced
            self._new_files = False
            try:
                fd = os.open(self.directory, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            except OSError as exc:
                log.warning("spool.sync_failed", error=str(exc) or type(exc).__name__)


@dataclass(frozen=True)
class Read:
    """What one segment held: its header, its records, and what was left unread and why."""

    header: dict[str, Any] | None
    records: list[list[Any]]
    problem: str | None = None  # torn (a record cut short), corrupt, version, not a spool
    left_bytes: int = 0


KINDS = frozenset({"L", "R", "T", "N", "P", "X"})


def read(path: Path) -> Read:
    """Read a segment back: every whole record up to the first that is torn or corrupt."""
    data = path.read_bytes()
    if not data:
        return Read(None, [])  # made just before the kill
    unpacker = msgpack.Unpacker(raw=False, timestamp=3, max_buffer_size=max(len(data), 1024))
    unpacker.feed(data)
    found: list[tuple[int, list[Any]]] = []  # (offset, record)
    header: dict[str, Any] | None = None
    whole = 0  # bytes up to the end of the last whole record
    problem: str | None = None
    try:
        for record in unpacker:
            if header is None:
                if not (isinstance(record, list) and len(record) == 3 and record[0] == MAGIC):
                    return Read(None, [], "not a spool", len(data))
                if record[1] != VERSION or not isinstance(record[2], dict):
                    return Read(None, [], f"version {record[1]!r}", len(data))
                header = record[2]
            elif isinstance(record, list) and len(record) == 2 and record[0] == "W":
                # Written up to there: what came before is in the database (leases stay: they
                # fence the records after them).
                found = [(at, r) for at, r in found if at >= record[1] or r[0] == "L"]
            elif isinstance(record, list) and record and record[0] in KINDS:
                found.append((whole, record))
            else:
                problem = "corrupt"
                break
            whole = unpacker.tell()
    except (ValueError, msgpack.UnpackException):
        problem = "corrupt"
    left = len(data) - whole
    if problem is None and (left or header is None):
        problem = "torn"
    return Read(header, [r for _, r in found], problem, left)
