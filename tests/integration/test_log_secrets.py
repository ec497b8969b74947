"""Secrets never logged, and one JSON schema for every line of every process.

The real api, scheduler and alerter run with a password in their database URL and a bot
token whose Bot API is a closed local port. The api gets requests that carry a real API key
where a log could pick it up: headers and a request line too long for aiohttp's parser (whose
error quotes the line's first 100 bytes), malformed request lines, bad and non-JSON bodies,
the key as a method and in a query string. A channel's test message makes the alerter fail
to reach Telegram. Then every line all three processes wrote, stdout and stderr, is read: each
is one JSON object with the base fields, and none holds the key, the password or the token.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest
from support import ApiClient, MonitorProcess, ProcessFactory, free_port

pytestmark = pytest.mark.e2e

PASSWORD = "Log-Scan-Pw-5e1f0c9a"
BOT = "987654321:" + "AAF-logscan_Token_0123456789abcdefg"[:35]
BASE_FIELDS = ("timestamp", "level", "process", "logger", "event")
LEVELS = {"debug", "info", "warning", "error", "critical"}
BODY_LIMIT = 64 * 1024


def with_password(dsn: str) -> tuple[str, str]:
    """The DSN with a password in it (the local test server trusts loopback, so any will do),
    and that password; a DSN that has one already keeps it, and it is the secret to look for."""
    parts = urlsplit(dsn)
    if parts.password:
        return dsn, parts.password
    user = parts.username or "postgres"
    netloc = f"{user}:{PASSWORD}@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc)), PASSWORD


async def exchange(port: int, raw: bytes, timeout: float = 10.0) -> tuple[int, dict[str, str], bytes]:  # noqa: ASYNC109
    """Send raw bytes to the api, read until it closes: status, headers (lower-case), body."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(raw)
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), timeout)
    finally:
        writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status_line.split(" ")[1]), headers, body


def request(method: str, target: str, key: str, *headers: str, body: bytes = b"") -> bytes:
    lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1", f"Authorization: Bearer {key}", *headers]
    if body:
        lines.append(f"Content-Length: {len(body)}")
    lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


# (scenario, raw request with {key} in it) that aiohttp's parser refuses before the app sees it
REFUSED: list[tuple[str, Callable[[str], bytes]]] = [
    ("Authorization over 8,190 bytes, the key first",
     lambda key: request("GET", "/api/v1/monitors", key + "A" * 9000)),
    ("another header over 8,190 bytes holding the key",
     lambda key: request("GET", "/api/v1/monitors", key, f"X-Forwarded-Key: {key}{'B' * 9000}")),
    ("a request line over 8,190 bytes, the key in the query",
     lambda key: request("GET", f"/api/v1/monitors?key={key}{'C' * 9000}", key)),
    ("a malformed request line holding the key",
     lambda key: f"GET /api/v1/monitors {key} HTTP/1.1\r\nHost: x\r\n\r\n".encode()),
    ("not HTTP at all", lambda key: f"\x16\x03\x01 {key}\r\n\r\n".encode()),
    ("the key as the method", lambda key: request(key, "/api/v1/monitors", key)),
    ("a header name with a space, the key after it",
     lambda key: request("GET", "/api/v1/monitors", key, f"X Key: {key}")),
]  # fmt: skip


async def test_no_log_line_holds_a_secret_and_every_line_is_json(
    db: asyncpg.Connection, procs: ProcessFactory, api_client: Callable[[str], ApiClient], api_key: str
) -> None:
    dsn, password = with_password(procs.base_env["MONITOR_DATABASE_URL"])
    procs.base_env["MONITOR_DATABASE_URL"] = dsn
    bot_secret = BOT.split(":", 1)[1]
    key_secret = api_key.split("_", 2)[2]
    secrets = {"API key": key_secret, "database password": password, "bot token": bot_secret}

    api_proc = await procs.start("api")
    scheduler = await procs.start("scheduler")
    alerter = await procs.start(
        "alerter",
        env={
            "MONITOR_TELEGRAM_BOT_TOKEN": BOT,
            "MONITOR_TELEGRAM_API_BASE": f"http://127.0.0.1:{free_port()}",
        },
    )
    port = api_proc.port
    assert port is not None
    api = api_client(api_proc.base_url)

    # -- what aiohttp's parser refuses: a JSON error with a request id, one log line, no traceback
    refused_ids = []
    for scenario, make in REFUSED:
        status, headers, body = await exchange(port, make(api_key))
        assert status == 400, (scenario, status, body[:300])
        assert headers["content-type"].startswith("application/json"), (scenario, headers)
        assert json.loads(body)["error"]["code"] == "bad_request", (scenario, body)
        assert key_secret.encode() not in body, scenario
        refused_ids.append(headers["x-request-id"])

    # The probe ports of the scheduler and the alerter are aiohttp servers too.
    for proc in (scheduler, alerter):
        assert proc.port is not None
        status, _, _ = await exchange(proc.port, request("GET", "/metrics", api_key + "D" * 9000))
        assert status == 400, proc.name
        await proc.wait_log("http.request_refused", refused="LineTooLong")

    # -- what the app refuses, with the key in the header, the query or the body
    bad_json = await api.post("/api/v1/monitors", data=b'{"name": "x", ')
    assert bad_json.status == 400 and bad_json.json["error"]["code"] == "invalid_json", bad_json
    as_text = await api.post(
        "/api/v1/monitors", data=json.dumps({"name": api_key}), headers={"Content-Type": "text/plain"}
    )
    assert as_text.status == 415 and as_text.json["error"]["code"] == "unsupported_media_type", as_text
    assert as_text.headers.get("X-Request-ID"), as_text.headers
    status, headers, body = await exchange(
        port, request("POST", "/api/v1/monitors", api_key, body=json.dumps({"name": api_key}).encode())
    )
    assert status == 415 and json.loads(body)["error"]["code"] == "unsupported_media_type", body
    not_here = await api.post("/healthz", data="x", headers={"Content-Type": "text/plain"})
    assert not_here.status == 405, "an unknown method stays a 405, whatever the body"
    assert (await api.get(f"/api/v1/monitors?key={api_key}&token={BOT}")).status in (200, 400)
    assert (await api.get("/api/v1/monitors", headers={"Authorization": f"Bearer {api_key}x"})).status == 401

    # -- a body of exactly 64 KiB is taken; one byte more is 413
    monitor = json.dumps({"name": "exactly 64 KiB", "url": "http://127.0.0.1:9/", "interval_seconds": 60})
    exact = (monitor + " " * (BODY_LIMIT - len(monitor))).encode()
    assert len(exact) == BODY_LIMIT
    created = await api.post("/api/v1/monitors", data=exact)
    assert created.status == 201, created
    over = await api.post("/api/v1/monitors", data=exact + b" ")
    assert over.status == 413 and over.json["error"]["code"] == "too_large", over

    # -- the access line of a request: its id, route (not the URL), status and duration
    mine = await api.get(f"/api/v1/monitors/{created.json['id']}", headers={"X-Request-ID": "logscan-1"})
    assert mine.status == 200, mine
    line = await api_proc.wait_log("api.request", request_id="logscan-1")
    assert line["route"] == "/api/v1/monitors/{id}" and line["method"] == "GET", line
    assert line["path"] == f"/api/v1/monitors/{created.json['id']}" and line["status"] == 200, line
    assert isinstance(line["duration_ms"], float) and line["duration_ms"] >= 0, line
    # Every process that judges targets names the operator's exceptions (docs/security.md).
    for proc in (api_proc, scheduler, alerter):
        assert proc.events("ssrf.allow_cidrs", networks=["127.0.0.0/8"]), proc.name
    for request_id in refused_ids:
        refusal = await api_proc.wait_log("api.request", request_id=request_id)
        assert refusal["status"] == 400 and refusal["refused"] and refusal["route"] is None, refusal

    # -- the alerter fails to reach the Bot API (its URL holds the token)
    channel = await api.post(
        "/api/v1/channels", json={"kind": "telegram", "name": "ops", "config": {"chat_id": "-1001"}}
    )
    assert channel.status == 201, channel
    assert (await api.post(f"/api/v1/channels/{channel.json['id']}/test")).status == 202
    await alerter.wait_log("alert.send_failed", timeout=30)

    # -- every line of every process, stopped cleanly, stdout and stderr alike
    for proc in reversed(procs.processes):
        assert await proc.terminate() == 0, proc.tail()
    problems: list[str] = []
    for proc in (api_proc, scheduler, alerter):
        problems.extend(scan(proc, secrets))
    assert not problems, "\n".join(problems[:20])
    for request_id in refused_ids:
        lines = [x for x in api_proc.log_lines() if request_id in json.dumps(x)]
        assert len(lines) == 1, lines


def scan(proc: MonitorProcess, secrets: dict[str, str]) -> list[str]:
    """What is wrong with the lines of one process's log (stdout and stderr together)."""
    problems = []
    raw_lines = proc.log_text().splitlines()
    assert raw_lines, f"{proc.name} wrote nothing"
    for number, raw in enumerate(raw_lines, 1):
        where = f"{proc.log_path.name}:{number}"
        for what, secret in secrets.items():
            if secret in raw:
                problems.append(f"{where}: the {what}: {raw[:300]}")
        try:
            line: Any = json.loads(raw)
        except ValueError:
            problems.append(f"{where}: not JSON: {raw[:300]}")
            continue
        if not isinstance(line, dict):
            problems.append(f"{where}: not an object: {raw[:300]}")
            continue
        missing = [f for f in BASE_FIELDS if not isinstance(line.get(f), str) or not line[f]]
        if missing:
            problems.append(f"{where}: without {missing}: {raw[:300]}")
        elif line["process"] != proc.name or line["level"] not in LEVELS:
            problems.append(f"{where}: process or level wrong: {raw[:300]}")
        if "exception" in line or "Traceback" in raw:
            problems.append(f"{where}: a traceback: {raw[:300]}")
    return problems
