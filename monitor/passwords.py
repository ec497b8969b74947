"""Passwords: the rule a new one must meet, and argon2id hashing off the event loop.

Parameters: argon2id with 19 MiB of memory, 2 passes, 1 lane (OWASP's first recommended set).
Measured on this machine (2 cores, shared): a hash or a verification takes 23-26 ms; 64 MiB
and 2 passes took 115 ms, 3 passes 157 ms. At 20 sign-ins a second the chosen set costs half a
core, the heavier ones more than both cores, so a burst of sign-ins would starve the checks.

Hashing runs on its own pool of ``HASH_THREADS`` threads (argon2-cffi releases the GIL while it
hashes), so the loop keeps serving while it works, and at most ``HASH_THREADS`` hashes use CPU at
once; at most ``MAX_WAITING`` more wait their turn, and a caller beyond that gets ``Busy`` (a
503 with a ``Retry-After`` from the domain) instead of a queue that grows without bound (each
waits about 25 ms per ``HASH_THREADS`` ahead of it). A stored hash made with other parameters
is verified as it is and re-made with the current ones (``Verified.rehash``), so changing them
here upgrades every user at their next sign-in.

A new password has at least ``MIN_LENGTH`` characters, is not one character repeated, and is not
in the bundled list of common passwords (``common_passwords.txt``, compared lower-cased).
"""

from __future__ import annotations

import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from monitor.lifecycle import block_stop_signals

MIN_LENGTH = 12
MAX_LENGTH = 1024  # hashing takes the same time whatever the length; this bounds the request
MEMORY_KIB = 19 * 1024
TIME_COST = 2
PARALLELISM = 1
HASH_THREADS = 2
MAX_WAITING = 64
COMMON_FILE = Path(__file__).with_name("common_passwords.txt")

T = TypeVar("T")

_HASHER = PasswordHasher(time_cost=TIME_COST, memory_cost=MEMORY_KIB, parallelism=PARALLELISM)


@functools.cache
def common_passwords() -> frozenset[str]:
    lines = COMMON_FILE.read_text(encoding="utf-8").splitlines()
    return frozenset(line.strip().lower() for line in lines if line.strip() and not line.startswith("#"))


def problem(password: str) -> str | None:
    """What is wrong with ``password`` as a new one; None if nothing is."""
    if len(password) < MIN_LENGTH:
        return f"must have at least {MIN_LENGTH} characters"
    if len(password) > MAX_LENGTH:
        return f"must have at most {MAX_LENGTH} characters"
    if len(set(password)) == 1:
        return "must not be one character repeated"
    if password.lower() in common_passwords():
        return "is one of the most common passwords; choose another"
    return None


class Busy(Exception):
    """More hashes are waiting than ``MAX_WAITING``: the caller should retry shortly (the domain
    answers 503 with ``Retry-After``)."""


@dataclass(frozen=True)
class Verified:
    ok: bool
    rehash: str | None = None  # the password hashed with the current parameters, to store


class Hasher:
    """Hashes and verifies on a bounded pool of threads; one per process."""

    def __init__(self, threads: int = HASH_THREADS, waiting: int = MAX_WAITING) -> None:
        # Its threads leave the stop signals to the main thread (monitor/lifecycle.py).
        self._pool = ThreadPoolExecutor(
            max_workers=threads, thread_name_prefix="argon2", initializer=block_stop_signals
        )
        self._slots = threads + waiting
        self._busy = 0
        self._dummy: str | None = None

    async def _run(self, fn: functools.partial[T]) -> T:
        if self._busy >= self._slots:
            raise Busy(f"more than {self._slots} password hashes in hand")
        self._busy += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self._pool, fn)
        finally:
            self._busy -= 1

    async def hash(self, password: str) -> str:
        return await self._run(functools.partial(_HASHER.hash, password))

    async def verify(self, stored: str | None, password: str) -> Verified:
        """Whether ``password`` is the one ``stored`` was made from (None: no password, which
        takes as long and fails); with the rehash to store when the parameters changed."""
        if self._dummy is None:  # verified against when there is no hash: it takes as long
            self._dummy = await self._run(functools.partial(_HASHER.hash, "no such user: a dummy"))
        result = await self._run(functools.partial(_verify, stored or self._dummy, password))
        return result if stored is not None else Verified(False)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _verify(stored: str, password: str) -> Verified:
    try:
        _HASHER.verify(stored, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return Verified(False)
    return Verified(True, _HASHER.hash(password) if _HASHER.check_needs_rehash(stored) else None)
