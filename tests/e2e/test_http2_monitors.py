"""An HTTP/2-only site through the real api and scheduler (issue 26, point 5).

The site is a local TLS server that offers ALPN ``h2`` only and answers in HTTP/2
(``support.h2server``, on the h2 library), with a leaf from a throwaway CA the scheduler
trusts (``MONITOR_CA_FILE``). Browsers load it; the monitor must be up, each check saying it
spoke HTTP/2 (``details.http_version``). The scheduler's check session learns once that the
server is h2-only (one refused HTTP/1.1 handshake) and asks for h2 at once afterwards.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from support import ApiClient, ProcessFactory, wait_for
from support.certs import LocalCA, local_ca_fixture, scheduler_env  # noqa: F401  (the local_ca fixture)
from support.h2server import H2Server

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]

DEADLINE = 30.0


async def test_an_h2_only_site_is_up_and_checked_in_http2(
    local_ca: LocalCA, procs: ProcessFactory, api_client: Callable[[str], ApiClient]
) -> None:
    leaf, _ = local_ca.issue()
    context = local_ca.server_context(leaf)
    context.set_alpn_protocols(["h2"])
    site = H2Server(context)
    port = await site.start()
    try:
        api_proc = await procs.start("api")
        await procs.start("scheduler", env=scheduler_env(local_ca))
        api = api_client(api_proc.base_url)
        monitor = await api.create_monitor(
            name="h2 only",
            url=f"https://127.0.0.1:{port}/",
            interval_seconds=1,
            timeout_seconds=1,
            confirm_after=1,
            assertions=[{"type": "keyword", "keyword": "Welcome home"}],
        )
        mid = monitor["id"]

        async def checks() -> list[dict[str, Any]]:
            response = await api.get(f"/api/v1/monitors/{mid}/checks")
            assert response.status == 200, response
            return list(response.json["items"])  # newest first

        async def three_checks() -> bool:
            return len(await checks()) >= 3

        await wait_for(three_checks, timeout=DEADLINE, message="three checks of the h2-only site")
        assert (await api.monitor(mid))["status"] == "up"
        for item in await checks():
            assert (item["ok"], item["error"]) == (True, None), item
            assert item["details"]["http_version"] == "2", item
            assert item["timings"]["ttfb_ms"] is not None, item
        # One HTTP/1.1 handshake (refused: HTTP/2 frames came back), then h2 at once.
        assert site.alpn[None] == 1 and site.alpn["h2"] >= 3, site.alpn
    finally:
        await site.stop()
    assert procs.tracebacks() == {}
