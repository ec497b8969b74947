"""Which addresses and URLs a check may reach: the SSRF deny list and URL form rules.

The deny list is written out as explicit networks on purpose: ``ipaddress.is_global`` and
``is_private`` differ between Python patch releases (CVE-2024-4032 changed them in 3.11.10 /
3.12.4) and even the fixed ones call multicast, NAT64 and unallocated space "global".
docs/security.md states the policy this module implements.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address, ip_network
from typing import Any

from yarl import URL

IPAddress = IPv4Address | IPv6Address
IPNetwork = IPv4Network | IPv6Network

DEFAULT_SCHEMES: frozenset[str] = frozenset({"http", "https"})


class InvalidTarget(ValueError):
    """The URL or host is malformed, or its form is not allowed (scheme, userinfo, numeric tricks)."""


class BlockedTarget(OSError):
    """The target's address is denied by policy.

    An ``OSError`` so that aiohttp's connector, which only expects ``OSError`` from a resolver,
    wraps it in ``ClientConnectorDNSError`` instead of letting it escape unannotated.
    ``host`` is the name that resolved to the denied address, or None for a literal.
    ``address`` is the denied address as judged (IPv4-mapped unwrapped), the one an
    ``MONITOR_ALLOW_CIDRS`` entry would let through; None where no entry can (a zone id).
    """

    def __init__(self, reason: str, host: str | None = None, address: IPAddress | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.host = host
        self.address = address

    def __str__(self) -> str:
        return self.reason


@dataclass(frozen=True)
class Verdict:
    address: IPAddress
    allowed: bool
    reason: str | None


def _nets(*pairs: tuple[str, str]) -> tuple[tuple[int, int, IPNetwork, str], ...]:
    """(base, mask, network, label): an address is in the network when ``int(addr) & mask == base``."""
    return tuple((*_ints(ip_network(net)), ip_network(net), label) for net, label in pairs)


def _ints(net: IPNetwork) -> tuple[int, int]:
    return int(net.network_address), int(net.netmask)


# First match wins, so more specific networks come before the blocks that contain them.
_DENY_V4 = _nets(
    ("0.0.0.0/8", "this-network"),
    ("10.0.0.0/8", "private-use"),
    ("100.64.0.0/10", "shared address space (CGNAT)"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local"),
    ("172.16.0.0/12", "private-use"),
    ("192.0.0.0/24", "IETF protocol assignments"),
    ("192.0.2.0/24", "documentation"),
    ("192.88.99.0/24", "6to4 relay anycast"),
    ("192.168.0.0/16", "private-use"),
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),
)

_GLOBAL_UNICAST_V6 = ip_network("2000::/3")
_GLOBAL_UNICAST_V6_BASE, _GLOBAL_UNICAST_V6_MASK = _ints(_GLOBAL_UNICAST_V6)

# Carve-outs inside 2000::/3. Teredo sits inside 2001::/23 but is named for a clearer reason.
_DENY_V6_INSIDE = _nets(
    ("2001::/32", "Teredo"),
    ("2001::/23", "IETF protocol assignments"),
    ("2001:db8::/32", "documentation"),
    ("2002::/16", "6to4"),
    ("3fff::/20", "documentation"),
)

# Everything outside 2000::/3 is denied anyway; these entries only name the common classes.
_NAMED_V6_OUTSIDE = _nets(
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("::/96", "IPv4-compatible"),
    ("::ffff:0:0:0/96", "IPv4-translated"),
    ("64:ff9b::/96", "NAT64"),
    ("64:ff9b:1::/48", "NAT64 local-use"),
    ("100::/64", "discard-only"),
    ("5f00::/16", "SRv6 SIDs"),
    ("fc00::/7", "unique-local (ULA)"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local"),
    ("ff00::/8", "multicast"),
)

_IPV4_MAPPED = IPv6Network("::ffff:0:0/96")
_LOOPBACK_V4_BASE, _LOOPBACK_V4_MASK = _ints(IPv4Network("127.0.0.0/8"))
_LOOPBACK_V6 = IPv6Address("::1")


def is_loopback(addr: IPAddress) -> bool:
    """127.0.0.0/8 or ::1, IPv4-mapped unwrapped first: this machine, whichever is dialled."""
    address = unwrap(addr)
    if isinstance(address, IPv4Address):
        return int(address) & _LOOPBACK_V4_MASK == _LOOPBACK_V4_BASE
    return address == _LOOPBACK_V6  # a zone id makes it unequal, and is denied anyway


def unwrap(addr: IPAddress) -> IPAddress:
    """IPv4-mapped IPv6 is the IPv4 address: that is what the kernel dials, so judge that."""
    if isinstance(addr, IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    return addr


def _parse_allow(item: str | IPNetwork) -> IPNetwork:
    if isinstance(item, IPv4Network | IPv6Network):
        net: IPNetwork = item
    else:
        try:
            net = ip_network(item.strip(), strict=False)  # same leniency as the settings validator
        except ValueError as exc:
            raise ValueError(f"invalid allow-list network {item!r}: {exc}") from exc
    # An operator writing ::ffff:10.0.0.0/104 means the IPv4 network; addresses are unwrapped
    # before the allow check, so the allow entry must be too.
    if isinstance(net, IPv6Network) and net.prefixlen >= 96 and net.subnet_of(_IPV4_MAPPED):
        mapped = net.network_address.ipv4_mapped
        assert mapped is not None
        return IPv4Network(f"{mapped}/{net.prefixlen - 96}")
    return net


class AddressPolicy:
    """Judges one IP address: allow-list exceptions first, then the deny list."""

    def __init__(self, allow: Iterable[str | IPNetwork] = ()) -> None:
        self._allow: tuple[IPNetwork, ...] = tuple(_parse_allow(item) for item in allow)
        self._allow_ints = tuple((net.version, *_ints(net)) for net in self._allow)

    @classmethod
    def from_csv(cls, text: str) -> AddressPolicy:
        """Build from the ``MONITOR_ALLOW_CIDRS`` form: comma-separated CIDRs, blanks ignored."""
        return cls(part for part in text.split(",") if part.strip())

    @property
    def allow_cidrs(self) -> tuple[IPNetwork, ...]:
        return self._allow

    def judge(self, addr: IPAddress | str) -> Verdict:
        raw = ip_address(addr) if isinstance(addr, str) else addr
        # A zone id picks an interface: only meaningful for on-link targets, never for a check.
        if isinstance(raw, IPv6Address) and raw.scope_id:
            return Verdict(raw, False, f"zone id %{raw.scope_id}")
        address = unwrap(raw)
        # Networks are compared as (base, mask) integers: the same test as ``address in net``
        # at a fraction of the cost, and every check runs this.
        version, ip = address.version, int(address)
        for net_version, base, mask in self._allow_ints:
            if version == net_version and ip & mask == base:
                return Verdict(address, True, None)
        if version == 4:
            for base, mask, net, label in _DENY_V4:
                if ip & mask == base:
                    return Verdict(address, False, f"{label} {net}")
            return Verdict(address, True, None)
        if ip & _GLOBAL_UNICAST_V6_MASK == _GLOBAL_UNICAST_V6_BASE:
            for base, mask, net, label in _DENY_V6_INSIDE:
                if ip & mask == base:
                    return Verdict(address, False, f"{label} {net}")
            return Verdict(address, True, None)
        for base, mask, net, label in _NAMED_V6_OUTSIDE:
            if ip & mask == base:
                return Verdict(address, False, f"{label} {net}")
        return Verdict(address, False, f"outside global unicast {_GLOBAL_UNICAST_V6}")

    def check(self, addr: IPAddress | str, *, host: str | None = None) -> IPAddress:
        """Return the address to dial, or raise BlockedTarget.

        With ``host`` the reason reads "resolves to ..." (a name's answer); without, it names
        the literal itself.
        """
        verdict = self.judge(addr)
        if verdict.allowed:
            return verdict.address
        raw = ip_address(addr) if isinstance(addr, str) else addr
        if raw != verdict.address:
            # Spelled the dotted way whatever the Python version's str() does for mapped addresses.
            reason = f"::ffff:{verdict.address} (IPv4-mapped {verdict.address}, {verdict.reason})"
        else:
            reason = f"{raw} ({verdict.reason})"
        if host is not None:
            reason = f"resolves to {reason}"
        zoned = isinstance(raw, IPv6Address) and raw.scope_id
        raise BlockedTarget(reason, host, None if zoned else verdict.address)

    def check_answers(self, host: str, answers: Sequence[IPAddress]) -> list[IPAddress]:
        """The addresses of a name's answer to dial (in order, without repeats), or
        BlockedTarget naming its first denied address.

        Fail closed: one denied answer refuses the whole name (docs/security.md, "the three
        choices"), except for a name whose every answer is loopback. That name is this machine
        whichever answer is dialled (``localhost`` with 127.0.0.1 and ::1, a local development
        name), so it is allowed once any of its answers is, and only those are dialled: allowing
        127.0.0.1/32 makes ``localhost`` reachable without ::1/128. A denied address is never
        dialled either way; a mixed answer (loopback or private next to a public address) is
        refused whole, as before.
        """
        vetted: list[IPAddress] = []
        refusal: BlockedTarget | None = None
        for answer in answers:
            try:
                address = self.check(answer, host=host)
            except BlockedTarget as exc:
                refusal = refusal or exc
                continue
            if address not in vetted:
                vetted.append(address)
        if refusal is not None and not (vetted and all(is_loopback(a) for a in answers)):
            raise refusal
        return vetted


def log_allow_list(log: Any, policy: AddressPolicy) -> None:
    """The start line of each process that judges targets (api, scheduler, alerter): the
    exceptions it runs with, as it reads them (host bits dropped, IPv4-mapped as IPv4), so a
    process started without the operator's ``MONITOR_ALLOW_CIDRS`` shows it. A warning when
    there are any: they open what the deny list closes."""
    networks = [str(net) for net in policy.allow_cidrs]
    if networks:
        log.warning("ssrf.allow_cidrs", networks=networks)
    else:
        log.info("ssrf.allow_cidrs", networks=[], note="empty: every denied address is refused")


# WHATWG's "ends in a number" rule: if the last label looks numeric (decimal, 0x-hex), browsers and
# inet_aton treat the whole host as an IPv4 address in some legacy encoding. We accept only the
# canonical dotted quad and reject every other such host, so no resolver ever interprets it.
_NUMERIC_LABEL = re.compile(r"(?:0[xX][0-9a-fA-F]*|[0-9]+)")
_CANONICAL_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])"
_DOTTED_QUAD = re.compile(rf"{_CANONICAL_OCTET}(?:\.{_CANONICAL_OCTET}){{3}}")
# str.isspace() and ord < 0x20, as one scan: re's \s on str patterns is the same Unicode set.
_UNSAFE_URL_CHAR = re.compile(r"[\s\x00-\x1f]")
_HOST_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")


def literal_address(host: str) -> IPAddress | None:
    """The IP address a host names literally, or None if it is a name.

    Accepts ``[v6]`` brackets and trailing dots. Non-canonical numeric forms (``2130706433``,
    ``0x7f.1``, ``0177.0.0.1``, ``127.1``) raise InvalidTarget. IPv4-mapped addresses are
    returned as written; unwrapping is the policy's job.
    """
    text = host.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
        return _ipv6_literal(text)
    if ":" in text:
        return _ipv6_literal(text)
    text = text.rstrip(".")
    labels = text.split(".")
    if not _NUMERIC_LABEL.fullmatch(labels[-1]):
        return None
    if _DOTTED_QUAD.fullmatch(text):
        # Canonical, so inet_aton reads it exactly as written; much cheaper than parsing the text.
        return IPv4Address(socket.inet_aton(text))
    raise InvalidTarget(f"non-canonical numeric host {host!r}: only a dotted quad like 192.0.2.1 is accepted")


def _ipv6_literal(text: str) -> IPv6Address:
    text = text.replace("%25", "%")
    try:
        return IPv6Address(text)
    except ValueError as exc:
        raise InvalidTarget(f"invalid IPv6 literal {text!r}") from exc


def _authority(url: str) -> str:
    rest = url.split("://", 1)[1] if "://" in url else ""
    for stop in "/?#":
        rest = rest.split(stop, 1)[0]
    return rest


def parse_target_url(url: str, *, schemes: frozenset[str] = DEFAULT_SCHEMES) -> URL:
    """Validate a check target's form and return it normalised (IDNA host, no trailing dot).

    Raises InvalidTarget with a reason a user can act on. Says nothing about the address:
    literals are judged by ``AddressPolicy``, names by ``VettedResolver``.
    """
    if _UNSAFE_URL_CHAR.search(url):
        raise InvalidTarget("URL contains whitespace or control characters")
    try:
        parsed = URL(url)
    except ValueError as exc:
        raise InvalidTarget(f"malformed URL: {exc}") from exc
    if not parsed.scheme:
        raise InvalidTarget("URL has no scheme")
    if parsed.scheme not in schemes:
        raise InvalidTarget(f"scheme {parsed.scheme!r} not allowed (use {', '.join(sorted(schemes))})")
    # Checked on the raw text too: yarl drops an empty "@" that other parsers read differently.
    if "@" in _authority(url) or parsed.raw_user is not None or parsed.raw_password is not None:
        raise InvalidTarget(
            "credentials in the URL are not allowed: put them in the auth field, not in the URL"
        )
    raw_host = parsed.raw_host
    if not raw_host:
        raise InvalidTarget("URL has no host")
    try:
        port = parsed.port
    except ValueError as exc:
        raise InvalidTarget(f"invalid port: {exc}") from exc
    if port == 0:
        raise InvalidTarget("port 0 is not a valid target port")
    if ":" in raw_host:
        literal_address(raw_host)  # validates; zone ids are left for the policy to deny
        return parsed.with_fragment(None)
    host = raw_host.rstrip(".").lower()
    if not host:
        raise InvalidTarget("URL has no host")
    if literal_address(host) is None:
        _check_hostname(host)
    if host != raw_host:  # with_host rebuilds the URL: only when normalising changed something
        parsed = parsed.with_host(host)
    return parsed.with_fragment(None) if parsed.raw_fragment else parsed


def _check_hostname(host: str) -> None:
    if len(host) > 253:
        raise InvalidTarget("host name longer than 253 characters")
    for label in host.split("."):
        if not _HOST_LABEL.fullmatch(label):
            raise InvalidTarget(f"invalid host name {host!r}")


_NOT_A_HOST = "expected a host name or an IP address (not a URL, no port)"


def normal_host(text: str) -> str:
    """A host name or IP literal as checks dial it (IDNA, lower case, no trailing dot, an IPv6
    literal without brackets). ValueError with a reason for anything else (a URL, a port)."""
    value = text.strip()
    bare = value[1:-1] if value.startswith("[") and value.endswith("]") else value
    if not bare or any(c in bare for c in "/?#@[]\\"):
        raise ValueError(_NOT_A_HOST)
    try:
        url = parse_target_url(f"http://[{bare}]/" if ":" in bare else f"http://{bare}/")
    except InvalidTarget as exc:
        # With a colon it was read as IPv6: "host:80" and "10.0.0.1:80" end up here too.
        raise ValueError(_NOT_A_HOST if ":" in bare else str(exc)) from None
    return url.raw_host or ""
