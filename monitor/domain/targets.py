"""The first of the two SSRF layers: a host a monitor would check or a channel would send to,
judged when it is saved, with one refusal for both.

The same ``VettedResolver`` as the scheduler and the alerter judges it (``monitor.net``: one
policy, one place); the processes judge it again at every connection, since DNS changes. A
refusal is 400 ``target_blocked`` with ``field`` naming the setting at fault (``url``,
``host``, ``config.url``...) and, where the operator's allow-list could admit the address, the
setting that would: a newcomer trying ``http://127.0.0.1:9000/`` learns that
``MONITOR_ALLOW_CIDRS`` exists from the answer itself.
"""

from __future__ import annotations

from monitor import logging as mlog
from monitor.domain.context import Vetter
from monitor.domain.errors import DomainError
from monitor.net.policy import BlockedTarget, InvalidTarget
from monitor.net.resolver import ResolutionError

log = mlog.get(__name__)

ALLOW_SETTING = "MONITOR_ALLOW_CIDRS"


def refusal(exc: BlockedTarget, field: str) -> str:
    """``url: private.test resolves to 10.0.0.5 (private-use 10.0.0.0/8); ...`` with the
    allow-list entry that would admit it."""
    reason = str(exc)
    if exc.host and not reason.startswith(exc.host):
        reason = f"{exc.host} {reason}"  # "private.test resolves to 10.0.0.5 (...)"
    message = f"{field}: {reason}"
    if exc.address is not None:
        entry = f"{exc.address}/{exc.address.max_prefixlen}"
        message += f"; the operator can allow it with {ALLOW_SETTING}={entry} (docs/security.md)"
    return message


async def vet_host(resolver: Vetter, host: str, field: str) -> None:
    """Refuse ``host`` if it is denied right now; a name that does not resolve passes."""
    try:
        await resolver.vet(host)
    except BlockedTarget as exc:
        raise DomainError(400, "target_blocked", refusal(exc, field), field) from None
    except InvalidTarget as exc:
        raise DomainError(400, "invalid", f"{field}: {exc}", field) from None
    except ResolutionError as exc:
        # Not resolving is not dangerous: the site may not be live yet, or DNS may be down.
        # The object is saved and its checks (or sends) report the failure (as Uptime Kuma
        # does); the processes judge every answer again at each connection.
        log.info("api.target_unresolved", host=host, field=field, error=str(exc))
