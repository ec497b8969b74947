"""A command's database errors in words: a query past its timeout (``TimeoutError``, an
``OSError`` with no text) read "database unreachable: " with nothing after it."""

from __future__ import annotations

import pytest

from monitor.cli_support import unreachable


@pytest.mark.parametrize(
    ("exc", "message"),
    [
        (TimeoutError(), "the database did not answer in time (a query ran past its timeout); "
                         "try again when it is less busy"),
        (ConnectionRefusedError(111, "Connection refused"),
         "database unreachable: [Errno 111] Connection refused"),
    ],
)  # fmt: skip
def test_the_message_names_what_happened(exc: OSError, message: str) -> None:
    assert unreachable(exc).message == message
