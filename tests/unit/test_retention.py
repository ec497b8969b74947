"""The Community-edition path, through the decision logic (the Apache path runs for real in integration)."""

import pytest

from monitor.scheduler.retention import choose_mode


@pytest.mark.parametrize(
    ("license_name", "mode"),
    [("timescale", "policy"), ("Timescale", "policy"), ("apache", "timer"), (None, "timer"), ("", "timer")],
)
def test_choose_mode(license_name: str | None, mode: str) -> None:
    assert choose_mode(license_name) == mode
