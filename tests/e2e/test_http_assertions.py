"""Assertions end to end, with real processes: what "up" means, said per monitor, and its cause.

Three monitors check a local target every second, each with its own notion of up and its own
credential: a keyword on a page (basic auth), a JSON path on a status document (bearer token),
and a response-time bound (an API key header). The target's answers change so that each
assertion fails in turn; every failure is stored with its cause, reaches the fake Telegram
exactly once with that cause, and the recovery follows. Throughout, the credentials reach the
target, yet no API answer and no log line of any process holds one whole.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Callable
from typing import Any

import asyncpg
import pytest
from support import ApiClient, FakeTelegram, ProcessFactory, TargetServer, wait_for

pytestmark = pytest.mark.e2e

DEADLINE = 30.0
PASSWORD = "pa55-Word-e2e-7f3a91c4d2"
TOKEN = "tok-e2e-5b8e0c2f9a714d36"
API_KEY = "key-e2e-c0ffee1234567890"
SECRETS = [PASSWORD, TOKEN, API_KEY, base64.b64encode(f"shop:{PASSWORD}".encode()).decode()]

# (path, chat, monitor fields, the failing answer, the cause the alert must carry)
CASES: dict[str, dict[str, Any]] = {
    "keyword": {
        "path": "/home",
        "chat": "-1001000000001",
        "fields": {
            "assertions": [{"type": "keyword", "keyword": "Welcome"}],
            "auth": {"type": "basic", "username": "shop", "password": PASSWORD},
        },
        "good": {"body": "<h1>Welcome to the shop</h1>"},
        "bad": {"body": "<h1>Down for maintenance</h1>"},
        "cause": 'keyword "Welcome" not found in the body',
        "sent": ("authorization", "Basic " + base64.b64encode(f"shop:{PASSWORD}".encode()).decode()),
    },
    "json": {
        "path": "/status.json",
        "chat": "-1001000000002",
        "fields": {
            "assertions": [{"type": "json", "path": "$.status", "op": "==", "value": "ok"}],
            "auth": {"type": "bearer", "token": TOKEN},
        },
        "good": {"body": json.dumps({"status": "ok"}), "content_type": "application/json"},
        "bad": {"body": json.dumps({"status": "degraded"}), "content_type": "application/json"},
        "cause": '$.status is "degraded", expected "ok"',
        "sent": ("authorization", f"Bearer {TOKEN}"),
    },
    "response time": {
        "path": "/slow",
        "chat": "-1001000000003",
        "fields": {
            "assertions": [{"type": "response_time", "below_ms": 400}],
            "headers": {"X-Api-Key": API_KEY, "X-Env": "e2e"},
        },
        "good": {"delay": 0.0},
        "bad": {"delay": 0.6},  # over the 400 ms bound, well within the 1 s timeout
        "cause": "response time ",
        "sent": ("x-api-key", API_KEY),
    },
}


async def test_assertions_fail_with_their_cause_alert_once_and_recover_without_leaking_secrets(
    db: asyncpg.Connection,
    target: TargetServer,
    fake_telegram: FakeTelegram,
    procs: ProcessFactory,
    api_client: Callable[[str], ApiClient],
) -> None:
    api_proc = await procs.start("api")
    await procs.start("scheduler")
    await procs.start("alerter", env=fake_telegram.env())
    api = api_client(api_proc.base_url)

    # A refused request that carries a secret does not echo it.
    refused = await api.post(
        "/api/v1/monitors",
        json={
            "name": "bad",
            "url": target.url("/"),
            "method": "FETCH",
            "auth": {"type": "bearer", "token": TOKEN},
        },
    )
    assert refused.status == 422 and refused.json["error"]["field"] == "method", refused
    assert TOKEN not in refused.text

    ids: dict[str, int] = {}
    for name, case in CASES.items():
        target.set(path=case["path"], **case["good"])
        monitor = await api.create_monitor(
            name=f"e2e {name}",
            url=target.url(case["path"]),
            interval_seconds=1,
            timeout_seconds=1,
            confirm_after=2,
            telegram_chat_id=case["chat"],
            **case["fields"],
        )
        ids[name] = monitor["id"]

    async def all_status(status: str) -> bool:
        return all([(await api.monitor(i))["status"] == status for i in ids.values()])

    await wait_for(lambda: all_status("up"), timeout=DEADLINE, message="every monitor up")
    for name, case in CASES.items():
        header, value = case["sent"]
        seen = [r.headers for r in target.for_path(case["path"])]
        assert seen and all({k.lower(): v for k, v in h.items()}.get(header) == value for h in seen), (
            f"{name}: the credential did not reach the target"
        )

    # -- each assertion fails: one down alert each, with the cause --------------------------
    for case in CASES.values():
        target.set(path=case["path"], **case["bad"])
    for case in CASES.values():
        await fake_telegram.wait_messages(1, chat_id=case["chat"], timeout=DEADLINE)
    await wait_for(lambda: all_status("down"), timeout=DEADLINE, message="every monitor down")
    for name, case in CASES.items():
        down = html.unescape(fake_telegram.messages_to(case["chat"])[0].text or "")
        assert "DOWN" in down and case["cause"] in down, (name, down)
        rows = await db.fetch(
            "SELECT ok, error, details FROM checks WHERE monitor_id = $1 AND NOT ok ORDER BY time", ids[name]
        )
        assert rows and all(case["cause"] in (r["error"] or "") for r in rows), (name, rows)
        outcomes = rows[-1]["details"]["assertions"]
        assert [o["ok"] for o in outcomes] == [False], (name, outcomes)

    # -- and recovers: one up alert each ------------------------------------------------------
    for case in CASES.values():
        target.set(path=case["path"], **case["good"])
    for case in CASES.values():
        await fake_telegram.wait_messages(2, chat_id=case["chat"], timeout=DEADLINE)
    await wait_for(lambda: all_status("up"), timeout=DEADLINE, message="every monitor up again")
    for name, case in CASES.items():
        texts = [m.text or "" for m in fake_telegram.messages_to(case["chat"])]
        assert len(texts) == 2 and "DOWN" in texts[0] and "UP" in texts[1], (name, texts)

    # -- secrets: never whole in an API answer or a log line -----------------------------------
    listed = await api.get("/api/v1/monitors")
    answers = [listed.text] + [(await api.get(f"/api/v1/monitors/{i}")).text for i in ids.values()]
    for text in answers:
        for secret in SECRETS:
            assert secret not in text, f"a secret in an API answer: {text[:300]}"
    keyword = await api.monitor(ids["keyword"])
    assert keyword["auth"]["username"] == "shop" and keyword["auth"]["password"] != PASSWORD
    assert (await api.monitor(ids["response time"]))["headers"]["X-Env"] == "e2e"
    for proc in reversed(procs.processes):
        if proc.running:
            assert await proc.terminate() == 0, proc.tail()
        log = proc.log_text()
        for secret in SECRETS:
            assert secret not in log, f"a secret in the {proc.name} log"
    assert procs.tracebacks() == {}
