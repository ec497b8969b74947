"""What real checks put in ``details`` is what their type's ``Details`` model says, and no more.

Each type declares its ``details`` keys in its module (``Check.Details``), and the OpenAPI
document describes ``details`` from them; here http, tcp and tls checks run against servers on
loopback (in-process ``Check.run``, as ``test_cert_expiry.py`` and ``test_tcp_tls_checks.py``
do), and every result's details must validate against the model of its type, which refuses an
undeclared key. (dns, ping and heartbeat results are checked from their pure parts in
``tests/unit/test_check_details.py``.)
"""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from typing import Any

import pytest
from support import TargetServer
from support.banner import BannerServerFactory, banner_server_fixture  # noqa: F401
from support.certs import (  # noqa: F401  (the local_ca and https_target fixtures)
    HttpsTargetFactory,
    LocalCA,
    https_target_fixture,
    local_ca_fixture,
)
from support.connections import all_closed

from monitor.checks import REGISTRY
from monitor.checks.base import Check, CheckContext
from monitor.models import CheckResult, MonitorSpec
from monitor.net.policy import AddressPolicy
from monitor.net.resolver import VettedResolver
from monitor.net.session import make_session

pytestmark = pytest.mark.timeout(60)


async def run(ctx: CheckContext, check: Check, url: str, settings: dict[str, Any]) -> CheckResult:
    spec = MonitorSpec(id=1, name=check.kind, type=check.kind, url=url, interval_seconds=60,
                       timeout_seconds=2.0, confirm_after=1, paused=False,
                       options=check.options(settings, None))  # fmt: skip
    return await check.run(spec, ctx, dt.datetime.now(dt.UTC))


@pytest.fixture
async def ctx(local_ca: LocalCA, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[CheckContext]:
    async with all_closed(monkeypatch):
        policy = AddressPolicy(["127.0.0.0/8"])
        resolver = VettedResolver(policy)
        session = make_session(resolver, ssl_context=local_ca.client_context())
        try:
            yield CheckContext(session, policy, allow_insecure_tls=True)
        finally:
            await session.close()
            await resolver.close()


def declared(check: Check, result: CheckResult) -> set[str]:
    """The keys of the result's details, validated against its type's model."""
    assert check.Details is not None
    assert result.details is not None, result
    check.Details.model_validate(result.details)
    return set(result.details)


HTTP_CASES = [
    ("assertions", {"assertions": [{"type": "keyword", "keyword": "Welcome"}]}, {"assertions"}),
    ("a failed assertion", {"assertions": [{"type": "keyword", "keyword": "absent words"}]}, {"assertions"}),
    ("security headers", {"assertions": [{"type": "security_headers", "min_grade": "F"}]}, {"assertions"}),
    ("a body cut at its cap", {"max_body_bytes": 16, "assertions": [{"type": "keyword", "keyword": "x"}]},
     {"assertions", "body_truncated", "body_bytes"}),
]  # fmt: skip


@pytest.mark.parametrize(("settings", "keys"), [c[1:] for c in HTTP_CASES], ids=[c[0] for c in HTTP_CASES])
async def test_http_details(ctx: CheckContext, settings: dict[str, Any], keys: set[str]) -> None:
    http = REGISTRY.get("http")
    async with TargetServer() as target:
        target.set(body="Welcome to a page long enough to be cut at sixteen bytes")
        result = await run(ctx, http, target.url("/"), settings)
    assert declared(http, result) == keys


async def test_https_details(ctx: CheckContext, https_target: HttpsTargetFactory) -> None:
    http = REGISTRY.get("http")
    target = await https_target(days=30)
    assert declared(http, await run(ctx, http, target.url("/"), {})) == {"certificate"}
    unchecked = await run(ctx, http, target.url("/"), {"tls_verify": False})
    assert declared(http, unchecked) >= {"certificate", "tls_verified"}


async def test_tcp_and_tls_details(
    ctx: CheckContext, banner_server: BannerServerFactory, local_ca: LocalCA
) -> None:
    leaf, _ = local_ca.issue("127.0.0.1", days=30)
    server = await banner_server(
        banner=b"220 mail.test ESMTP ready\r\n", ssl_context=local_ca.server_context(leaf)
    )
    tcp, tls = REGISTRY.get("tcp"), REGISTRY.get("tls")
    got = await run(ctx, tcp, "", {"host": "127.0.0.1", "port": server.port, "tls": True, "expect": "220"})
    assert declared(tcp, got) == {"answer", "tls", "certificate"}
    got = await run(ctx, tls, "", {"host": "127.0.0.1", "port": server.port})
    assert declared(tls, got) == {"certificate", "chain", "weakest_key", "verified", "tls_version"}
