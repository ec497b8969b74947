"""The password rule, argon2id on its thread pool (the loop keeps running), and rehash on verify."""

from __future__ import annotations

import asyncio
import time

import pytest
from argon2 import PasswordHasher

from monitor import passwords


@pytest.mark.parametrize(
    ("password", "says"),
    [
        ("short", "at least 12"),
        ("a" * 12, "repeated"),
        ("Password1234", "common"),
        ("QWERTYUIOP123", "common"),
        ("x" * 1025, "at most"),
    ],
)
def test_a_weak_password_is_refused_saying_why(password: str, says: str) -> None:
    found = passwords.problem(password)
    assert found is not None and says in found


def test_a_long_uncommon_password_is_accepted() -> None:
    assert passwords.problem("tangerine-walrus-velvet") is None
    assert len(passwords.common_passwords()) > 100


async def test_hash_and_verify_run_off_the_loop() -> None:
    hasher = passwords.Hasher()
    try:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.001)

        ticker = asyncio.create_task(tick())
        stored = await hasher.hash("tangerine-walrus-velvet")
        assert stored.startswith("$argon2id$") and f"m={passwords.MEMORY_KIB}" in stored
        assert await hasher.verify(stored, "tangerine-walrus-velvet") == passwords.Verified(True)
        assert not (await hasher.verify(stored, "tangerine-walrus-velvex")).ok
        assert not (await hasher.verify(None, "tangerine-walrus-velvet")).ok
        assert not (await hasher.verify("not a hash", "tangerine-walrus-velvet")).ok
        ticker.cancel()
        assert ticks > 3  # the loop ran while the hashes were made
    finally:
        hasher.close()


async def test_a_hash_of_other_parameters_is_remade_on_verify() -> None:
    hasher = passwords.Hasher()
    try:
        old = PasswordHasher(time_cost=1, memory_cost=8 * 1024, parallelism=1).hash("tangerine-walrus-velvet")
        verified = await hasher.verify(old, "tangerine-walrus-velvet")
        assert verified.ok and verified.rehash is not None and f"m={passwords.MEMORY_KIB}" in verified.rehash
    finally:
        hasher.close()


async def test_a_burst_beyond_the_limit_is_refused_not_queued() -> None:
    hasher = passwords.Hasher(threads=1, waiting=1)
    try:
        started = time.monotonic()
        results = await asyncio.gather(*(hasher.hash("tangerine-walrus-velvet") for _ in range(4)),
                                       return_exceptions=True)  # fmt: skip
        assert sum(isinstance(r, passwords.Busy) for r in results) == 2
        assert time.monotonic() - started < 5
    finally:
        hasher.close()
