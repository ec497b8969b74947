"""Trying it on your own machine: a refused local target says which setting allows it, and
``localhost`` is reachable once its loopback address is allowed.

A newcomer's first monitor is often ``http://127.0.0.1:9000/``. The API refuses it (loopback
is denied by default) and its answer names ``MONITOR_ALLOW_CIDRS`` with the entry that would
admit the address. With ``MONITOR_ALLOW_CIDRS=127.0.0.1/32``, ``localhost`` follows the
system's resolver (this machine's /etc/hosts maps it to 127.0.0.1 only) and a name whose every
answer is loopback is dialled on its allowed answers: the API creates such monitors, of any
type that dials a host, and a real scheduler checks them against a local server. A listener on
::1 (denied) on the same port must never be reached, and a name with a private or public
answer next to loopback stays refused whole.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import asyncpg
import pytest
from support import ApiClient, ProcessFactory, wait_for
from support.canary import Origin, check_counts, checks_of
from support.dns import DNSServer, dns_fixture  # noqa: F401  (the dns fixture)

pytestmark = pytest.mark.timeout(90)

PUBLIC_V4 = "93.184.215.14"  # only ever DNS data next to a denied answer: never dialled
HINT = "the operator can allow it with MONITOR_ALLOW_CIDRS="


def http(url: str) -> dict[str, object]:
    return {"name": "local", "url": url, "interval_seconds": 1, "timeout_seconds": 1}


def tcp(host: str, port: int) -> dict[str, object]:
    return {"name": "local tcp", "type": "tcp", "host": host, "port": port, "interval_seconds": 1}


async def refused(api: ApiClient, body: dict[str, object], path: str = "/api/v1/monitors") -> tuple[str, str]:
    response = await api.post(path, json=body)
    assert (response.status, response.json.get("error", {}).get("code")) == (400, "target_blocked"), response
    return response.json["error"]["field"], response.json["error"]["message"]


async def test_a_refused_local_target_names_the_setting_that_allows_it(
    db: asyncpg.Connection, procs: ProcessFactory, dns: DNSServer, api_client: Callable[[str], ApiClient]
) -> None:
    dns.zone.update(
        {"private.test": [("A", "10.0.0.5")], "mixed.test": [("A", PUBLIC_V4), ("A", "10.0.0.5")]}
    )
    # The operator's default: no allow-list at all.
    proc = await procs.start("api", env={"MONITOR_DNS_SERVERS": dns.nameserver, "MONITOR_ALLOW_CIDRS": ""})
    api = api_client(proc.base_url)
    loopback = "(loopback 127.0.0.0/8)"
    private = "resolves to 10.0.0.5 (private-use 10.0.0.0/8)"
    cases = [
        (http("http://127.0.0.1:9000/"), "url", f"url: 127.0.0.1 {loopback}; {HINT}127.0.0.1/32"),
        (http("http://localhost:9000/"), "url", f"url: localhost resolves to 127.0.0.1 {loopback}; {HINT}"),
        (http("http://[::1]:9000/"), "url", f"url: ::1 (loopback ::1/128); {HINT}::1/128"),
        (http("http://[::ffff:127.0.0.1]:9000/"), "url", f"{HINT}127.0.0.1/32"),  # what is dialled
        (http("http://private.test/"), "url", f"url: private.test {private}; {HINT}10.0.0.5/32"),
        (http("http://mixed.test/"), "url", f"url: mixed.test {private}; {HINT}10.0.0.5/32"),
        (tcp("127.0.0.1", 9000), "host", f"host: 127.0.0.1 {loopback}; {HINT}127.0.0.1/32"),
    ]  # fmt: skip
    wrong = []
    for body, field, message in cases:
        got = await refused(api, body)
        if got[0] != field or message not in got[1]:
            wrong.append(f"{body}: want {field} {message!r}, got {got}")
    assert not wrong, "\n".join(wrong)
    # No allow-list entry admits an address with a zone id: the answer does not offer one.
    field, message = await refused(api, http("http://[fe80::1%25eth0]/"))
    assert field == "url" and "zone id" in message and "MONITOR_ALLOW_CIDRS" not in message, message
    assert await db.fetchval("SELECT count(*) FROM monitors") == 0


async def test_localhost_is_checked_once_its_loopback_address_is_allowed(
    db: asyncpg.Connection, procs: ProcessFactory, dns: DNSServer, api_client: Callable[[str], ApiClient]
) -> None:
    origin = await Origin(host="127.0.0.1").start()
    assert origin.port is not None
    port = origin.port
    on_v6: list[str] = []  # ::1 is not allowed: nothing may connect there

    async def record(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        on_v6.append(str(writer.get_extra_info("peername")))
        writer.close()

    v6 = await asyncio.start_server(record, "::1", port)
    dns.zone.update(
        {
            "dev.test": [("A", "127.0.0.1"), ("AAAA", "::1")],  # every answer loopback
            "v6only.test": [("AAAA", "::1")],
            # A public answer next to loopback: not this machine only, so ::1 refuses it whole.
            "mixed.test": [("A", "127.0.0.1"), ("AAAA", "::1"), ("A", PUBLIC_V4)],
            "mixed-private.test": [("A", "127.0.0.1"), ("A", "10.0.0.5")],
        }
    )
    env = {"MONITOR_DNS_SERVERS": dns.nameserver, "MONITOR_ALLOW_CIDRS": "127.0.0.1/32"}
    try:
        proc = await procs.start("api", env=env)
        api = api_client(proc.base_url)
        made = [
            await api.create_monitor(**http(f"http://localhost:{port}/")),
            await api.create_monitor(**http(f"http://dev.test:{port}/dev")),
            await api.create_monitor(**tcp("localhost", port)),
        ]
        edited = await api.create_monitor(**http(f"http://127.0.0.1:{port}/before"))
        changed = await api.patch(
            f"/api/v1/monitors/{edited['id']}", json={"url": f"http://localhost:{port}/edited"}
        )
        assert changed.status == 200, changed
        made.append(changed.json)
        # Still refused: ::1 alone, and a loopback answer next to a public or private one.
        assert (await refused(api, http(f"http://[::1]:{port}/")))[1].endswith(
            f"{HINT}::1/128 (docs/security.md)"
        )
        for name, denied in (
            ("v6only.test", "::1"),
            ("mixed.test", "::1"),
            ("mixed-private.test", "10.0.0.5"),
        ):
            _field, message = await refused(api, http(f"http://{name}:{port}/"))
            assert f"{name} resolves to {denied} " in message, message
        ids = [int(m["id"]) for m in made]
        assert await db.fetchval("SELECT count(*) FROM monitors") == len(ids)

        await procs.start("scheduler", env={**env, "MONITOR_SCHEDULER_HTTP_PORT": "0"})

        async def checked() -> bool:
            return min((await check_counts(db, ids)).values()) >= 2

        await wait_for(checked, timeout=30, message="two checks of every local monitor")
        for monitor_id in ids:
            rows = await checks_of(db, monitor_id)
            assert all(r["ok"] and r["error"] is None for r in rows), [dict(r) for r in rows]
        hosts = {(r.host, r.path) for r in origin.requests}
        assert {
            (f"localhost:{port}", "/"),
            (f"dev.test:{port}", "/dev"),
            (f"localhost:{port}", "/edited"),
        } <= hosts
        assert {r.local for r in origin.requests} == {"127.0.0.1"}
        assert on_v6 == [], f"::1 was dialled though only 127.0.0.1/32 is allowed: {on_v6}"
    finally:
        v6.close()
        await v6.wait_closed()
        await origin.close()
