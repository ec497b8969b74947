"""Time-based one-time passwords (RFC 6238, through ``pyotp``) and recovery codes: pure.

A code is accepted within one 30-second step either side of now (clocks of phones drift), and
only for a step later than the last one accepted for that user (``last_step``, stored with the
secret): a code seen once, by the user or by someone looking over their shoulder, cannot be
used again, nor can an older one of the window.

Recovery codes are shown once, when two factors are turned on, and stored as SHA-256 only: each
holds 80 random bits (16 base32 characters, in groups of four), too many to guess offline, so
no slow hash is needed. A used code is deleted.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass

import pyotp

STEP = 30  # seconds
DIGITS = 6
WINDOW = 1  # steps either side
RECOVERY_CODES = 10
_B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"


def new_secret() -> str:
    """A new shared secret: 160 bits in base32, as authenticator apps take it (RFC 4226 4)."""
    return pyotp.random_base32(32)


def provisioning_uri(secret: str, email: str, issuer: str = "monitor") -> str:
    """The ``otpauth://`` URI an app reads from a QR code."""
    return pyotp.TOTP(secret, digits=DIGITS, interval=STEP).provisioning_uri(name=email, issuer_name=issuer)


def step_at(now: float) -> int:
    return int(now // STEP)


@dataclass(frozen=True)
class Accepted:
    step: int  # to store as the user's last accepted step


def verify(secret: str, code: str, last_step: int | None, now: float | None = None) -> Accepted | None:
    """The step ``code`` belongs to, if it is right within the window and later than
    ``last_step``; None otherwise (wrong, too old, or replayed)."""
    code = code.strip().replace(" ", "")
    if len(code) != DIGITS or not code.isdigit():
        return None
    totp = pyotp.TOTP(secret, digits=DIGITS, interval=STEP)
    current = step_at(time.time() if now is None else now)
    for step in range(current - WINDOW, current + WINDOW + 1):
        if last_step is not None and step <= last_step:
            continue
        if hmac.compare_digest(totp.generate_otp(step), code):
            return Accepted(step)
    return None


def code_at(secret: str, now: float) -> str:
    """The code of the step ``now`` falls in (for tests and the enrolment check)."""
    return pyotp.TOTP(secret, digits=DIGITS, interval=STEP).generate_otp(step_at(now))


def new_recovery_codes(count: int = RECOVERY_CODES) -> list[str]:
    codes = []
    for _ in range(count):
        raw = "".join(secrets.choice(_B32) for _ in range(16))
        codes.append("-".join(raw[i : i + 4] for i in range(0, 16, 4)))
    return codes


def normal_recovery_code(code: str) -> str | None:
    """A recovery code as stored before hashing: upper case, without dashes or spaces; None
    when it cannot be one."""
    raw = code.strip().upper().replace("-", "").replace(" ", "")
    return raw if len(raw) == 16 and all(ch in _B32 for ch in raw) else None


def hash_recovery_code(code: str) -> bytes | None:
    raw = normal_recovery_code(code)
    return None if raw is None else hashlib.sha256(b"monitor-recovery\x00" + raw.encode()).digest()
