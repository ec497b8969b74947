"""DNS record check: ask one name for one record type, and judge the answers.

The query goes through ``aiodns`` (c-ares), to the servers the monitor names or, without
them, to the operator's (``MONITOR_DNS_SERVERS``, else the system's ``/etc/resolv.conf``). A
named server is a network target like any other: an IP literal (c-ares cannot resolve its own
server's name, and a name would be one more lookup to trust), judged on every check by the
SSRF guard (``net.vetting``) and refused with the texts an http check's host gets (``blocked:
10.0.0.53 (private-use 10.0.0.0/8)``) before any packet leaves. The answers are only read,
never dialled, so an answer in private space is no refusal (a split-horizon resolver will show
its internal records: an operator who has one should point ``MONITOR_DNS_SERVERS`` elsewhere).

Up means an answer with at least one record of the type (NXDOMAIN, an empty answer, SERVFAIL
or silence is down), and ``expect`` holds (``dns_records.judge``): ``answer`` (nothing more),
``contains`` (every value is among the answers), ``equals`` (the answers are exactly the
values), or ``unchanged`` (the answers are those of the baseline).

``unchanged``'s baseline is the first answer seen after the scheduler loads the monitor, and
lives in that scheduler's memory (``Baseline``): a change is down on every check until the
answers return, so it alerts whatever ``confirm_after`` is. Loading the monitor again sets a
new baseline: editing it (any PATCH: that is how a user accepts a change), resuming it, or a
scheduler restart. So a change made while the scheduler is down is not seen, and one that is
being alerted ends at a restart; ``equals`` pins known answers across all of that.

A c-ares channel has a thread of its own (pycares 5), so channels are kept per distinct
server set (``Channels``, at most ``MAX_CHANNELS``, the least recently used idle one closed
past that), not one per check or per monitor. c-ares retries a lost datagram after
``TRY_TIMEOUT_SECONDS`` (and falls over to the next named server); the monitor's timeout
bounds the whole query.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any, ClassVar

import aiodns
import pycares
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo, field_validator

from monitor.checks.base import Check, CheckContext, ResultDetails, refused
from monitor.checks.dns_records import (
    QTYPES,
    Expect,
    RecordType,
    answer_text,
    domain_name,
    expected_value,
    judge,
)
from monitor.models import CheckResult, Failure, MonitorSpec
from monitor.net.client import clip_error
from monitor.net.resolver import parse_nameserver
from monitor.net.vetting import Refused, vet_host

KIND = "dns"
# c-ares errors that mean no server answered (any other, NXDOMAIN and SERVFAIL included, is a
# reply: the network to the server works, which the connectivity guard wants to know).
UNANSWERED = frozenset({pycares.errno.ARES_ETIMEOUT, pycares.errno.ARES_ECONNREFUSED})
MAX_NAMESERVERS = 3
MAX_VALUES = 20
MAX_VALUE_LENGTH = 2048
MAX_CHANNELS = 32
TRY_TIMEOUT_SECONDS = 2.0
TRIES = 3
# What a result keeps of the answers (all of them are judged).
MAX_DETAIL_ANSWERS = 50
MAX_DETAIL_ANSWER_CHARS = 300
SYSTEM = "system"


def _upper(value: Any) -> Any:
    return value.upper() if isinstance(value, str) else value


class DnsSettings(BaseModel):
    """A DNS record monitor: ``domain`` asked for ``record_type`` records, judged by ``expect``.

    Values are written as a zone file would hold them, without TTL: ``93.184.215.14``,
    ``10 mail.example.com``, ``v=spf1 -all``, ``0 issue letsencrypt.org``, ``10 5 5060
    sip.example.com``; names compare without regard to case or a trailing dot."""

    model_config = ConfigDict(extra="forbid")

    domain: str = Field(
        min_length=1,
        max_length=255,
        description="the DNS name asked (example.com, _sip._tcp.example.com); Unicode is IDNA-encoded",
    )
    record_type: Annotated[RecordType, BeforeValidator(_upper)] = Field(
        "A", description="the record type asked"
    )
    nameservers: list[str] = Field(
        default_factory=list,
        max_length=MAX_NAMESERVERS,
        description="IP addresses (with an optional port: 192.0.2.53:5353, [2001:db8::53]:53) of the servers "
        "to ask, in order; empty: the checker's own resolvers",
    )
    expect: Expect = Field(
        "answer",
        description="answer: at least one record; contains: every value among the answers; equals: the "
        "answers are exactly the values; unchanged: the answers are those first seen since the monitor "
        "was last saved",
    )
    values: list[Annotated[str, Field(min_length=1, max_length=MAX_VALUE_LENGTH)]] = Field(
        default_factory=list,
        max_length=MAX_VALUES,
        validate_default=True,
        description="the records expect contains or equals compares with, as a zone file writes them",
    )

    @field_validator("domain")
    @classmethod
    def _domain(cls, value: str) -> str:
        return domain_name(value)

    @field_validator("nameservers")
    @classmethod
    def _nameservers(cls, value: list[str]) -> list[str]:
        servers: list[str] = []
        for text in value:
            server = nameserver(text)
            if server not in servers:
                servers.append(server)
        return servers

    @field_validator("values")
    @classmethod
    def _values(cls, value: list[str], info: ValidationInfo) -> list[str]:
        expect, record_type = info.data.get("expect"), info.data.get("record_type")
        if expect is None or record_type is None:
            return value  # reported on their own fields
        if expect in ("contains", "equals"):
            if not value:
                raise ValueError(f"expect {expect} needs at least one value")
        elif value:
            raise ValueError(f"values apply to expect contains or equals, not {expect} (send values: [])")
        out: list[str] = []
        for text in value:
            try:
                normal = expected_value(record_type, text)
            except ValueError as exc:
                raise ValueError(f"{record_type} value {text[:60]!r}: {exc}") from None
            if normal not in out:
                out.append(normal)
        return out


def nameserver(text: str) -> str:
    """A server as c-ares takes it (``192.0.2.53``, ``192.0.2.53:5353``, ``[2001:db8::53]:5353``),
    port 53 left out so one server has one spelling. ValueError if it is no IP address."""
    if not text.isprintable():
        raise ValueError("control characters are not allowed in a nameserver")
    server = parse_nameserver(text)
    host, port = server_address(server)
    return host if port == 53 else server


def server_address(server: str) -> tuple[str, int]:
    """(IP, port) of a server in c-ares' form."""
    if server.startswith("["):
        host, _, port = server[1:].partition("]:")
        return host, int(port)
    if server.count(":") == 1:
        host, _, port = server.partition(":")
        return host, int(port)
    return server, 53


class Baseline:
    """The answers ``unchanged`` compares with: set by the first answer, kept in memory."""

    __slots__ = ("answers",)

    def __init__(self) -> None:
        self.answers: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class DnsOptions:
    """The runtime form of ``DnsSettings`` (built once per load, which resets ``baseline``)."""

    domain: str
    record_type: str
    servers: tuple[str, ...] = ()
    expect: str = "answer"
    values: tuple[str, ...] = ()
    baseline: Baseline = field(default_factory=Baseline, compare=False, repr=False)

    @classmethod
    def of(cls, settings: DnsSettings) -> DnsOptions:
        return cls(
            domain=settings.domain,
            record_type=settings.record_type,
            servers=tuple(settings.nameservers),
            expect=settings.expect,
            values=tuple(sorted(settings.values)),
        )

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(server_address(s)[0] for s in self.servers)


@dataclass(slots=True)
class _Channel:
    resolver: aiodns.DNSResolver
    users: int = 0


class Channels:
    """aiodns resolvers by server set, shared by every monitor asking the same servers.

    ``limit`` bounds the idle ones kept: past it, the least recently used idle channel is
    closed (each is a c-ares channel with a thread). Bound to the loop that first used it; a
    new loop (tests) starts afresh."""

    def __init__(self, limit: int = MAX_CHANNELS, *, try_timeout: float = TRY_TIMEOUT_SECONDS) -> None:
        self._limit = limit
        self._try_timeout = try_timeout
        self._loop: asyncio.AbstractEventLoop | None = None
        self._channels: dict[tuple[str, ...], _Channel] = {}  # least recently used first

    def __len__(self) -> int:
        return len(self._channels)

    async def query(self, servers: tuple[str, ...], name: str, record_type: str) -> Any:
        """pycares' ``DNSResult`` of one query; aiodns' ``DNSError`` for an error answer."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._channels.clear()  # the old loop's channels are closed as they are collected
            self._loop = loop
        channel = self._channels.pop(servers, None)
        if channel is None:
            options: dict[str, Any] = {"timeout": self._try_timeout, "tries": TRIES}
            if servers:  # given at creation, as VettedResolver does (empty: the system's)
                options["servers"] = list(servers)
            resolver = aiodns.DNSResolver(loop=loop, **options)
            channel = _Channel(resolver)
        self._channels[servers] = channel
        channel.users += 1
        try:
            return await channel.resolver.query_dns(name, record_type)
        finally:
            channel.users -= 1
            await self._trim()

    async def _trim(self) -> None:
        while len(self._channels) > self._limit:
            idle = next((key for key, ch in self._channels.items() if ch.users == 0), None)
            if idle is None:
                return
            await self._channels.pop(idle).resolver.close()

    async def close(self) -> None:
        channels, self._channels = self._channels, {}
        for channel in channels.values():
            await channel.resolver.close()


def failure(code: int | None, domain: str, record_type: str, asked: str) -> str:
    """The cause of an error answer (aiodns' error ``code``), as the alert says it."""
    if code == aiodns.error.ARES_ENOTFOUND:
        return f"NXDOMAIN: {domain} does not exist"
    if code == aiodns.error.ARES_ENODATA:
        return f"no {record_type} records for {domain}"
    if code == aiodns.error.ARES_ESERVFAIL:
        return f"SERVFAIL: {asked} could not answer for {domain} {record_type}"
    if code == aiodns.error.ARES_EREFUSED:
        return f"REFUSED: {asked} refused to answer for {domain} {record_type}"
    if code == aiodns.error.ARES_ETIMEOUT:
        return f"no answer from {asked} for {domain} {record_type} (timed out)"
    if code == aiodns.error.ARES_ECONNREFUSED:
        return f"{asked} refused the connection (nothing listens there?)"
    if code in (aiodns.error.ARES_EBADRESP, aiodns.error.ARES_EFORMERR):
        return f"malformed answer from {asked} for {domain} {record_type}"
    return f"DNS query for {domain} {record_type} to {asked} failed (c-ares error {code})"


def _who(servers: tuple[str, ...]) -> str:
    return ", ".join(servers) if servers else "the system resolver"


class DnsDetails(ResultDetails):
    record_type: str | None = None
    nameserver: str | None = None
    answers: list[str] | None = None
    answers_total: int | None = None
    baseline: list[str] | None = None


class DnsCheck(Check):
    kind: ClassVar[str] = KIND
    Settings: ClassVar[type[BaseModel]] = DnsSettings
    Details: ClassVar[type[ResultDetails] | None] = DnsDetails

    def __init__(self) -> None:
        self.channels = Channels()

    def target(self, settings: Any) -> str:
        # RFC 4501's DNS URI: dns:[//server/]name?type=TYPE
        server = f"//{','.join(settings.nameservers)}/" if settings.nameservers else ""
        return f"dns:{server}{settings.domain}?type={settings.record_type}"

    def hosts(self, settings: Any) -> tuple[str, ...]:
        return tuple(server_address(s)[0] for s in settings.nameservers)

    def options(self, settings: dict[str, Any] | None, secrets: dict[str, Any] | None) -> DnsOptions:
        return DnsOptions.of(self.stored(settings))

    async def run(self, monitor: MonitorSpec, ctx: CheckContext, started: datetime) -> CheckResult:
        options: DnsOptions = monitor.options
        resolver = ctx.session.resolver
        # Second SSRF layer: the servers the monitor names, judged now (no packet leaves before).
        for host in options.hosts:
            try:
                await vet_host(resolver, host)
            except Refused as exc:
                return refused(monitor.id, started, exc)
        servers = options.servers or resolver.nameservers
        asked = _who(options.servers)
        details: dict[str, Any] = {
            "record_type": options.record_type,
            "nameserver": ", ".join(options.servers) or SYSTEM,
            "answers": [],
        }
        began = time.perf_counter()
        error: str | None = None
        answers: tuple[str, ...] = ()
        answered = False
        kind = Failure.ASSERTION  # of an error, unless it says otherwise below
        try:
            async with asyncio.timeout(monitor.timeout_seconds):
                result = await self.channels.query(servers, options.domain, options.record_type)
        except TimeoutError:
            error = f"timed out after {monitor.timeout_seconds:g}s waiting for {asked} to answer"
            kind = Failure.TIMEOUT
        except aiodns.error.DNSError as exc:
            code = exc.args[0] if exc.args else None
            error = failure(code, options.domain, options.record_type, asked)
            answered = code not in UNANSWERED
            kind = Failure.ASSERTION if answered else Failure.NETWORK
        else:
            answered = True
            answers, error = _answers(result, options)
        elapsed = (time.perf_counter() - began) * 1000
        if error is None:
            baseline = options.baseline
            error = judge(options.expect, answers, options.values, baseline.answers)
            if options.expect == "unchanged":
                if baseline.answers is None:
                    baseline.answers = answers
                elif error is not None:
                    details["baseline"] = _kept(baseline.answers)
        details["answers"] = _kept(answers)
        if len(answers) > MAX_DETAIL_ANSWERS:
            details["answers_total"] = len(answers)
        return CheckResult(
            monitor.id,
            started,
            ok=error is None,
            latency_ms=round(elapsed, 3),
            error=clip_error(error) if error is not None else None,
            timings={"dns_ms": round(elapsed, 3)},
            details=details,
            answered=answered,
            failure=None if error is None else kind,
        )

    async def close(self) -> None:
        await self.channels.close()


def _answers(result: Any, options: DnsOptions) -> tuple[tuple[str, ...], str | None]:
    """The sorted distinct answers of the asked type, or the cause when there are none."""
    wanted = options.record_type
    qtype = QTYPES[wanted]
    texts = {answer_text(wanted, rr.data) for rr in result.answer if rr.type == qtype}
    if texts:
        return tuple(sorted(texts)), None
    # An alias without the asked records at its end: say where the chain led.
    aliases = [answer_text("CNAME", rr.data) for rr in result.answer if rr.type == QTYPES["CNAME"]]
    cause = f"no {wanted} records for {options.domain}"
    if aliases:
        cause += f" (an alias of {aliases[-1]})"
    return (), cause


def _kept(answers: tuple[str, ...]) -> list[str]:
    return [
        a if len(a) <= MAX_DETAIL_ANSWER_CHARS else a[: MAX_DETAIL_ANSWER_CHARS - 3] + "..."
        for a in answers[:MAX_DETAIL_ANSWERS]
    ]
