"""The API's SSRF layer: a denied target is refused when a monitor is created or edited.

A real ``monitor api`` process resolves names through the fake DNS server and allows only
127.0.0.2/32. Refusals are 400 ``target_blocked`` with ``field == "url"`` and the reason in the
message (a malformed numeric host is a 422 validation error instead); allowed targets, by name
or by literal, are created. Vetting never connects: the canary sees nothing, nor does the
tripwire on the api's sockets, and no refused monitor is stored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import asyncpg
import pytest
from support import ApiClient, ProcessFactory
from support.canary import ORIGIN_ALLOW, Stage, Tripwire, stage_fixture  # noqa: F401  (the stage fixture)
from support.dns import DNSServer, dns_fixture  # noqa: F401  (the dns fixture)

pytestmark = pytest.mark.timeout(60)


@dataclass(frozen=True)
class Refusal:
    url: str  # ``{port}`` is the stage's port
    status: int
    code: str
    message: str  # must appear in the error message


PRIVATE = "private-use 10.0.0.0/8"
LOOPBACK = "loopback 127.0.0.0/8"

REFUSED = [
    Refusal("http://private.test:{port}/", 400, "target_blocked", f"resolves to 10.0.0.5 ({PRIVATE})"),
    Refusal("http://loopback.test:{port}/", 400, "target_blocked", f"resolves to 127.0.0.1 ({LOOPBACK})"),
    Refusal("http://mixed.test:{port}/", 400, "target_blocked", f"resolves to 10.0.0.5 ({PRIVATE})"),
    Refusal("http://www.cname.test:{port}/", 400, "target_blocked", f"resolves to 10.0.0.5 ({PRIVATE})"),
    Refusal(
        "http://metadata.google.internal/",
        400,
        "target_blocked",
        "resolves to 169.254.169.254 (link-local 169.254.0.0/16)",
    ),
    Refusal("http://127.0.0.1:{port}/", 400, "target_blocked", f"url: 127.0.0.1 ({LOOPBACK})"),
    Refusal("http://[::1]:{port}/", 400, "target_blocked", "url: ::1 (loopback ::1/128)"),
    Refusal(
        "http://[::ffff:127.0.0.1]:{port}/",
        400,
        "target_blocked",
        f"url: ::ffff:127.0.0.1 (IPv4-mapped 127.0.0.1, {LOOPBACK})",
    ),
    Refusal("http://localhost:{port}/", 400, "target_blocked", f"resolves to 127.0.0.1 ({LOOPBACK})"),
    Refusal(
        "http://169.254.169.254/latest/meta-data/",
        400,
        "target_blocked",
        "169.254.169.254 (link-local 169.254.0.0/16)",
    ),
    Refusal("http://[fd00:ec2::254]/", 400, "target_blocked", "fd00:ec2::254 (unique-local (ULA) fc00::/7)"),
    Refusal(
        "http://100.100.100.200/",
        400,
        "target_blocked",
        "100.100.100.200 (shared address space (CGNAT) 100.64.0.0/10)",
    ),
    Refusal("http://2130706433:{port}/", 422, "invalid", "non-canonical numeric host '2130706433'"),
    Refusal("http://0x7f.1:{port}/", 422, "invalid", "non-canonical numeric host '0x7f.1'"),
    Refusal("gopher://127.0.0.1:{port}/", 422, "invalid", "scheme 'gopher' not allowed"),
]


def body(url: str) -> dict[str, object]:
    return {"name": "ssrf", "url": url, "interval_seconds": 60, "timeout_seconds": 5}


async def test_api_refuses_denied_targets_with_the_reason_and_accepts_allowed_ones(
    db: asyncpg.Connection,
    procs: ProcessFactory,
    dns: DNSServer,
    stage: Stage,
    api_client: Callable[[str], ApiClient],
) -> None:
    dns.zone.update(
        {
            "allowed.test": [("A", "127.0.0.2")],
            "private.test": [("A", "10.0.0.5")],
            "loopback.test": [("A", "127.0.0.1")],
            "mixed.test": [("A", "127.0.0.2"), ("A", "10.0.0.5")],
            "all-loopback.test": [("A", "127.0.0.1"), ("A", "127.0.0.2")],
            "www.cname.test": [("CNAME", "db.internal.test")],
            "db.internal.test": [("A", "10.0.0.5")],
            "metadata.google.internal": [("A", "169.254.169.254")],
        }
    )
    proc = await procs.start(
        "api", env={"MONITOR_DNS_SERVERS": dns.nameserver, "MONITOR_ALLOW_CIDRS": ORIGIN_ALLOW}
    )
    api = api_client(proc.base_url)
    with Tripwire(proc.pid) as wire:
        wrong = []
        for case in REFUSED:
            url = case.url.format(port=stage.port)
            response = await api.post("/api/v1/monitors", json=body(url))
            error = response.json.get("error", {}) if response.is_json else {}
            got = (response.status, error.get("code"), error.get("field"))
            if got != (case.status, case.code, "url") or case.message not in error.get("message", ""):
                wrong.append(f"{url}: want {case.status} {case.code} {case.message!r}, got {response!r}")
        assert not wrong, "refusals wrong:\n" + "\n".join(wrong)

        by_name = await api.create_monitor(**body(f"http://allowed.test:{stage.port}/"))
        by_ip = await api.create_monitor(**body(f"http://127.0.0.2:{stage.port}/"))
        # Every answer loopback and one allowed: the name is this machine, allowed on that one.
        local = await api.create_monitor(**body(f"http://all-loopback.test:{stage.port}/"))
        # The same vetting guards an edit of the URL; the monitor keeps its old target.
        response = await api.patch(
            f"/api/v1/monitors/{by_name['id']}", json={"url": f"http://private.test:{stage.port}/"}
        )
        assert (response.status, response.json["error"]["field"]) == (400, "url"), response
        assert f"resolves to 10.0.0.5 ({PRIVATE})" in response.json["error"]["message"], response
        assert (await api.monitor(by_name["id"]))["url"] == f"http://allowed.test:{stage.port}/"

    stored = await db.fetch("SELECT id, url FROM monitors ORDER BY id")
    assert [(r["id"], r["url"]) for r in stored] == [
        (by_name["id"], by_name["url"]),
        (by_ip["id"], by_ip["url"]),
        (local["id"], local["url"]),
    ]
    assert stage.canary.count == 0, f"vetting connected to the canary: {stage.canary.describe()}"
    assert stage.origin.requests == [], "vetting must resolve, never connect"
    assert not wire.hits, f"the api opened sockets outside loopback: {wire.describe()}"
    assert ("private.test", "A") in dns.queries and ("allowed.test", "AAAA") in dns.queries
