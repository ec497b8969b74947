"""Outbound network access for checks: the SSRF guard (policy, resolver) and the HTTP client.

docs/security.md states the policy. Everything a check dials goes through ``VettedResolver``
(names) or ``AddressPolicy`` (literals); ``fetch`` is the HTTP entry point.
"""

from .certificate import PeerCertificate
from .client import FetchResult, HttpSession, fetch, make_session
from .policy import (
    AddressPolicy,
    BlockedTarget,
    InvalidTarget,
    Verdict,
    literal_address,
    parse_target_url,
)
from .resolver import ResolutionError, VettedResolver, parse_nameserver

__all__ = [
    "AddressPolicy",
    "BlockedTarget",
    "FetchResult",
    "HttpSession",
    "InvalidTarget",
    "PeerCertificate",
    "ResolutionError",
    "Verdict",
    "VettedResolver",
    "fetch",
    "literal_address",
    "make_session",
    "parse_nameserver",
    "parse_target_url",
]
