"""A check's target host judged before anything is dialled, with the refusal an operator reads.

Every check type that dials out (http's client, tcp, dns servers, tls, ping) resolves its host
here, so a refused target reads the same whatever the type: ``blocked: db.internal resolves to
10.0.0.5 (private address)``, ``blocked: 10.0.0.5 (private address)`` for a literal. The
scheduler counts a ``Refused`` with ``blocked`` (``Failure.REFUSED``) as a refusal, not as an outage.
"""

from __future__ import annotations

from .policy import BlockedTarget, InvalidTarget
from .resolver import ResolutionError, VettedResolver

__all__ = ["Refused", "vet_host"]


class Refused(Exception):
    """The host cannot be dialled: denied by policy (``blocked``) or not resolvable.
    ``message`` is the check's error as it stands."""

    def __init__(self, message: str, *, blocked: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.blocked = blocked


async def vet_host(resolver: VettedResolver, host: str) -> list[str]:
    """One fresh lookup whose every answer is judged (fail closed): the addresses a check may
    dial, in the resolver's order. A literal is judged as itself. Raises ``Refused``."""
    try:
        return [str(address) for address in await resolver.vet(host)]
    except BlockedTarget as exc:
        # A name's reason reads "resolves to ..." after the name; a literal's (no ``host``)
        # names the address itself, as http's literal URLs do.
        text = f"blocked: {exc.host} {exc.reason}" if exc.host else f"blocked: {exc.reason}"
        raise Refused(text, blocked=True) from exc
    except InvalidTarget as exc:
        raise Refused(f"blocked: {host} {exc}", blocked=True) from exc
    except ResolutionError as exc:
        raise Refused(str(exc)) from exc
    except OSError as exc:
        raise Refused(f"cannot resolve {host}: {exc}") from exc
