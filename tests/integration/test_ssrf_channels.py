"""Channels are vetted like monitors: a channel whose URL or host the SSRF policy denies is
refused when it is made and when it is changed, and every process that judges targets says at
start which allow-list it runs with.

A real ``monitor api`` process resolves names through the fake DNS server and allows only
127.0.0.2/32. One channel of each kind that takes a URL or a host (webhook, slack, discord,
ntfy, pagerduty: ``url``; email: the SMTP ``host``; telegram sends to the operator's Bot API,
nothing of the user's) is tried against loopback, a private address, the cloud metadata
address, a name that resolves to a private address, and a name with a public answer next to a
private one: each is 400 ``target_blocked`` with ``field`` naming its config field, on POST
and on PATCH, and nothing is written. Vetting never connects (a tripwire watches the api's
sockets), and the refusal never quotes a URL's path (a Slack or Discord URL is the secret).
The alerter judges again at each send: tests/e2e/test_email_channel.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import asyncpg
import pytest
from support import ApiClient, ProcessFactory
from support.canary import ORIGIN_ALLOW, Tripwire
from support.dns import DNSServer, dns_fixture  # noqa: F401  (the dns fixture)

pytestmark = pytest.mark.timeout(90)

PUBLIC_V4 = "93.184.215.14"  # only ever DNS data next to a denied answer: never dialled
SECRET_PATH = "T0SECRET/B0SECRET/tokenpart"  # must never appear in an answer
ALLOW_HINT = "the operator can allow it with MONITOR_ALLOW_CIDRS="


def config(kind: str, host: str) -> dict[str, Any]:
    """A valid config of ``kind`` that sends to ``host``."""
    netloc = f"[{host}]" if ":" in host else host
    if kind == "email":
        return {"host": host, "port": 2525, "from_address": "a@example.com", "to": ["ops@example.com"]}
    url = {
        "webhook": f"http://{netloc}/hooks/{SECRET_PATH}",
        "slack": f"http://{netloc}/services/{SECRET_PATH}",
        "discord": f"http://{netloc}/api/webhooks/1/{SECRET_PATH.replace('/', '-')}",
        "ntfy": f"http://{netloc}/alerts-{SECRET_PATH.replace('/', '-')}",
        "pagerduty": f"http://{netloc}/v2/enqueue",
    }[kind]
    extra = {"routing_key": "r" * 32} if kind == "pagerduty" else {}
    return {"url": url, **extra}


KINDS = {"webhook": "config.url", "slack": "config.url", "discord": "config.url", "ntfy": "config.url",
         "pagerduty": "config.url", "email": "config.host"}  # fmt: skip
PRIVATE = "(private-use 10.0.0.0/8)"
# (host, text the refusal holds, the allow-list entry it names)
BLOCKED = [
    ("127.0.0.1", "127.0.0.1 (loopback 127.0.0.0/8)", "127.0.0.1/32"),
    ("10.0.0.1", f"10.0.0.1 {PRIVATE}", "10.0.0.1/32"),
    ("169.254.169.254", "169.254.169.254 (link-local 169.254.0.0/16)", "169.254.169.254/32"),
    ("::1", "::1 (loopback ::1/128)", "::1/128"),
    ("private.test", f"private.test resolves to 10.0.0.5 {PRIVATE}", "10.0.0.5/32"),
    ("mixed.test", f"mixed.test resolves to 10.0.0.1 {PRIVATE}", "10.0.0.1/32"),
]
ZONE = {
    "allowed.test": [("A", "127.0.0.2")],
    "private.test": [("A", "10.0.0.5")],
    "mixed.test": [("A", PUBLIC_V4), ("A", "10.0.0.1")],
}


def wrong_refusal(response: Any, field: str, reason: str, entry: str) -> str | None:
    error = response.json.get("error", {}) if response.is_json else {}
    got = (response.status, error.get("code"), error.get("field"))
    message = str(error.get("message", ""))
    if got != (400, "target_blocked", field) or not message.startswith(f"{field}: {reason}"):
        return f"want 400 target_blocked {field} {reason!r}, got {response!r}"
    if f"{ALLOW_HINT}{entry}" not in message or "SECRET" in response.text:
        return f"want the hint {entry} and no URL path, got {message!r}"
    return None


async def test_channels_to_denied_targets_are_refused_when_made_and_when_changed(
    db: asyncpg.Connection, procs: ProcessFactory, dns: DNSServer, api_client: Callable[[str], ApiClient]
) -> None:
    dns.zone.update(ZONE)
    proc = await procs.start(
        "api", env={"MONITOR_DNS_SERVERS": dns.nameserver, "MONITOR_ALLOW_CIDRS": ORIGIN_ALLOW}
    )
    api = api_client(proc.base_url)
    wrong: list[str] = []
    with Tripwire(proc.pid) as wire:
        for kind, field in KINDS.items():
            for host, reason, entry in BLOCKED:
                body = {"kind": kind, "name": f"{kind} {host}", "config": config(kind, host)}
                problem = wrong_refusal(await api.post("/api/v1/channels", json=body), field, reason, entry)
                if problem:
                    wrong.append(f"POST {kind} {host}: {problem}")
        assert not wrong, "refusals wrong:\n" + "\n".join(wrong)
        assert await db.fetchval("SELECT count(*) FROM channels") == 0

        # Allowed: by name and by literal. Each is then changed to every denied target.
        made: dict[str, int] = {}  # by kind: the one made by literal
        for kind in KINDS:
            for host in ("allowed.test", "127.0.0.2"):
                body = {"kind": kind, "name": f"{kind} {host}", "config": config(kind, host)}
                response = await api.post("/api/v1/channels", json=body)
                assert response.status == 201, response
                made[kind] = response.json["id"]
        before = {r["id"]: dict(r) for r in await db.fetch("SELECT * FROM channels")}
        for kind, field in KINDS.items():
            for host, reason, entry in BLOCKED:
                path = f"/api/v1/channels/{made[kind]}"
                response = await api.patch(path, json={"name": "changed", "config": config(kind, host)})
                problem = wrong_refusal(response, field, reason, entry)
                if problem:
                    wrong.append(f"PATCH {kind} {host}: {problem}")
        assert not wrong, "refusals wrong:\n" + "\n".join(wrong)
        after = {r["id"]: dict(r) for r in await db.fetch("SELECT * FROM channels")}
        assert after == before, "a refused change wrote something"

        # A change to an allowed target goes through, and a rename alone is not vetted again.
        for kind in KINDS:
            path = f"/api/v1/channels/{made[kind]}"
            changed = await api.patch(path, json={"config": config(kind, "allowed.test")})
            assert changed.status == 200, changed
            assert (await api.patch(path, json={"name": "renamed"})).status == 200
    assert not wire.hits, f"the api opened sockets outside loopback: {wire.describe()}"
    asked = {name for name, qtype in dns.queries if qtype == "A"}
    assert {"allowed.test", "private.test", "mixed.test"} <= asked


async def test_each_process_logs_its_allow_list_at_start(procs: ProcessFactory) -> None:
    """api, scheduler and alerter all judge targets (monitors', channels'): each says which
    exceptions it runs with, as it reads them, and says so when there are none."""
    names = ("api", "scheduler", "alerter")
    given = {"MONITOR_ALLOW_CIDRS": "127.0.0.2/32, 10.9.8.7/16,::ffff:10.1.0.0/112"}
    started = await asyncio.gather(*(procs.start(name, env=given) for name in names))
    for proc in started:
        lines = proc.events("ssrf.allow_cidrs")
        assert len(lines) == 1, (proc.name, lines)
        assert lines[0]["networks"] == ["127.0.0.2/32", "10.9.0.0/16", "10.1.0.0/16"], lines
        assert lines[0]["level"] == "warning", lines
    await asyncio.gather(*(proc.terminate() for proc in started))

    unset = {"MONITOR_ALLOW_CIDRS": None}  # the operator's default
    started = await asyncio.gather(*(procs.start(name, env=unset) for name in names))
    for proc in started:
        lines = proc.events("ssrf.allow_cidrs")
        assert [(line["level"], line["networks"]) for line in lines] == [("info", [])], (proc.name, lines)
        assert "empty" in lines[0]["note"], lines
