"""The tcp check's pure parts: its settings, its target, how an answer is shown and judged.

The answers are what real services say first (an SMTP banner, an SSH identification string,
Redis's reply to PING) and what a broken or hostile one sends instead.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from monitor.checks.tcp import (
    ANSWER_CHARS,
    MAX_ANSWER_BYTES,
    Ended,
    TcpCheck,
    TcpOptions,
    TcpSettings,
    judge_answer,
    shown,
)
from monitor.domain.schemas.monitors import validate_create

SMTP = b"220 mail.example.com ESMTP Postfix (Debian/GNU)\r\n"
SSH = b"SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13\r\n"
REDIS = b"+PONG\r\n"


@pytest.mark.parametrize(
    ("answer", "expect", "ended", "cause"),
    [
        pytest.param(SMTP, "220", "found", None, id="smtp-banner"),
        pytest.param(SSH, "SSH-2.0", "found", None, id="ssh-banner"),
        pytest.param(REDIS, "PONG", "found", None, id="redis-pong"),
        # Found even if the wait ended otherwise: the bytes decide.
        pytest.param(SMTP, "220", "closed", None, id="found-then-closed"),
        pytest.param(
            b"554 5.7.1 no thanks\r\n",
            "220",
            "closed",
            'expected "220" not found in the answer ("554 5.7.1 no thanks\\r\\n")',
            id="smtp-refusing",
        ),
        pytest.param(
            b"-NOAUTH Authentication required.\r\n",
            "PONG",
            "timeout",
            'expected "PONG" not found in the answer ("-NOAUTH Authentication required.\\r\\n") within 5s',
            id="redis-noauth-then-silence",
        ),
        pytest.param(
            b"",
            "220",
            "closed",
            'expected "220" but the server closed the connection without answering',
            id="closed-silently",
        ),
        pytest.param(
            b"",
            "220",
            "timeout",
            "timed out after 5s waiting for the answer (nothing received)",
            id="silent",
        ),
        pytest.param(
            b"x" * MAX_ANSWER_BYTES,
            "220",
            "full",
            f'expected "220" not found in the first 64 KiB of the answer ("{"x" * 100}...")',
            id="flood",
        ),
        pytest.param(
            b"220 ok",
            "pong",
            "closed",
            'expected "pong" not found in the answer ("220 ok")',
            id="case-matters",
        ),
        pytest.param("Grüße\r\n".encode(), "Grüße", "found", None, id="utf-8-expect"),
    ],
)
def test_judge_answer(answer: bytes, expect: str, ended: Ended, cause: str | None) -> None:
    assert judge_answer(answer, expect, ended, 5.0) == cause


@pytest.mark.parametrize(
    ("data", "limit", "text"),
    [
        pytest.param(b"220 ready\r\n", 100, "220 ready\\r\\n", id="crlf-escaped"),
        pytest.param(b"a\tb\x00c\x1b[31m", 100, "a\\tb\\x00c\\x1b[31m", id="controls-escaped"),
        pytest.param(b"\xff\xfeok", 100, "\\xff\\xfeok", id="not-utf-8"),
        pytest.param("café".encode(), 100, "café", id="utf-8-kept"),
        pytest.param("\u202eevil".encode(), 100, "\\u202eevil", id="bidi-override-escaped"),
        pytest.param(b"abcdef", 4, "abcd...", id="cut"),
        pytest.param(b"ab\r\n", 3, "ab...", id="escape-not-split"),
        pytest.param(b"abcd", 4, "abcd", id="exactly-the-limit"),
    ],
)
def test_shown(data: bytes, limit: int, text: str) -> None:
    assert shown(data, limit) == text


def test_shown_bounds_a_huge_answer() -> None:
    text = shown(b"\x01" * MAX_ANSWER_BYTES, ANSWER_CHARS)
    assert len(text) <= ANSWER_CHARS + 3 and text.endswith("...")


GOOD: dict[str, Any] = {"host": "mail.example.com", "port": 25}


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        pytest.param({"port": 0}, "greater than or equal to 1", id="port-0"),
        pytest.param({"port": 65536}, "less than or equal to 65535", id="port-too-big"),
        pytest.param({"port": "25"}, "valid integer", id="port-as-text"),
        pytest.param({"host": "http://mail.example.com/"}, "not a URL", id="url-for-host"),
        pytest.param({"host": "mail.example.com:25"}, "not a URL, no port", id="port-in-host"),
        pytest.param({"host": "0x7f.1"}, "non-canonical numeric host", id="numeric-host"),
        pytest.param({"send": "PING\x00"}, "NUL", id="nul-in-send"),
        pytest.param({"expect": "\x00"}, "NUL", id="nul-in-expect"),
        pytest.param({"expect": ""}, "at least 1 character", id="empty-expect"),
        pytest.param({"send": "x" * 1025}, "at most 1024 characters", id="long-send"),
        pytest.param({"tls": "yes"}, "valid boolean", id="tls-not-bool"),
        pytest.param({"tls": True, "tls_verify": False}, "MONITOR_ALLOW_INSECURE_TLS", id="insecure-refused"),
        pytest.param({"timeout": 3}, "Extra inputs", id="unknown-field"),
    ],
)
def test_settings_refused(changes: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        TcpSettings.model_validate({**GOOD, **changes})


def test_settings_normalised_and_insecure_where_allowed() -> None:
    got = TcpSettings.model_validate({"host": "Mail.Example.COM.", "port": 25, "send": "PING\r\n"})
    assert (got.host, got.send) == ("mail.example.com", "PING\r\n")
    insecure = {"host": "[2001:db8::1]", "port": 465, "tls": True, "tls_verify": False}
    got = TcpSettings.model_validate(insecure, context={"allow_insecure_tls": True})
    assert (got.host, got.tls_verify) == ("2001:db8::1", False)


@pytest.mark.parametrize(
    ("settings", "target"),
    [
        pytest.param(GOOD, "tcp://mail.example.com:25", id="name"),
        pytest.param({"host": "2001:db8::1", "port": 22}, "tcp://[2001:db8::1]:22", id="ipv6"),
        pytest.param(
            {"host": "mail.example.com", "port": 465, "tls": True}, "tcp+tls://mail.example.com:465", id="tls"
        ),
    ],
)
def test_target(settings: dict[str, Any], target: str) -> None:
    assert TcpCheck().target(TcpSettings.model_validate(settings)) == target


def test_options_from_stored_settings() -> None:
    stored = {"host": "redis.internal", "port": 6379, "send": "PING\r\n", "expect": "PONG", "tls": False}
    assert TcpCheck().options(stored, None) == TcpOptions("redis.internal", 6379, b"PING\r\n", b"PONG")
    # Stored while the operator allowed it: kept; whether it is honoured is decided at each check.
    insecure = TcpCheck().options({**GOOD, "tls": True, "tls_verify": False}, None)
    assert (insecure.tls, insecure.tls_verify) == (True, False)
    with pytest.raises(ValueError, match="host"):
        TcpCheck().options(None, None)


def test_api_body_keeps_send_and_expect_as_written() -> None:
    # The api strips its bodies' strings; a line to send needs its CRLF, and a space may matter.
    body = {"type": "tcp", "name": "redis", "host": " redis.internal ", "port": 6379}
    got = validate_create({**body, "send": "PING\r\n", "expect": " PONG\r\n"}, {})
    assert (got.host, got.send, got.expect) == ("redis.internal", "PING\r\n", " PONG\r\n")  # type: ignore[attr-defined]
