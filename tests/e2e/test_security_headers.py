"""Security headers end to end (issue 14, point 6), with real processes: an https site graded
A+ loses its Content-Security-Policy in a deploy, falls to C, and its monitor (min_grade B)
goes DOWN with the grade and the missing header as the cause; the header comes back, and the
monitor is UP. Every check, up or down, carries its findings, which ``GET .../checks`` shows.

The site is a local HTTPS server whose leaf comes from a throwaway CA the scheduler trusts
(``MONITOR_CA_FILE``); it answers with the headers the test sets, as a deploy would change them.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import asyncpg
import pytest
from support import ApiClient, FakeTelegram, ProcessFactory, wait_for
from support.certs import LocalCA, local_ca_fixture, scheduler_env  # noqa: F401  (the local_ca fixture)
from support.headed import Fields, HeadedHttps

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

DEADLINE = 30.0
CHAT = "-1001000001406"
CAUSE = "security headers grade C is below B: missing Content-Security-Policy"
STRONG: Fields = [
    ("Strict-Transport-Security", "max-age=31536000; includeSubDomains"),
    ("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'"),
    ("X-Frame-Options", "DENY"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "strict-origin-when-cross-origin"),
    ("Permissions-Policy", "geolocation=(), camera=()"),
]
# The deploy that drops the CSP: frame protection still holds through X-Frame-Options.
NO_CSP: Fields = [(n, v) for n, v in STRONG if n != "Content-Security-Policy"]


def report(check: dict[str, Any]) -> dict[str, Any]:
    [outcome] = check["details"]["assertions"]
    assert outcome["assertion"] == "security headers grade B or better"
    return dict(outcome["security_headers"])


async def test_a_site_that_loses_its_csp_goes_down_naming_the_header_and_recovers(
    db: asyncpg.Connection,
    local_ca: LocalCA,
    fake_telegram: FakeTelegram,
    procs: ProcessFactory,
    api_client: Callable[[str], ApiClient],
) -> None:
    site = await HeadedHttps.from_ca(local_ca, STRONG).start()
    try:
        api_proc = await procs.start("api")
        await procs.start("scheduler", env=scheduler_env(local_ca))
        await procs.start("alerter", env=fake_telegram.env())
        api = api_client(api_proc.base_url)

        monitor = await api.create_monitor(
            name="shop headers",
            url=site.url("/"),
            interval_seconds=1,
            timeout_seconds=1,
            confirm_after=2,
            telegram_chat_id=CHAT,
            assertions=[{"type": "security_headers", "min_grade": "B"}],
        )
        mid = monitor["id"]

        async def status() -> str:
            return str((await api.monitor(mid))["status"])

        async def checks() -> list[dict[str, Any]]:
            response = await api.get(f"/api/v1/monitors/{mid}/checks")
            assert response.status == 200, response
            return list(response.json["items"])  # newest first

        await wait_for(lambda: _is(status, "up"), timeout=DEADLINE, message="monitor up")
        first = (await checks())[0]
        assert (first["ok"], first["error"]) == (True, None)
        assert (report(first)["grade"], report(first)["score"]) == ("A+", 100)
        assert "certificate" in first["details"]

        # -- the deploy drops the CSP: C, below B -> DOWN, once, with the cause ----------------
        site.fields = NO_CSP
        await fake_telegram.wait_messages(1, chat_id=CHAT, timeout=DEADLINE)
        down = html.unescape(fake_telegram.messages_to(CHAT)[0].text or "")
        assert "DOWN" in down and CAUSE in down, down
        assert await status() == "down"
        failed = [c for c in await checks() if not c["ok"]]
        assert len(failed) >= 2 and all(c["error"] == CAUSE for c in failed), failed
        graded = report(failed[0])
        assert (graded["grade"], graded["score"]) == ("C", 70)
        by_name = {f["name"]: f for f in graded["findings"]}
        assert by_name["Content-Security-Policy"] == {
            "name": "Content-Security-Policy",
            "status": "missing",
            "points": 0,
            "max_points": 30,
            "message": "missing Content-Security-Policy",
        }
        assert by_name["Frame protection"]["message"] == "X-Frame-Options DENY"
        stored = await db.fetchval(
            "SELECT count(*) FROM checks WHERE monitor_id = $1 AND NOT ok AND error = $2", mid, CAUSE
        )
        assert stored == len(failed)

        # -- the CSP is back: UP ----------------------------------------------------------------
        site.fields = STRONG
        await fake_telegram.wait_messages(2, chat_id=CHAT, timeout=DEADLINE)
        texts = [m.text or "" for m in fake_telegram.messages_to(CHAT)]
        assert len(texts) == 2 and "UP" in texts[1], texts
        await wait_for(lambda: _is(status, "up"), timeout=DEADLINE, message="monitor up again")
        latest = (await checks())[0]
        assert latest["ok"] and report(latest)["grade"] == "A+"
    finally:
        await site.close()
    assert procs.tracebacks() == {}


async def _is(status: Callable[[], Any], wanted: str) -> bool:
    return bool(await status() == wanted)
