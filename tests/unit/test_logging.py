"""The log pipeline: what redaction masks and keeps, and one JSON schema for every logger.

``redact`` is a pure function, tested on a table of named scenarios. ``configure`` changes the
process's logging for good, so it is tested in a child process whose stdout is the log.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from monitor.domain import keys as api_keys
from monitor.logging import REDACTED, SETUP_EVENT, redact, redact_event

KEY = "mk_0a1b2c3d_" + "Zx9-_" * 8 + "q7P"  # the shape api_keys.generate_key makes
GENERATED = api_keys.generate_key()[0]
BOT = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1"  # id:35 characters
PING = "hD1q-9xQ_ZrT0vYb3kLmN8pW2sAeC4uF"  # a heartbeat's token (checks/heartbeat.new_token)
SESSION = "q7P-Zx9_" * 5 + "abc"  # a session id's shape (43 characters), and a link token's

# (scenario, text, what must be gone, what must stay)
CASES: list[tuple[str, str, list[str], list[str]]] = [
    ("an API key alone", f"key {KEY} used", [KEY, KEY[12:]], ["mk_0a1b2c3d_", "used"]),
    ("an API key in a query string", f"/api/v1/monitors?key={KEY}&x=1", [KEY[12:]], ["&x=1"]),
    ("an API key cut by aiohttp's quote", f"b'Bearer {KEY[:30]}'...", [KEY[12:30]], []),
    ("a generated key", GENERATED, [GENERATED[12:]], [GENERATED[:12]]),
    ("a Bearer value", "Bearer abcdefgh12345678", ["abcdefgh12345678"], ["Bearer "]),
    ("a Basic value", "basic dXNlcjpwYXNzd29yZA==", ["dXNlcjpwYXNzd29yZA"], ["basic "]),
    ("an Authorization header line", "Authorization: Digest username=x, response=y", ["x", "y"], []),
    ("a quoted Authorization header", "{'Authorization': 'Token 0xs3cr3t'}", ["0xs3cr3t"], ["}"]),
    ("a Proxy-Authorization header", "proxy-authorization=Negotiate YIIxyz", ["YIIxyz"], []),
    ("a ping URL's path", f"/ping/{PING}", [PING], ["/ping/"]),
    ("a ping URL no route matched", f"HEAD /ping/{PING}/ 405", [PING], ["HEAD /ping/", "/ 405"]),
    ("a ping URL with its kind", f"http://monitor.test/ping/{PING}/fail", [PING], ["/fail"]),
    ("a badge URL", f"/badge/{PING}/uptime/30d.svg", [PING], ["/badge/", "/uptime/30d.svg"]),
    (
        "a session cookie",
        f"Cookie: __Host-monitor_session={SESSION}; theme=dark",
        [SESSION],
        ["; theme=dark"],
    ),
    ("an SSO state cookie", f"Set-Cookie: __Host-monitor_sso={SESSION}; Path=/", [SESSION], ["; Path=/"]),
    (
        "an SSO callback's query",
        f"GET https://m.test/api/v1/sso/callback?code={PING}&state={SESSION} 303",
        [PING, SESSION],
        ["/api/v1/sso/callback?", " 303"],
    ),
    ("an invitation link", f"https://m.test/invitation#{SESSION} sent", [SESSION], ["/invitation#", " sent"]),
    ("a reset link", f"https://m.test/reset-password#{SESSION}", [SESSION], ["/reset-password#"]),
    ("a setup link", f"https://m.test/setup?token={SESSION} opened", [SESSION], ["/setup?token=", " opened"]),
    ("a setup link's later token", f"/setup?next=/&token={SESSION}", [SESSION], ["/setup?next=/&token="]),
    (
        "aiohttp's LineTooLong message",
        f"Got more than 8190 bytes when reading: b'Bearer {KEY}AAAA'.",
        [KEY[12:]],
        ["8190 bytes"],
    ),
    ("a bot token", f"token {BOT}", [BOT, BOT.split(":")[1]], ["123456789:"]),
    (
        "a Bot API URL",
        f"https://api.telegram.org/bot{BOT}/sendMessage",
        [BOT.split(":")[1]],
        ["/sendMessage", "api.telegram.org"],
    ),
    (
        "a percent-encoded bot token",
        "bot123456789%3AAAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1",
        ["AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1"],
        [],
    ),
    (
        "a PostgreSQL DSN",
        "postgresql://monitor:s3cr3t-pw@db.internal:5432/monitor",
        ["s3cr3t-pw"],
        ["postgresql://monitor:", "@db.internal:5432/monitor"],
    ),
    (
        "a Redis URL without user",
        "redis://:hunter22@127.0.0.1:6379/0",
        ["hunter22"],
        ["redis://:", "@127.0.0.1"],
    ),
    ("a password holding @", "postgres://u:p@ss@host/db", ["p@ss"], ["@host/db"]),
    ("a libpq key=value DSN", "host=db user=monitor password=s3cr3t dbname=m", ["s3cr3t"], ["dbname=m"]),
    ("a quoted libpq password", "password='two words' host=db", ["two words"], ["host=db"]),
]
KEPT = [
    ("a URL with a port, no user info", "http://127.0.0.1:8080/path@v2"),
    ("a time", "2026-11-30T15:16:14.123456Z"),
    ("an event name", "alert.send_failed"),
    ("basic words", "basic auth is configured"),
    ("a monitor id and an IPv6 address", "monitor 123456 at [2001:db8::1]:443"),
    ("a key prefix alone", "mk_0a1b2c3d"),
    ("a chat id", "chat -1001234567890"),
]


@pytest.mark.parametrize(("text", "gone", "kept"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_redact_masks_secrets(text: str, gone: list[str], kept: list[str]) -> None:
    masked = redact(text)
    assert REDACTED in masked, masked
    for secret in gone:
        assert secret not in masked, masked
    for part in kept:
        assert part in masked, masked
    assert redact(masked) == masked, "masking twice changes nothing"


@pytest.mark.parametrize("text", [c[1] for c in KEPT], ids=[c[0] for c in KEPT])
def test_redact_keeps_what_is_no_secret(text: str) -> None:
    assert redact(text) == text


def test_redact_event_masks_fields_by_value_and_by_name() -> None:
    class Thing:
        def __repr__(self) -> str:
            return f"<Thing {KEY}>"

    line: dict[str, Any] = {
        "event": f"sent with {KEY}",
        "password": "plain-words",
        "telegram_bot_token": "not-even-token-shaped",
        "api_key": None,
        "count": 3,
        "ok": True,
        "ratio": 0.5,
        "nested": {"dsn": "postgresql://u:pw12345@h/db", "secret": "x", "items": [BOT, 1]},
        "thing": Thing(),
    }
    masked = redact_event(None, "info", line)
    text = json.dumps(masked)
    for secret in (KEY[12:], "plain-words", "not-even-token-shaped", "pw12345", BOT.split(":")[1]):
        assert secret not in text, text
    assert masked["count"] == 3 and masked["ok"] is True and masked["ratio"] == 0.5
    assert masked["api_key"] is None
    assert masked["nested"]["secret"] == REDACTED and masked["nested"]["items"][1] == 1
    assert masked["thing"].startswith("<Thing mk_0a1b2c3d_")


def test_the_setup_link_line_keeps_its_url_alone() -> None:
    # The one deliberate secret (monitor/logging.py's SETUP_EVENT): its url field, nothing else.
    link = f"http://127.0.0.1:8080/setup?token={SESSION}"
    line = {"event": SETUP_EVENT, "url": link, "dashboard": link, "password": "plain-words"}
    masked = redact_event(None, "info", line)
    assert masked["url"] == link
    assert SESSION not in masked["dashboard"] and masked["password"] == REDACTED
    other = redact_event(None, "info", {"event": "api.request", "url": link})
    assert SESSION not in other["url"]


# A child process: configure logging as `monitor api` does, then log through structlog, the
# standard library (as aiohttp, asyncpg and asyncio do), warnings and an exception.
CHILD = textwrap.dedent(
    """
    import asyncio, logging, sys, warnings
    from monitor import logging as mlog

    mlog.configure(sys.argv[1], "info", process="api")
    key, bot, dsn = sys.argv[2:5]
    log = mlog.get("monitor.test")
    log.info("structlog.line", dsn=dsn, count=1)
    with mlog.bound(request_id="req-1"):
        logging.getLogger("aiohttp.server").error(
            "Error handling request from %s", "127.0.0.1", exc_info=ValueError(f"b'Bearer {key}'")
        )
    from aiohttp.http_exceptions import LineTooLong
    logging.getLogger("aiohttp.server").error(
        "Error handling request from %s", "127.0.0.1", exc_info=LineTooLong(f"Bearer {key}"[:100], 8190)
    )
    logging.getLogger("asyncpg.pool").warning("connection to %s lost", dsn)
    logging.getLogger("aiohttp.access").info("below the level of nothing: %s", "shown")
    logging.getLogger("asyncio").debug("debug is below info")
    warnings.warn(f"careful with {key}", UserWarning, stacklevel=1)
    try:
        raise RuntimeError(f"https://api.telegram.org/bot{bot}/sendMessage")
    except RuntimeError:
        log.exception("structlog.failed")

    async def crash():
        raise ConnectionError(f"Authorization: Bearer {key}")

    async def main():
        asyncio.get_running_loop().create_task(crash())
        await asyncio.sleep(0)
        await asyncio.sleep(0)

    asyncio.run(main())  # the task's exception is logged when it is collected

    class Leaky:
        def __del__(self):
            raise ValueError(f"password={key}")

    Leaky()  # "Exception ignored in ...", which Python writes to stderr unless told otherwise
    print(f"raw print {key}", file=sys.stderr)  # not a log line: the check below must see it
    raise RuntimeError(f"crashed with Bearer {key}")
    """
)
DSN = "postgresql://monitor:s3cr3t-pw@127.0.0.1:5432/monitor"


def run_child(fmt: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MONITOR_")} | {"PYTHONUNBUFFERED": "1"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, fmt, KEY, BOT, DSN],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 1, done
    assert done.stderr.strip() == f"raw print {KEY}", done.stderr
    return done.stdout.splitlines()


def test_every_logger_writes_the_one_json_schema_without_secrets() -> None:
    lines = [json.loads(raw) for raw in run_child("json")]  # every line parses
    by_event = {line["event"].split(" ")[0]: line for line in lines}
    for line in lines:
        assert {"event", "level", "timestamp", "process", "logger"} <= line.keys(), line
        assert list(line)[:5] == ["timestamp", "level", "process", "logger", "event"], line
        assert line["process"] == "api" and line["timestamp"].endswith("Z"), line
        text = json.dumps(line)
        for secret in (KEY[12:], BOT.split(":")[1], "s3cr3t-pw"):
            assert secret not in text, line
    assert by_event["structlog.line"]["logger"] == "monitor.test"
    assert by_event["structlog.line"]["dsn"] == "postgresql://monitor:[redacted]@127.0.0.1:5432/monitor"
    aiohttp_line = by_event["Error"]
    assert aiohttp_line["logger"] == "aiohttp.server" and aiohttp_line["level"] == "error"
    assert aiohttp_line["request_id"] == "req-1", "contextvars reach library lines"
    assert "ValueError" in aiohttp_line["exception"]
    refused = by_event["http.request_refused"]
    assert refused["refused"] == "LineTooLong" and refused["level"] == "info" and "exception" not in refused
    assert by_event["connection"]["logger"] == "asyncpg.pool"
    assert by_event["below"]["logger"] == "aiohttp.access"
    assert "debug" not in by_event
    assert any(line["logger"] == "py.warnings" for line in lines)
    assert "RuntimeError" in by_event["structlog.failed"]["exception"]
    assert "ValueError" in by_event["exception.unraisable"]["exception"]
    crashed = by_event["process.crashed"]
    assert crashed["level"] == "critical", crashed
    assert "RuntimeError: crashed with Bearer [redacted]" in crashed["exception"], crashed
    asyncio_lines = [line for line in lines if line["logger"] == "asyncio"]
    assert asyncio_lines and "ConnectionError" in asyncio_lines[0]["exception"], lines


def test_console_format_is_readable_and_masked() -> None:
    lines = run_child("console")
    assert lines and not lines[0].startswith("{")
    text = "\n".join(lines)
    assert "structlog.line" in text and "Error handling request from 127.0.0.1" in text
    for secret in (KEY[12:], BOT.split(":")[1], "s3cr3t-pw"):
        assert secret not in text
