"""A throwaway CA, and HTTPS targets on loopback whose certificate expires when the test says.

``LocalCA`` mints leaves (``trustme``) valid until a given number of days from now, for the
loopback names by default, and writes its own certificate to a PEM file: the file a real
process trusts through ``MONITOR_CA_FILE`` (added to the system's roots; ``scheduler_env``), or
that an in-process session trusts through ``tls_context(ca_file=...)``.

``HttpsTarget`` is ``support.target.TargetServer`` over TLS (same ``set``, counting and
``url``), serving one leaf. The ``https_target`` fixture (import ``https_target_fixture``; it
needs ``local_ca``, import ``local_ca_fixture`` too) starts them and stops them after the test::

    from support.certs import HttpsTarget, LocalCA, https_target_fixture, local_ca_fixture  # noqa: F401

    async def test_x(https_target, local_ca, procs):
        target = await https_target(days=3)            # expires in 3 days
        procs.spawn("scheduler", env=scheduler_env(local_ca))
        ... monitor url target.url("/health") ...
"""

from __future__ import annotations

import datetime as dt
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
import trustme
from aiohttp import web

from monitor.net.session import tls_context

from .target import TargetServer

# The names a leaf answers for by default: the address the targets listen on, and localhost.
LOOPBACK_NAMES = ("127.0.0.1", "localhost")
CA_ORGANIZATION = "Monitor Test CA"


class LocalCA:
    """A root CA (organisation ``CA_ORGANIZATION``, no common name: a check reports it as the
    issuer) whose certificate is written to ``ca_file``."""

    def __init__(self, directory: Path) -> None:
        self.ca = trustme.CA(organization_name=CA_ORGANIZATION)
        directory.mkdir(parents=True, exist_ok=True)
        self.ca_file = directory / "test-ca.pem"
        self.ca.cert_pem.write_to_path(str(self.ca_file))

    def issue(
        self, *names: str, days: float = 365.0, common_name: str | None = None
    ) -> tuple[trustme.LeafCert, dt.datetime]:
        """A leaf for ``names`` (default ``LOOPBACK_NAMES``) that expires ``days`` from now
        (valid since yesterday), and that expiry (UTC, whole seconds as in the certificate).
        Without ``common_name`` the subject has none, and a check names it by its first name."""
        now = dt.datetime.now(dt.UTC).replace(microsecond=0)
        not_after = now + dt.timedelta(days=days)
        leaf = self.ca.issue_cert(
            *(names or LOOPBACK_NAMES),
            common_name=common_name,
            not_before=now - dt.timedelta(days=1),
            not_after=not_after,
        )
        return leaf, not_after

    def server_context(self, leaf: trustme.LeafCert) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        leaf.configure_cert(context)
        return context

    def client_context(self) -> ssl.SSLContext:
        """What an in-process check session verifies with: the system's roots plus this CA, as
        ``MONITOR_CA_FILE`` gives the scheduler (``monitor.net.session.tls_context``)."""
        return tls_context(ca_file=str(self.ca_file))


def scheduler_env(ca: LocalCA) -> dict[str, str]:
    """What a real scheduler needs to trust ``ca``: its PEM as ``MONITOR_CA_FILE``. (Loopback
    is already allowed by every test process's ``MONITOR_ALLOW_CIDRS=127.0.0.0/8``.)"""
    return {"MONITOR_CA_FILE": str(ca.ca_file)}


class HttpsTarget(TargetServer):
    """``TargetServer`` over TLS with ``leaf``; ``not_after`` is the leaf's expiry."""

    def __init__(self, context: ssl.SSLContext, *, not_after: dt.datetime, host: str = "127.0.0.1") -> None:
        super().__init__(host=host)
        self.context = context
        self.not_after = not_after

    async def start(self) -> HttpsTarget:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0, ssl_context=self.context)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    def url(self, path: str = "/") -> str:
        return "https" + super().url(path).removeprefix("http")


HttpsTargetFactory = Callable[..., Awaitable[HttpsTarget]]


# Registered as ``local_ca`` and ``https_target`` where imported (as in support.dns).
@pytest.fixture(name="local_ca")
def local_ca_fixture(tmp_path: Path) -> LocalCA:
    """A throwaway CA for one test; its PEM is ``local_ca.ca_file``."""
    return LocalCA(tmp_path / "ca")


@pytest.fixture(name="https_target")
async def https_target_fixture(local_ca: LocalCA) -> AsyncIterator[HttpsTargetFactory]:
    """``await https_target(days=3)``: an HTTPS ``TargetServer`` on 127.0.0.1 whose certificate
    (from ``local_ca``, for 127.0.0.1 and localhost) expires in 3 days. Keyword arguments go
    to ``LocalCA.issue`` (``names``, ``common_name``); all are stopped after the test."""
    started: list[HttpsTarget] = []

    async def make(
        days: float = 365.0, *, names: tuple[str, ...] = LOOPBACK_NAMES, common_name: str | None = None
    ) -> HttpsTarget:
        leaf, not_after = local_ca.issue(*names, days=days, common_name=common_name)
        server = HttpsTarget(local_ca.server_context(leaf), not_after=not_after)
        started.append(server)
        return await server.start()

    yield make
    for server in started:
        await server.close()
