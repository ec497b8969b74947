"""Time-based uptime over a window, clipped to the monitor's life."""

from datetime import UTC, datetime, timedelta

from monitor.domain.uptime import figures

H = timedelta(hours=1)
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_no_checks_is_unknown_not_zero() -> None:
    assert figures(T0, T0 + 24 * H, T0 - H, T0 + 48 * H, [], [], 0) == (None, None)


def test_incident_inside_window() -> None:
    percent, down = figures(T0, T0 + 10 * H, T0 - H, T0 + 20 * H, [(T0 + H, T0 + 2 * H)], [], 100)
    assert down == 3600 and percent == 90.0


def test_incident_overlapping_both_edges_and_open_incident() -> None:
    incidents = [(T0 - H, T0 + H), (T0 + 9 * H, None)]
    percent, down = figures(T0, T0 + 10 * H, T0 - 5 * H, T0 + 10 * H, incidents, [], 10)
    assert down == 7200 and percent == 80.0


def test_window_clipped_to_creation_and_now() -> None:
    created, now = T0 + 5 * H, T0 + 7 * H
    percent, down = figures(T0, T0 + 24 * H, created, now, [(T0 + 6 * H, T0 + 6.5 * H)], [], 5)
    assert down == 1800 and percent == 75.0


def test_paused_time_is_not_counted() -> None:
    # Observed 10 h minus a 2 h pause = 8 h; of the 3 h incident, 1 h falls in the pause.
    incidents = [(T0 + 3 * H, T0 + 6 * H)]
    pauses = [(T0 + 5 * H, T0 + 7 * H)]
    percent, down = figures(T0, T0 + 10 * H, T0 - H, T0 + 20 * H, incidents, pauses, 10)
    assert down == 2 * 3600 and percent == 75.0


def test_open_pause_runs_to_now() -> None:
    percent, down = figures(T0, T0 + 10 * H, T0 - H, T0 + 10 * H, [], [(T0 + 5 * H, None)], 3)
    assert down == 0 and percent == 100.0
    assert figures(T0, T0 + 10 * H, T0 - H, T0 + 10 * H, [], [(T0 - H, None)], 3) == (None, None)
