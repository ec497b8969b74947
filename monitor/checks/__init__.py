"""Check types. Adding one is a module with a ``Check`` subclass and a line in REGISTRY."""

from __future__ import annotations

from monitor.checks.base import Check, CheckContext, Registry
from monitor.checks.browser import BrowserCheck
from monitor.checks.dns import DnsCheck
from monitor.checks.heartbeat import HeartbeatCheck
from monitor.checks.http import HttpCheck
from monitor.checks.pagespeed import PageSpeedCheck
from monitor.checks.ping import PingCheck
from monitor.checks.tcp import TcpCheck
from monitor.checks.tls import TlsCheck

REGISTRY = Registry()
REGISTRY.register(HttpCheck)
REGISTRY.register(PingCheck)
REGISTRY.register(HeartbeatCheck)
REGISTRY.register(DnsCheck)
REGISTRY.register(TcpCheck)
REGISTRY.register(TlsCheck)
REGISTRY.register(BrowserCheck)
REGISTRY.register(PageSpeedCheck)

__all__ = ["REGISTRY", "Check", "CheckContext"]
