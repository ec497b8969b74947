"""What a process that runs checks opens for them: the operator's address policy, the vetted
resolver, the one SSRF-guarded session, and the ``CheckContext`` over them.

The scheduler and the worker build theirs here, so the two cannot drift apart: a worker's
browser check and a scheduler's http check are held to the same policy (``MONITOR_ALLOW_CIDRS``,
``MONITOR_DNS_SERVERS``), the same trusted CAs and the same limits on what a target may send.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from monitor.checks.base import CheckContext
from monitor.config import Settings
from monitor.net.client import HttpSession, make_session
from monitor.net.policy import AddressPolicy, log_allow_list
from monitor.net.resolver import VettedResolver
from monitor.net.session import tls_context


@dataclass(frozen=True)
class CheckTools:
    """A process's check context and what it is made of; :meth:`close` on shutdown."""

    policy: AddressPolicy
    resolver: VettedResolver
    session: HttpSession
    ctx: CheckContext

    async def close(self) -> None:
        await self.session.close()
        await self.resolver.close()


def check_tools(settings: Settings, log: Any, *, limit: int, **extra: Any) -> CheckTools:
    """The check tools of a process under ``settings`` (its start line says the allow list, on
    ``log``); ``limit``: connections in flight; ``extra``: the process's own fields of the
    ``CheckContext`` (a scheduler's ``dispatch``, a worker's ``browser`` and ``screenshots``)."""
    s = settings
    policy = AddressPolicy(s.allow_cidrs)
    log_allow_list(log, policy)
    resolver = VettedResolver(policy, s.dns_servers)
    session = make_session(
        resolver,
        limit=limit,
        max_head_bytes=s.http_max_head_bytes,
        max_headers=s.http_max_headers,
        ssl_context=tls_context(s.ca_file),
    )
    ctx = CheckContext(
        session=session,
        policy=policy,
        allow_insecure_tls=s.allow_insecure_tls,
        http_max_body_bytes=s.http_max_body_bytes,
        **extra,
    )
    return CheckTools(policy, resolver, session, ctx)
