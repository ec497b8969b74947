"""A fake DNS server on 127.0.0.1 (UDP), answering from a zone the test edits at run time.

Point a resolver at :attr:`DNSServer.nameserver` (the ``MONITOR_DNS_SERVERS`` form,
``127.0.0.1:PORT``). A zone maps a lower-case name to records, ``[("A", "10.0.0.5"),
("AAAA", "::1"), ("CNAME", "other.test")]``; a CNAME is followed within the zone, as a
recursive server would. Instead of records, an entry may be a callable that gets the
1-based number of A queries for that name so far (the current one included) and returns
the records: that is how a test plays a rebinding server. Unknown names get NXDOMAIN; a
known name without records of the asked type gets an empty NOERROR answer. Every query is
recorded in :attr:`FakeDNS.queries`.

The other record types are written as in a zone file, without quotes: ``("MX", "10
mail.test")``, ``("NS", "ns1.test")``, ``("TXT", "v=spf1 -all")`` (a value longer than 255
bytes is sent as several strings, as long SPF and DKIM records are), ``("SOA", "ns1.test
admin.test 2024010101 7200 3600 1209600 300")``, ``("CAA", "0 issue letsencrypt.org")``,
``("SRV", "10 5 5060 sip.test")``. :attr:`FakeDNS.rcodes` makes a name answer with another
response code (2 SERVFAIL, 5 REFUSED) and no records.

The ``dns`` fixture (import ``dns_fixture``) starts one for a test; ``start_dns()`` does the
same outside a fixture.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import cast

import pytest

Records = list[tuple[str, str]]
Zone = dict[str, Records | Callable[[int], Records]]

_TYPES = {"A": 1, "NS": 2, "CNAME": 5, "SOA": 6, "MX": 15, "TXT": 16, "AAAA": 28, "SRV": 33, "CAA": 257}
_NAMES = {v: k for k, v in _TYPES.items()}
_MAX_CNAME_HOPS = 8


def _encode_name(name: str) -> bytes:
    out = b""
    for label in filter(None, name.rstrip(".").split(".")):
        out += bytes([len(label)]) + label.encode("ascii")
    return out + b"\x00"


@dataclass
class FakeDNS(asyncio.DatagramProtocol):
    """Answers from ``zone`` (CNAME chains followed); unknown names get NXDOMAIN."""

    zone: Zone = field(default_factory=dict)
    silent: bool = False  # drop every query (a server that times out)
    rcodes: dict[str, int] = field(default_factory=dict)  # name -> response code, no records
    queries: list[tuple[str, str]] = field(default_factory=list)
    transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        if self.silent or self.transport is None:
            return
        self.transport.sendto(self._answer(data), addr)

    def lookups(self, name: str, kind: str = "A") -> int:
        """How many ``kind`` queries for ``name`` arrived so far."""
        return sum(1 for q in self.queries if q == (name.lower(), kind))

    def _answer(self, query: bytes) -> bytes:
        qid, flags = struct.unpack("!HH", query[:4])
        pos, labels = 12, []
        while query[pos]:
            labels.append(query[pos + 1 : pos + 1 + query[pos]].decode("ascii"))
            pos += 1 + query[pos]
        qtype = struct.unpack("!H", query[pos + 1 : pos + 3])[0]
        question = query[12 : pos + 5]
        name = ".".join(labels).lower()
        kind = _NAMES.get(qtype, str(qtype))
        self.queries.append((name, kind))
        answers: list[bytes] = []
        rcode = 3 if name not in self.zone else 0
        current, hops = name, 0
        if name in self.rcodes:
            rcode, current = self.rcodes[name], ""
        while current in self.zone and hops < _MAX_CNAME_HOPS:
            hops += 1
            entry = self.zone[current]
            if callable(entry):
                entry = entry(self.lookups(current))
            next_name = None
            for rtype, value in entry:
                if rtype == "CNAME":
                    answers.append(self._rr(current, rtype, _encode_name(value)))
                    next_name = value.lower()
                elif rtype == kind:
                    answers.append(self._rr(current, rtype, _rdata(rtype, value)))
            if next_name is None or kind == "CNAME":  # a CNAME query gets the alias, not its chain
                break
            current = next_name
        # QR, opcode copied, RD copied, RA set; no EDNS in the reply (allowed by RFC 6891).
        reply_flags = 0x8080 | (flags & 0x0100) | rcode
        header = struct.pack("!HHHHHH", qid, reply_flags, 1, len(answers), 0, 0)
        return header + question + b"".join(answers)

    @staticmethod
    def _rr(name: str, rtype: str, rdata: bytes) -> bytes:
        return _encode_name(name) + struct.pack("!HHIH", _TYPES[rtype], 1, 0, len(rdata)) + rdata


def _rdata(rtype: str, value: str) -> bytes:
    """A record's wire form from its zone-file text (see the module's docstring)."""
    if rtype in ("A", "AAAA"):
        return socket.inet_pton(socket.AF_INET if rtype == "A" else socket.AF_INET6, value)
    if rtype == "NS":
        return _encode_name(value)
    if rtype == "TXT":
        raw = value.encode()
        chunks = [raw[i : i + 255] for i in range(0, len(raw), 255)] or [b""]
        return b"".join(bytes([len(chunk)]) + chunk for chunk in chunks)
    fields = value.split()
    if rtype == "MX":
        return struct.pack("!H", int(fields[0])) + _encode_name(fields[1])
    if rtype == "SRV":
        return struct.pack("!HHH", *(int(f) for f in fields[:3])) + _encode_name(fields[3])
    if rtype == "SOA":
        numbers = (int(f) for f in fields[2:7])
        return _encode_name(fields[0]) + _encode_name(fields[1]) + struct.pack("!IIIII", *numbers)
    if rtype == "CAA":
        flags, tag, rest = value.split(None, 2)
        return bytes([int(flags), len(tag)]) + tag.encode() + rest.encode()
    raise ValueError(f"the fake DNS cannot serve {rtype} records")


@dataclass
class DNSServer:
    protocol: FakeDNS
    port: int
    transport: asyncio.DatagramTransport | None = None

    @property
    def nameserver(self) -> str:
        """The server in ``MONITOR_DNS_SERVERS`` form."""
        return f"127.0.0.1:{self.port}"

    @property
    def zone(self) -> Zone:
        return self.protocol.zone

    @property
    def queries(self) -> list[tuple[str, str]]:
        return self.protocol.queries

    @property
    def rcodes(self) -> dict[str, int]:
        return self.protocol.rcodes

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
            self.transport = None


async def start_dns(zone: Zone | None = None) -> DNSServer:
    """A fake DNS server on 127.0.0.1 and a free UDP port; ``close()`` it when done."""
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.create_datagram_endpoint(
        lambda: FakeDNS(zone=dict(zone or {})), local_addr=("127.0.0.1", 0)
    )
    port = transport.get_extra_info("sockname")[1]
    return DNSServer(protocol, port, transport)


# Registered as ``dns`` where imported (``from support.dns import dns_fixture``); the function
# has another name so a test's ``dns`` parameter does not shadow the import.
@pytest.fixture(name="dns")
async def dns_fixture() -> AsyncIterator[DNSServer]:
    """A fake DNS server for one test (empty zone; fill ``dns.zone``)."""
    server = await start_dns()
    try:
        yield server
    finally:
        server.close()
