"""The only resolver checks use: asks A and AAAA itself, judges every answer, returns what it judged.

The check client (client.py) calls ``vet`` once per connection and dials exactly the addresses
it returns, so judging here closes the rebinding gap between "checked" and "connected". It is
still an aiohttp resolver too (``resolve``), for any aiohttp client that must obey the same rules.

``localhost`` is never sent to a DNS server (RFC 6761): it gets the system resolver's own
answer (``getaddrinfo``, which reads /etc/hosts first), so a machine whose /etc/hosts names only
127.0.0.1 dials only 127.0.0.1, as curl there does; ``*.localhost`` gets the same answer.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable, Sequence
from ipaddress import IPv4Address, IPv6Address, ip_address
from typing import Any

import aiodns
from aiohttp.abc import AbstractResolver, ResolveResult

from .policy import AddressPolicy, BlockedTarget, InvalidTarget, IPAddress, literal_address, parse_target_url

# RFC 6761: resolvers answer these themselves; never ask an upstream server that might disagree.
# What localhost means when the system cannot say (no entry in /etc/hosts, getaddrinfo failing).
_LOCALHOST = (IPv4Address("127.0.0.1"), IPv6Address("::1"))

LocalhostLookup = Callable[[], Awaitable[Sequence[IPAddress]]]

_QTYPE_A = 1
_QTYPE_AAAA = 28


class ResolutionError(OSError):
    """The name could not be resolved (no such name, no records, server failure, timeout)."""


async def system_localhost() -> list[IPAddress]:
    """``localhost`` as the system resolver answers it (/etc/hosts, as nsswitch.conf says), A
    before AAAA as our own lookups order them; RFC 6761's 127.0.0.1 and ::1 if it cannot."""
    try:
        infos = await asyncio.get_running_loop().getaddrinfo("localhost", None, type=socket.SOCK_STREAM)
    except OSError:
        return list(_LOCALHOST)
    found: list[IPAddress] = []
    for family, _type, _proto, _name, sockaddr in infos:
        if family in (socket.AF_INET, socket.AF_INET6):
            address = ip_address(str(sockaddr[0]))
            if address not in found:
                found.append(address)
    found.sort(key=lambda address: address.version)  # stable: the system's order within a family
    return found or list(_LOCALHOST)


def parse_nameserver(text: str) -> str:
    """``host``, ``host:port``, ``v6`` or ``[v6]:port`` into c-ares' server syntax.

    The host must be an IP address: c-ares cannot resolve the name of its own server.
    """
    value = text.strip()
    port: str | None = None
    if value.startswith("["):
        host, sep, rest = value[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise ValueError(f"invalid nameserver {text!r}")
        port = rest[1:] or None
    elif value.count(":") == 1:
        host, _, port = value.partition(":")
    else:
        host = value
    try:
        addr = ip_address(host)
    except ValueError as exc:
        raise ValueError(f"nameserver {text!r} is not an IP address") from exc
    if port is not None and not (port.isdigit() and 0 < int(port) < 65536):
        raise ValueError(f"invalid nameserver port in {text!r}")
    if port is None:
        return str(addr)
    return f"[{addr}]:{port}" if addr.version == 6 else f"{addr}:{port}"


class VettedResolver(AbstractResolver):
    """An aiohttp resolver that refuses a whole name if any of its A/AAAA answers is denied.

    Owned by the caller: aiohttp does not close a resolver it was given, so call ``close()``.
    """

    def __init__(
        self,
        policy: AddressPolicy,
        nameservers: Sequence[str] = (),
        *,
        timeout: float = 5.0,
        localhost: LocalhostLookup = system_localhost,
    ) -> None:
        self._policy = policy
        self._nameservers = [parse_nameserver(ns) for ns in nameservers]
        self._timeout = timeout
        self._localhost = localhost
        # Created on first use: aiodns binds to the running loop, which may not exist yet.
        self._dns: aiodns.DNSResolver | None = None

    @property
    def policy(self) -> AddressPolicy:
        return self._policy

    @property
    def nameservers(self) -> tuple[str, ...]:
        """The operator's servers (``MONITOR_DNS_SERVERS``, in c-ares' form); empty: the system's."""
        return tuple(self._nameservers)

    def _channel(self) -> aiodns.DNSResolver:
        if self._dns is None:
            kwargs: dict[str, Any] = {"timeout": self._timeout / 2, "tries": 2}
            if self._nameservers:
                kwargs["servers"] = self._nameservers
            self._dns = aiodns.DNSResolver(loop=asyncio.get_running_loop(), **kwargs)
        return self._dns

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        try:
            addresses = await self.vet(host)
        except InvalidTarget as exc:
            # aiohttp expects OSError from a resolver; a malformed host must not escape as a bug.
            raise BlockedTarget(str(exc), host) from exc
        wanted = [a for a in addresses if _family_ok(a, family)]
        if not wanted:
            raise ResolutionError(f"{host} has no usable address for the requested family")
        return [
            ResolveResult(
                hostname=host,
                host=str(addr),
                port=port,
                family=socket.AF_INET if addr.version == 4 else socket.AF_INET6,
                proto=0,
                flags=socket.AI_NUMERICHOST | socket.AI_NUMERICSERV,
            )
            for addr in wanted
        ]

    async def vet(self, host: str) -> list[IPAddress]:
        """Judge a host now: the addresses a check would dial, or BlockedTarget / InvalidTarget.

        A literal is judged as itself; a name by all its A and AAAA answers (fail closed, but
        a name whose every answer is loopback is allowed on its allowed answers:
        ``AddressPolicy.check_answers``). ResolutionError if the name does not resolve.
        """
        literal = literal_address(host)
        if literal is not None:
            return [self._policy.check(literal)]
        name = host.rstrip(".").lower()
        if not name.isascii():
            # Callers should pass parse_target_url()'s host; IDNA-encode anyway so a Unicode
            # name is judged by the same name the connection would use.
            name = (parse_target_url(f"http://{name}/").raw_host or "").rstrip(".")
        if name == "localhost" or name.endswith(".localhost"):
            answers: Sequence[IPAddress] = await self._localhost()
        else:
            answers = await self._lookup(name)
        return self._policy.check_answers(name, answers)

    async def _lookup(self, name: str) -> list[IPAddress]:
        try:
            async with asyncio.timeout(self._timeout):
                results = await asyncio.gather(
                    self._query(name, "A"), self._query(name, "AAAA"), return_exceptions=True
                )
        except TimeoutError:
            raise ResolutionError(f"DNS lookup of {name} timed out after {self._timeout:g}s") from None
        answers: list[IPAddress] = []
        errors: list[aiodns.error.DNSError] = []
        for result in results:
            if isinstance(result, aiodns.error.DNSError):
                errors.append(result)
            elif isinstance(result, BaseException):
                raise result
            else:
                answers.extend(result)
        # One family failing while the other answered is normal (no AAAA); only the answers we
        # received can be dialled, and all of them were judged, so this does not open a gap.
        if not answers:
            raise ResolutionError(f"cannot resolve {name}: {_describe(errors)}")
        return answers

    async def _query(self, name: str, qtype: str) -> list[IPAddress]:
        # Typed as Any: aiodns 3 and 4 differ here and mypy sees only the installed one.
        dns: Any = self._channel()
        if hasattr(dns, "query_dns"):  # aiodns >= 4: query() is deprecated
            result = await dns.query_dns(name, qtype)
            want = _QTYPE_A if qtype == "A" else _QTYPE_AAAA
            # The answer section may carry the CNAME chain first; only address records count.
            return [ip_address(rr.data.addr) for rr in result.answer if rr.type == want]
        records = await dns.query(name, qtype)  # aiodns 3.x
        return [ip_address(rr.host) for rr in records]

    async def close(self) -> None:
        dns, self._dns = self._dns, None
        if dns is None:
            return
        closer = getattr(dns, "close", None)
        if closer is not None:
            await closer()
        else:
            dns.cancel()


def _family_ok(addr: IPAddress, family: int) -> bool:
    if family == socket.AF_INET:
        return addr.version == 4
    if family == socket.AF_INET6:
        return addr.version == 6
    return True


def _describe(errors: list[aiodns.error.DNSError]) -> str:
    codes = {err.args[0] for err in errors if err.args}
    if aiodns.error.ARES_ENOTFOUND in codes:
        return "no such domain"
    if codes and codes <= {aiodns.error.ARES_ENODATA}:
        return "no A or AAAA records"
    if aiodns.error.ARES_ETIMEOUT in codes:
        return "DNS server timed out"
    if errors and len(errors[0].args) > 1:
        return str(errors[0].args[1])
    return "DNS lookup failed"
