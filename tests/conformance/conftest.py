"""Fixtures of the conformance table: every server it needs, started once per session.

``lab`` holds them all and turns a row's URL template into a URL (``lab.url("{nginx}/")``);
``client`` is a check client for one test, allowed to dial loopback only, trusting the test CA
the way ``MONITOR_CA_FILE`` adds one. Servers are stopped (nginx by PID) at the end.
"""

from __future__ import annotations

import contextlib
import shutil
import ssl
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.connections import all_closed
from support.h2server import H2Server

# bench/ (whose nginx runner we reuse) is not an installed package: import it from the checkout.
_REPO = str(Path(__file__).resolve().parents[2])
if _REPO not in sys.path:
    sys.path.append(_REPO)

from monitor.checks.base import CheckContext  # noqa: E402
from monitor.net.policy import AddressPolicy  # noqa: E402
from monitor.net.resolver import VettedResolver  # noqa: E402
from monitor.net.session import make_session, tls_context  # noqa: E402

from .nginx import SiteNginx  # noqa: E402
from .servers import RAW, BlockingTlsServer, PyHttp, ServerThread, closed_port, connect_stall, silent_dns  # noqa: E402
from .tls import Pki  # noqa: E402

LOOPBACK = ["127.0.0.0/8", "::1/128"]


@dataclass
class Lab:
    """The running servers, by the names the table's URL templates use."""

    pki: Pki
    nginx: SiteNginx
    bases: dict[str, Any]
    dns_server: str  # a resolver that never answers, for the "resolving" timeout
    client_tls: ssl.SSLContext
    h2: H2Server  # offers ALPN h2 only
    h2_both: H2Server  # offers h2 and http/1.1

    def url(self, template: str) -> str:
        return template.format(**self.bases)


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    if not (shutil.which("nginx") or Path("/usr/sbin/nginx").exists()):
        pytest.fail(
            "nginx is not installed: apt-get install nginx-light (the conformance table runs "
            "Debian's nginx from a prefix of its own, never the system service)",
            pytrace=False,
        )
    root = tmp_path_factory.mktemp("conformance")
    pki = Pki(root / "pki")
    thread = ServerThread()
    with contextlib.ExitStack() as stack:
        stack.callback(thread.close)
        py = PyHttp(root / "py-www").start()
        stack.callback(py.close)
        py6 = PyHttp(root / "py-www", host="::1").start()
        stack.callback(py6.close)
        # nginx's workers run as nobody when we are root, and pytest's temporary directories are
        # private to us: the site gets a directory of its own that others may read.
        site = Path(tempfile.mkdtemp(prefix="monitor-conformance-nginx-"))
        stack.callback(shutil.rmtree, site, ignore_errors=True)
        site.chmod(0o755)
        nginx = SiteNginx(
            site, cert=pki.valid_chain[0], key=pki.valid_chain[1], ca=pki.ca_file, other_origin=py.url
        )
        thread.run(nginx.start(), timeout=30)
        stack.callback(nginx.stop)
        contexts = pki.contexts()
        raw: dict[str, str] = {}
        for name, behaviour in RAW.items():
            port = thread.start_raw(behaviour, contexts)
            host = f"[{behaviour.host}]" if ":" in behaviour.host else behaviour.host
            raw[name] = f"{'https' if behaviour.tls else 'http'}://{host}:{port}"
        client_cert = BlockingTlsServer(contexts["client-cert"])
        stack.callback(client_cert.close)
        raw["tls-client-cert"] = f"https://127.0.0.1:{client_cert.port}"
        h2_servers = []
        for alpn in (["h2"], ["h2", "http/1.1"]):
            context = pki.server_context()
            context.set_alpn_protocols(alpn)
            server = H2Server(context, http11="http/1.1" in alpn)
            thread.run(server.start())
            stack.callback(lambda server=server: thread.run(server.stop()))
            h2_servers.append(server)
        h2, h2_both = h2_servers
        stall_port = stack.enter_context(connect_stall())
        dns_server = stack.enter_context(silent_dns())
        bases: dict[str, Any] = {
            "nginx": f"http://127.0.0.1:{nginx.port}",
            "nginx6": f"http://[::1]:{nginx.port}",
            "nginx_port": nginx.port,
            "nginx_h2c": f"http://127.0.0.1:{nginx.h2c_port}",
            "nginx_tls": f"https://127.0.0.1:{nginx.tls_port}",
            "nginx_tls_port": nginx.tls_port,
            "nginx_mtls": f"https://127.0.0.1:{nginx.mtls_port}",
            "py": py.url,
            "py6": py6.url,
            "raw": raw,
            "raw_port": {name: base.rsplit(":", 1)[1] for name, base in raw.items()},
            "refused": f"http://127.0.0.1:{closed_port()}",
            "connect_stall": f"http://127.0.0.1:{stall_port}",
            "h2": f"https://127.0.0.1:{h2.port}",
            "h2_port": h2.port,
            "h2_both": f"https://127.0.0.1:{h2_both.port}",
        }
        yield Lab(pki, nginx, bases, dns_server, tls_context(ca_file=str(pki.ca_file)), h2, h2_both)


@dataclass
class Client:
    ctx: CheckContext
    resolver: VettedResolver


@pytest.fixture
async def client(lab: Lab, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Client]:
    """The check's context for one test: a session that may dial loopback only, trusts the
    test CA on top of the system's roots (as MONITOR_CA_FILE does), and resolves names through
    a DNS server that never answers (every row but one uses literals or *.localhost, which
    the resolver answers itself). Every connection a check opened is closed before the test's
    loop ends (``support.connections``)."""
    async with all_closed(monkeypatch):
        policy = AddressPolicy(LOOPBACK)
        resolver = VettedResolver(policy, [lab.dns_server], timeout=5.0)
        session = make_session(resolver, ssl_context=lab.client_tls)
        try:
            yield Client(CheckContext(session, policy, allow_insecure_tls=True), resolver)
        finally:
            await session.close()
            await resolver.close()
