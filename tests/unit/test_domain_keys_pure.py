"""A key's shape and its listing as every face shows it, and the box of a command run without
MONITOR_SECRET_KEY: pure."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from monitor.config import ConfigError
from monitor.domain.keys import KEY_PREFIX, generate_key, hash_key, render
from monitor.secrets import NoSecretBox

WHEN = datetime(2030, 1, 1, tzinfo=UTC)


def test_a_key_is_its_prefix_then_a_long_random_secret() -> None:
    key, prefix = generate_key()
    assert re.fullmatch(r"mk_[0-9a-f]{8}_[A-Za-z0-9_-]{43}", key) and key.startswith(f"{KEY_PREFIX}{prefix}_")
    assert generate_key()[0] != key
    assert len(hash_key(key)) == 32


@pytest.mark.parametrize(("revoked_at", "shown"), [(None, None), (WHEN, "2030-01-01T00:00:00Z")])
def test_render(revoked_at: datetime | None, shown: str | None) -> None:
    row = {"id": 2, "name": "ci", "prefix": "0a1b2c3d", "hash": b"x", "created_at": WHEN,
           "revoked_at": revoked_at, "last_used_at": None, "account_id": 1, "role": "viewer",
           "created_by": 7, "maker_email": "ada@example.com"}  # fmt: skip
    assert render(row) == {"id": 2, "name": "ci", "prefix": "mk_0a1b2c3d", "role": "viewer",
                           "created_by": {"id": 7, "email": "ada@example.com"},
                           "created_at": "2030-01-01T00:00:00Z", "last_used_at": None,
                           "revoked_at": shown}  # fmt: skip


def test_a_box_without_a_key_refuses_whatever_needs_one() -> None:
    error = ConfigError("MONITOR_SECRET_KEY is required but not set")
    box = NoSecretBox(error)
    for use in (
        lambda: box.seal("x"),
        lambda: box.open("enc:v1:x"),
        lambda: box.seal_fields({"a": "x"}, ["a"]),
    ):
        with pytest.raises(ConfigError) as caught:
            use()
        assert caught.value is error
    assert repr(box) == "<NoSecretBox>"
