"""The spool's files and records: what is written is read back, a torn or corrupt tail is told
apart and skipped, segments go once written, the size is bounded, one process per name."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from monitor.models import CheckResult
from monitor.scheduler import spool as spool_module
from monitor.scheduler.metrics import SchedulerMetrics
from monitor.scheduler.quorum import Located, Seen
from monitor.scheduler.spool import Spool, SpoolBusy, read, segments, stem
from monitor.scheduler.spooled import Spooled, notice_record, pending_record, runs
from monitor.scheduler.state import UNKNOWN, Alert, Change, Outcome, State
from monitor.scheduler.transitions import Notice, Pending
from monitor.scheduler.writer import state_record

T = datetime(2026, 12, 1, 12, 0, 0, 123456, tzinfo=UTC)


def _spool(directory: Path, name: str = "host:1", max_bytes: int = 1 << 20) -> Spool:
    spool = Spool(directory, name, database="42/monitor", max_bytes=max_bytes, metrics=SchedulerMetrics())
    spool.open()
    spool.start()
    return spool


def _row(n: int) -> tuple[object, ...]:
    result = CheckResult(
        7, T + timedelta(seconds=n), ok=False, status_code=500, latency_ms=1.5, error="status 500"
    )
    result.details = {"body": "cut"}
    state = State(status="down", failures=2, streak_started_at=T, flips=(T,))
    return (*result.record(), *state_record(state))


def _only_segment(directory: Path, name: str = "host:1") -> Path:
    found = segments(directory, stem(name))
    assert len(found) == 1, found
    return found[0][1]


def test_records_read_back_as_written_in_runs_per_epoch(tmp_path: Path) -> None:
    spool = _spool(tmp_path)
    spool.lease(3, 1000.0)
    spool.append(("R", _row(0)))
    result = CheckResult(7, T, ok=False, status_code=500, error="status 500")
    down = Pending(
        Spooled(7, "Site", "https://example.com/"),
        Outcome((Change("down", T, "status 500"),), (Alert("down", T, {"covers": ["B"]}),)),
        result,
        located=Located("eu", UNKNOWN, Seen(reason="eu: 500"), (Change("down", T),), True, "eu: 500"),
    )
    spool.append(pending_record(down))
    spool.lease(3, 1002.5)
    spool.append(("P", [11, 12]))
    spool.lease(4, 2000.0)  # lost its lease and joined again
    notice = Notice("connectivity_lost", T, {"reason": "all references failed"})
    spool.append(notice_record(notice))
    spool.append(("R", _row(1)))
    found = read(_only_segment(tmp_path))
    assert found.problem is None and found.header == {"database": "42/monitor", "name": "host:1"}
    first, second = runs(found.records)
    assert (first.epoch, first.lease_end, second.epoch, second.lease_end) == (3, 1002.5, 4, 2000.0)
    assert first.rows == [_row(0)] and first.pings == [11, 12] and second.rows == [_row(1)]
    (again,) = first.transitions
    assert isinstance(again, Pending)
    assert (again.spec.id, again.spec.name, again.spec.url) == (7, "Site", "https://example.com/")
    assert again.outcome == down.outcome and again.event_ids == down.event_ids
    assert (again.result.time, again.result.status_code, again.result.error) == (T, 500, "status 500")
    assert again.located is not None and again.located.seen.reason == "eu: 500"
    assert again.located.changes == (Change("down", T),)
    (told,) = second.transitions
    assert isinstance(told, Notice) and told.event_id == notice.event_id and told.details == notice.details
    spool.close()


@pytest.mark.parametrize(
    ("damage", "problem", "rows"),
    [
        (lambda data: data[:-3], "torn", 2),  # killed in the middle of the last record's write
        (lambda data: data, None, 3),
        (lambda data: data[:-1] + b"\xc1" + data[-1:], "corrupt", 2),
        (lambda data: b"\x93\xadmonitor-spool\x09\x80" + data, "version 9", 0),
        (lambda data: b"garbage!" + data, "not a spool", 0),
    ],
)
def test_a_damaged_segment_is_read_up_to_its_damage(tmp_path: Path, damage, problem, rows) -> None:
    spool = _spool(tmp_path)
    for n in range(3):
        spool.append(("R", _row(n)))
    path = _only_segment(tmp_path)
    path.write_bytes(damage(path.read_bytes()))
    found = read(path)
    assert found.problem == problem
    assert [r[0] for r in found.records] == ["R"] * rows
    if problem == "torn":
        assert found.left_bytes > 0
    spool.close()


def test_an_empty_file_is_no_problem(tmp_path: Path) -> None:
    path = tmp_path / "x.00000001.spool"
    path.write_bytes(b"")
    assert read(path).problem is None and read(path).records == []


def test_a_flush_marks_what_it_wrote_and_a_replay_skips_it(tmp_path: Path) -> None:
    spool = _spool(tmp_path)
    spool.lease(1, 10.0)
    spool.append(("R", _row(0)))
    mark = spool.mark()  # a flush begins: it writes row 0
    spool.append(("R", _row(1)))  # taken while it writes
    spool.release(mark)
    left = read(_only_segment(tmp_path))
    assert [r[0] for r in left.records] == ["L", "R"], "the lease stays: it fences row 1"
    assert [tuple(r[1]) for r in left.records if r[0] == "R"] == [_row(1)]
    spool.release(spool.mark())  # row 1 written too
    assert [r[0] for r in read(_only_segment(tmp_path)).records] == ["L"]
    spool.close()
    assert list(tmp_path.iterdir()) == [], "a spool with nothing left to write leaves no file"


def test_a_full_segment_is_followed_by_a_new_one_and_goes_once_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(spool_module, "SEGMENT_BYTES", 1000)
    spool = _spool(tmp_path)
    for n in range(10):
        spool.append(("R", _row(n)))
    mark = spool.mark()  # past SEGMENT_BYTES: the next records go to a new segment
    spool.append(("R", _row(10)))
    assert len(segments(tmp_path, stem("host:1"))) == 2
    spool.release(mark)
    left = read(_only_segment(tmp_path))
    assert [tuple(r[1]) for r in left.records if r[0] == "R"] == [_row(10)]
    spool.close()
    assert len(segments(tmp_path, stem("host:1"))) == 1, "row 10 is not written: its segment stays"


def test_a_flush_that_failed_leaves_everything_to_replay(tmp_path: Path) -> None:
    spool = _spool(tmp_path)
    spool.append(("R", _row(0)))
    spool.mark()  # never released: the database did not answer
    spool.append(("R", _row(1)))
    spool.close()
    assert [tuple(r[1]) for r in read(_only_segment(tmp_path)).records] == [_row(0), _row(1)]


def test_the_spool_is_bounded(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    spool = _spool(tmp_path, max_bytes=2000)
    for n in range(40):
        spool.append(("R", _row(n)))
    kept = len(read(_only_segment(tmp_path)).records)
    assert 0 < kept < 40
    metrics = spool._metrics
    assert metrics.spool_dropped._value.get() == 40 - kept
    spool.release(spool.mark())  # written: its segment goes, room again
    spool.append(("R", _row(99)))
    assert metrics.spool_dropped._value.get() == 40 - kept
    spool.close()


def test_a_record_it_cannot_pack_is_dropped_not_raised(tmp_path: Path) -> None:
    spool = _spool(tmp_path)
    spool.append(("N", "x", T, {"odd": {1, 2}}, None, uuid.uuid4().bytes))
    assert spool._metrics.spool_dropped._value.get() == 1
    spool.append(("R", _row(0)))
    assert len(read(_only_segment(tmp_path)).records) == 1
    spool.close()


def test_one_process_per_name(tmp_path: Path) -> None:
    first = _spool(tmp_path, "sched-a")
    with pytest.raises(SpoolBusy):
        _spool(tmp_path, "sched-a")
    other = _spool(tmp_path, "sched-b")  # another name on the same machine: its own files
    assert {p.name for p in tmp_path.glob("*.lock")} == {"sched-a.lock", "sched-b.lock"}
    first.close()
    other.close()


def test_names_are_made_safe_for_a_path() -> None:
    assert stem("host.example:1234") == "host.example_1234"
    assert stem("../x") == ".._x"


def test_a_state_record_begins_with_its_streak_record() -> None:
    from monitor.scheduler.writer import streak_record

    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    state = State(status="down", failures=3, streak_started_at=t0, successes=1, recovering_since=t0)
    assert state_record(state)[: len(streak_record(state))] == streak_record(state)


def test_a_lease_renewal_alone_makes_no_sync_due(tmp_path: Path) -> None:
    # No sync thread: what it would be woken by is seen in _dirty (the header made it due).
    spool = Spool(tmp_path, "host:1", database="42/monitor", max_bytes=1 << 20, metrics=SchedulerMetrics())
    spool.open()
    spool._new_segment(1)  # start() without its thread
    try:
        assert spool._dirty.is_set()
        spool._dirty.clear()
        spool._waiting = False  # as the thread does when it takes the work
        spool.lease(3, 1000.0)
        spool.lease(3, 1002.0)
        assert not spool._dirty.is_set()  # written, not worth a sync alone
        spool.append(("R", _row(0)))
        assert spool._dirty.is_set()  # the row's sync brings the renewals before it to disk too
        assert [r[0] for r in read(_only_segment(tmp_path)).records] == ["L", "L", "R"]
    finally:
        spool.close()
