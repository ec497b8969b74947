"""Single sign-on's rules, pure: what one login keeps between the redirect and the callback,
who a verified ID token (or a trusted proxy's header) is, and what signing them in does to
users and memberships.

A login is three random values (256 bits each): ``state`` (in the callback's URL and in a
short cookie, so the callback is this browser's; stored as its SHA-256 and deleted when the
callback takes it, so a replayed state finds nothing), ``nonce`` (in the ID token, compared
with the stored one) and the PKCE ``verifier`` (sent with the code; only its S256 challenge
went to the browser). A login lives ``LOGIN_SECONDS``.

Who signs in is matched by e-mail, and only by one the provider says it verified
(``email_verified: true``). ``plan`` decides what follows, with ``account`` the setting
MONITOR_SSO_ACCOUNT and ``mapped`` the role the user's groups give (``role_for``):

=============  =====================  ============================================
user exists    member of ``account``  what happens
=============  =====================  ============================================
no             (no account set)       refused: 403 ``no_user``
no             no                     user created, joins ``account`` as mapped or default
yes            (no account set)       signed in, memberships untouched
yes            no                     joins ``account`` as mapped or default
yes            yes                    role set to mapped or default if groups are mapped
                                      (the account's last owner stays owner); else untouched
=============  =====================  ============================================
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from monitor.domain.context import ROLES, Role
from monitor.domain.errors import DomainError

LOGIN_SECONDS = 600
STATE_COOKIE = "__Host-monitor_sso"
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{43,128}$")
_EMAIL = re.compile(r"^[^@\s<>,;]{1,64}@[^@\s<>,;]{1,189}$")
DISPLAY_NAME_MAX = 100  # users.display_name's bound


@dataclass(frozen=True)
class Login:
    state: str
    nonce: str
    verifier: str


def new_login() -> Login:
    return Login(secrets.token_urlsafe(32), secrets.token_urlsafe(32), secrets.token_urlsafe(48))


def state_hash(state: str | None) -> bytes | None:
    """What the store keys a login by; None for what no login of ours could have made."""
    if not state or not _TOKEN.match(state):
        return None
    return hashlib.sha256(state.encode()).digest()


def same_browser(query_state: str | None, cookie_state: str | None) -> bool:
    """Whether the callback's state is the one this browser's cookie holds (a login started
    elsewhere, sent to a victim's browser, must not sign the victim in as someone else)."""
    if not query_state or not cookie_state:
        return False
    return hmac.compare_digest(query_state.encode(), cookie_state.encode())


# The longest ``next`` kept: 512 characters, percent-encoded at up to 12 bytes each, keep the
# request line under the 8,190 bytes aiohttp's parser takes.
MAX_RETURN_PATH = 512


def return_path(given: str | None) -> str:
    """Where the browser goes after signing in: a path of this site, never another origin
    (``//evil.example``, ``/\\evil``, a scheme): anything else is ``/``."""
    if not given or len(given) > MAX_RETURN_PATH:
        return "/"
    if not given.startswith("/") or given.startswith(("//", "/\\")):
        return "/"
    if any(ch in given for ch in "\\\r\n\t") or not given.isprintable():
        return "/"
    return given


@dataclass(frozen=True)
class Identity:
    """Who the provider (or the proxy) says signs in."""

    email: str
    display_name: str = ""
    groups: tuple[str, ...] = ()


def identity(claims: Mapping[str, Any], groups_claim: str) -> Identity:
    """The identity of verified ID token claims; 403 when it has no e-mail the provider verified."""
    email = claims.get("email")
    if not isinstance(email, str) or not _EMAIL.match(email):
        raise DomainError(403, "no_email", "the identity provider sent no e-mail (ask for the 'email' scope)")
    if claims.get("email_verified") is not True:
        raise DomainError(403, "email_unverified", "the identity provider has not verified this e-mail")
    name = claims.get("name")
    display = name.strip()[:DISPLAY_NAME_MAX] if isinstance(name, str) else ""
    raw = claims.get(groups_claim)
    groups = tuple(g for g in raw if isinstance(g, str)) if isinstance(raw, list) else ()
    if isinstance(raw, str):
        groups = (raw,)
    return Identity(email, display, groups)


def proxy_identity(value: str | None) -> Identity | None:
    """The identity of a trusted proxy's header: its e-mail, or None when it holds none."""
    if value is None:
        return None
    email = value.strip()
    return Identity(email) if _EMAIL.match(email) else None


def trusted_peer(address: str | None, cidrs: Iterable[str]) -> bool:
    """Whether the connection's peer (never a forwarded-for header) is one of the proxies."""
    if not address:
        return False
    try:
        peer = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(peer, ipaddress.IPv6Address) and peer.ipv4_mapped is not None:
        peer = peer.ipv4_mapped
    return any(peer in ipaddress.ip_network(cidr, strict=False) for cidr in cidrs)


def role_for(groups: Iterable[str], mapping: Mapping[str, str]) -> Role | None:
    """The highest role the groups are mapped to; None when no group is mapped."""
    found = [mapping[g] for g in groups if g in mapping]
    best = max(found, key=ROLES.index, default=None)
    return None if best is None else _role(best)


def _role(name: str) -> Role:
    for role in ROLES:
        if role == name:
            return role
    raise ValueError(f"unknown role {name!r}")


@dataclass(frozen=True)
class Plan:
    create_user: bool = False
    join: Role | None = None  # a new membership of the SSO account, with this role
    set_role: Role | None = None  # the membership's role, where the groups decide it


def plan(
    *,
    user_exists: bool,
    member_role: Role | None,
    account: int | None,
    groups_mapped: bool,
    mapped: Role | None,
    default: Role,
) -> Plan:
    """What signing this identity in does (the table of the module's docstring)."""
    role = mapped or default
    if not user_exists:
        if account is None:
            raise DomainError(
                403, "no_user", "no user has this e-mail, and single sign-on creates none here; ask an admin"
            )
        return Plan(create_user=True, join=role)
    if account is None:
        return Plan()
    if member_role is None:
        return Plan(join=role)
    if groups_mapped and role != member_role:
        return Plan(set_role=role)
    return Plan()
