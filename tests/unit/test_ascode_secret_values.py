"""Which strings of a monitor's stored secrets configuration as code treats as secrets: those the
store seals, not what the API shows of them (auth's type and username, header names), so a file
may write ``auth: {type: bearer, token: ${TOKEN}}`` with the type inline."""

from __future__ import annotations

from typing import Any

import pytest

from monitor.secrets import monitor_secret_strings

CASES = [
    ("none", None, set()),
    ("bearer", {"auth": {"type": "bearer", "token": "t0k"}}, {"t0k"}),
    ("basic", {"auth": {"type": "basic", "username": "ada", "password": "pw"}}, {"pw"}),
    ("a secret header", {"headers": [["Authorization", "Bearer x"]]}, {"Bearer x"}),
    ("a journey's fills", {"fills": [["#password", "hunter2"]]}, {"hunter2"}),
    ("an empty token", {"auth": {"type": "bearer", "token": ""}}, set()),
]


@pytest.mark.parametrize(("secrets", "values"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_secret_values_are_what_the_store_seals(secrets: dict[str, Any] | None, values: set[str]) -> None:
    assert monitor_secret_strings(secrets) == values
