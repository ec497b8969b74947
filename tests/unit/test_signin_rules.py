"""The pure rules of sign-in: session ids and expiry, TOTP and recovery codes, the throttle's
delays, and CSRF's verdict, row by row."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import pytest

from monitor.domain import csrf, session_ids, throttle, totp

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_session_ids_are_random_and_stored_as_their_hash() -> None:
    one, two = session_ids.new_id(), session_ids.new_id()
    assert one != two and len(one) == 43
    raw = session_ids.parse_id(one)
    assert raw is not None and len(raw) == 32
    assert session_ids.hash_id(one) == hashlib.sha256(raw).digest()


@pytest.mark.parametrize("text", ["", "x" * 42, "x" * 44, "!" * 43, "é" * 43])
def test_malformed_session_ids_have_no_hash(text: str) -> None:
    assert session_ids.hash_id(text) is None


LIFE = session_ids.Lifetime(idle=3600, absolute=86400)


@pytest.mark.parametrize(
    ("created", "last_seen", "now", "alive"),
    [
        (0, 0, 0, True),
        (0, 0, 3599, True),
        (0, 0, 3600, False),  # idle
        (0, 80000, 83000, True),
        (0, 85000, 86399, True),
        (0, 85000, 86400, False),  # absolute, though seen a minute ago
    ],
)
def test_idle_and_absolute_expiry(created: int, last_seen: int, now: int, alive: bool) -> None:
    at = [T0 + timedelta(seconds=s) for s in (created, last_seen, now)]
    assert LIFE.alive(at[2], at[0], at[1]) is alive


@pytest.mark.parametrize(
    ("idle", "seen_ago", "touch"), [(3600, 59, False), (3600, 60, True), (5, 0.4, False), (5, 0.5, True)]
)
def test_last_seen_is_written_at_most_once_per_interval(idle: float, seen_ago: float, touch: bool) -> None:
    life = session_ids.Lifetime(idle=idle, absolute=86400)
    assert life.needs_touch(T0 + timedelta(seconds=seen_ago), T0) is touch


SECRET = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"
NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("offset", "last_step", "accepted"),
    [
        (0, None, True),
        (-30, None, True),  # one step behind
        (30, None, True),  # one step ahead
        (-60, None, False),  # two steps: outside the window
        (60, None, False),
        (0, "current", False),  # replayed: its step was accepted already
        (-30, "current", False),  # older than the last accepted
        (30, "current", True),
    ],
)
def test_totp_window_and_replay(offset: int, last_step: str | None, accepted: bool) -> None:
    code = totp.code_at(SECRET, NOW + offset)
    last = totp.step_at(NOW) if last_step == "current" else None
    result = totp.verify(SECRET, code, last, now=NOW)
    assert (result is not None) is accepted
    if result is not None:
        assert result.step == totp.step_at(NOW + offset)


@pytest.mark.parametrize("code", ["", "12345", "1234567", "abcdef"])
def test_malformed_totp_codes_are_refused(code: str) -> None:
    assert totp.verify(SECRET, code, None, now=NOW) is None


def test_new_totp_secrets_work_with_their_uri() -> None:
    secret = totp.new_secret()
    assert len(secret) == 32
    assert totp.verify(secret, totp.code_at(secret, NOW), None, now=NOW) is not None
    assert totp.provisioning_uri(secret, "a@example.com").startswith("otpauth://totp/")


def test_recovery_codes_are_unique_and_hash_whatever_their_spelling() -> None:
    codes = totp.new_recovery_codes()
    assert len(set(codes)) == totp.RECOVERY_CODES
    first = codes[0]
    assert totp.hash_recovery_code(first) == totp.hash_recovery_code(first.lower().replace("-", " "))
    assert totp.hash_recovery_code("not-a-code") is None


POLICY = throttle.Policy(free=3, base=2.0, maximum=10.0)


@pytest.mark.parametrize(
    ("failures", "ago", "wait"),
    [
        (0, 0, 0.0),
        (2, 0, 0.0),
        (3, 0, 2.0),  # the first delay
        (3, 1.5, 0.5),
        (3, 2, 0.0),  # it ended
        (4, 0, 4.0),  # growing
        (5, 0, 8.0),
        (6, 0, 10.0),  # capped
        (60, 0, 10.0),
        (100, 86400, 0.0),  # forgotten after a day
    ],
)
def test_throttle_delays_grow_then_cap(failures: int, ago: float, wait: float) -> None:
    last = T0 - timedelta(seconds=ago)
    assert POLICY.wait(failures, last, T0) == pytest.approx(wait)


@pytest.mark.parametrize(
    ("address", "block"),
    [
        ("192.0.2.7", "192.0.2.7"),
        ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
        ("::ffff:192.0.2.7", "192.0.2.7"),
        (None, "unknown"),
    ],
)
def test_throttle_counts_an_ipv6_client_by_its_64(address: str | None, block: str) -> None:
    assert throttle.address_block(address) == block


def test_throttle_keys_an_email_whatever_its_case() -> None:
    assert throttle.Key.email(" Alice@Example.com") == throttle.Key.email("alice@example.com")


SITE = "https://monitor.example.com"
SID = session_ids.new_id()
TOKEN = csrf.token(SID)


@pytest.mark.parametrize(
    ("method", "origin", "given", "refused"),
    [
        ("GET", "https://evil.example", None, False),  # reads are never refused
        ("POST", SITE, None, False),  # checked Origin
        ("POST", "https://monitor.example.com:443", None, False),
        ("POST", None, TOKEN, False),  # the token
        ("DELETE", None, TOKEN, False),
        ("POST", None, None, True),
        ("PATCH", None, "wrong", True),
        ("POST", "https://evil.example", TOKEN, True),  # another site, even with the token
        ("POST", "null", TOKEN, True),
        ("POST", "http://monitor.example.com", None, True),  # another scheme is another origin
    ],
)
def test_csrf_verdict(method: str, origin: str | None, given: str | None, refused: bool) -> None:
    reason = csrf.refusal(method, origin=origin, site=SITE, session_id=SID, given=given)
    assert (reason is not None) is refused


def test_csrf_token_does_not_reveal_the_session_id() -> None:
    assert SID not in TOKEN and TOKEN != csrf.token(session_ids.new_id())
