"""Ping (ICMP echo) check: a few echo requests to the vetted address, judged by loss.

Some hosts answer nothing else a monitor could ask (routers, printers, a VPN's far end), and a
ping says whether the host is on the network at all. Each check resolves ``host`` through the
SSRF guard (``net.vetting.vet_host``: the same ``blocked:`` refusals as http) and sends
``count`` echo requests, 200 ms apart, to the first vetted address only (IPv4 first when a
name has both). Up unless every echo went unanswered or more than ``max_loss_percent`` of them
were lost (default 50: one lost reply in three is routine on a healthy path, where routers and
busy hosts drop ICMP first, and ``confirm_after`` already asks for failures in a row; a host
that loses most of its echoes is broken for anything else). ``latency_ms`` is the average round
trip, so the common ``degraded_above_ms`` reads it; ``details`` holds the counts and the round
trips (min, avg, max).

Echoes go one at a time, each waiting its share of the monitor's timeout for its reply
(``plan``), as ``icmplib.async_ping`` does; the loop is ours, on icmplib's sockets, because
async_ping swallows a failed send (a host without a route read as 0 % loss) and the ICMP error
that came back instead of a reply (host unreachable), which are the cause an operator needs.

Sockets: unprivileged ICMP sockets (``SOCK_DGRAM``, the kernel keeps the identifiers apart;
allowed when the process's group is within ``net.ipv4.ping_group_range``, which systemd's
sysctl defaults open to every group) are tried first, raw ones (``CAP_NET_RAW``) otherwise,
once per process and address family (``icmp_mode``). A raw socket sees every ICMP packet the
host receives, so it costs more per check. If neither is allowed, every check fails with the
cause saying which sysctl to set (docs/check-types.md).
"""

from __future__ import annotations

import asyncio
import errno
import os
import re
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar

from icmplib import AsyncSocket, ICMPRequest, ICMPv4Socket, ICMPv6Socket
from icmplib.exceptions import ICMPError, ICMPLibError, TimeoutExceeded
from icmplib.utils import unique_identifier
from pydantic import BaseModel, ConfigDict, Field, StrictInt

from monitor import logging as mlog
from monitor.checks.base import Check, CheckContext, Host, ResultDetails, refused
from monitor.models import CheckResult, Failure, MonitorSpec
from monitor.net.client import clip_error
from monitor.net.policy import literal_address
from monitor.net.vetting import Refused, vet_host

log = mlog.get(__name__)

KIND = "ping"
DEFAULT_COUNT = 3
MAX_COUNT = 10
DEFAULT_MAX_LOSS_PERCENT = 50.0
# Between one reply (or its wait running out) and the next echo, as ping -i 0.2: the shortest
# interval ping(8) allows an unprivileged user, so no host takes it for a flood.
INTERVAL_SECONDS = 0.2
# The share of the timeout the echoes' waits may use; the rest is slack for the loop itself.
WAIT_SHARE = 0.9
PING_GROUP_RANGE = "/proc/sys/net/ipv4/ping_group_range"
_ERRNO_PREFIX = re.compile(r"^\[Errno -?\d+\] ")
_SOCKET_FAMILIES = {4: (socket.AF_INET, socket.IPPROTO_ICMP), 6: (socket.AF_INET6, socket.IPPROTO_ICMPV6)}


class PingSettings(BaseModel):
    """A ping (ICMP echo) monitor: ``count`` echo requests to ``host`` at each check; down when
    none is answered or more than ``max_loss_percent`` of them are lost. Its latency is the
    average round trip."""

    model_config = ConfigDict(extra="forbid")

    host: Host = Field(
        description="host name or IP address (v4 or v6) to ping; a name is resolved at each check "
        "and its first allowed address pinged",
    )
    count: StrictInt = Field(
        DEFAULT_COUNT, ge=1, le=MAX_COUNT, description="echo requests per check, 200 ms apart"
    )
    max_loss_percent: float = Field(
        DEFAULT_MAX_LOSS_PERCENT,
        strict=True,
        ge=0,
        lt=100,
        description="down when more of the echoes than this are lost (no reply at all is always down)",
    )


@dataclass(frozen=True, slots=True)
class PingOptions:
    """A ping monitor's runtime options (``PingCheck.options``)."""

    host: str
    count: int = DEFAULT_COUNT
    max_loss_percent: float = DEFAULT_MAX_LOSS_PERCENT
    named: bool = True  # a name (resolved at each check), not an IP literal


# -- the pure part ------------------------------------------------------------------------


def plan(budget: float, count: int) -> tuple[float, float]:
    """(seconds between echoes, seconds each waits for its reply) for ``count`` echoes within
    ``budget`` seconds: all of them, lost or not, fit in ``WAIT_SHARE`` of it."""
    spacing = min(INTERVAL_SECONDS, budget / (4 * count))
    wait = (budget * WAIT_SHARE - (count - 1) * spacing) / count
    return spacing, wait


@dataclass(slots=True)
class Echoes:
    """What one check's echoes saw, filled in as they go (a timeout keeps what came back)."""

    address: str
    count: int
    sent: int = 0
    rtts: list[float] = field(default_factory=list)  # ms, one per reply
    problem: str | None = None  # the first error instead of a send or a reply

    def note(self, problem: str) -> None:
        if self.problem is None:
            self.problem = _ERRNO_PREFIX.sub("", problem)

    @property
    def loss_percent(self) -> float:
        return round(100 * (self.count - len(self.rtts)) / self.count, 1)


def judge(echoes: Echoes, max_loss_percent: float) -> str | None:
    """The cause of a down, or None when the host is up. Echoes not sent count as lost."""
    count, address, received = echoes.count, echoes.address, len(echoes.rtts)
    if received == 0:
        if echoes.sent == 0 and echoes.problem:
            return f"cannot send to {address}: {echoes.problem} ({count} of {count} packets not sent)"
        cause = f"no reply from {address} ({count} of {count} packets lost)"
        return f"{cause}: {echoes.problem}" if echoes.problem else cause
    loss = echoes.loss_percent
    if loss > max_loss_percent:
        return f"{loss:g} % packet loss from {address} (above {max_loss_percent:g} %)"
    return None


def details(echoes: Echoes) -> dict[str, Any]:
    """The figures kept with the result (``checks.details``)."""
    rtts = echoes.rtts
    return {
        "address": echoes.address,
        "sent": echoes.sent,
        "received": len(rtts),
        "loss_percent": echoes.loss_percent,
        "rtt_min_ms": round(min(rtts), 3) if rtts else None,
        "rtt_avg_ms": round(sum(rtts) / len(rtts), 3) if rtts else None,
        "rtt_max_ms": round(max(rtts), 3) if rtts else None,
    }


class IcmpUnavailable(Exception):
    """This process may open no ICMP socket of a family; the message says what to configure."""


def icmp_mode(family: int, open_socket: Callable[[int, int, int], socket.socket] = socket.socket) -> bool:
    """Whether echoes of ``family`` (4 or 6) need a raw socket (True) or an unprivileged one
    does (False). Raises IcmpUnavailable when neither may be opened."""
    af, proto = (
        (socket.AF_INET6, socket.IPPROTO_ICMPV6) if family == 6 else (socket.AF_INET, socket.IPPROTO_ICMP)
    )
    for privileged, kind in ((False, socket.SOCK_DGRAM), (True, socket.SOCK_RAW)):
        try:
            open_socket(af, kind, proto).close()
        except PermissionError:
            continue
        except OSError as exc:
            if exc.errno in (errno.EAFNOSUPPORT, errno.EPROTONOSUPPORT):
                raise IcmpUnavailable(f"cannot ping: IPv{family} is not available on this host") from exc
            raise IcmpUnavailable(f"cannot open an ICMP socket: {exc.strerror or exc}") from exc
        return privileged
    raise IcmpUnavailable(not_permitted(os.getegid(), _ping_group_range()))


def not_permitted(gid: int, group_range: str) -> str:
    """The cause every ping check reports when the process may not send ICMP at all."""
    return (
        f"ping not permitted: group {gid} is outside net.ipv4.ping_group_range ({group_range}) and "
        'the process lacks CAP_NET_RAW; set sysctl net.ipv4.ping_group_range="0 2147483647" '
        "(see docs/check-types.md, ping)"
    )


def _ping_group_range() -> str:
    try:
        with open(PING_GROUP_RANGE) as f:
            return " ".join(f.read().split())
    except OSError:
        return "unreadable"


# -- the I/O part -------------------------------------------------------------------------


async def send_echoes(echoes: Echoes, *, privileged: bool, spacing: float, wait: float) -> None:
    """Send ``echoes.count`` echo requests one at a time, each waiting up to ``wait`` seconds for
    its reply, and record what happened in ``echoes``. ICMPLibError if no socket opens."""
    family = ICMPv6Socket if ":" in echoes.address else ICMPv4Socket
    ident = unique_identifier()  # raw sockets see every reply: tell ours apart
    with AsyncSocket(family(None, privileged)) as sock:
        for sequence in range(echoes.count):
            if sequence:
                await asyncio.sleep(spacing)
            request = ICMPRequest(destination=echoes.address, id=ident, sequence=sequence)
            try:
                sock.send(request)
            except ICMPLibError as exc:  # no route, no such interface: the packet never left
                echoes.note(str(exc))
                continue
            echoes.sent += 1
            try:
                reply = await sock.receive(request, wait)
                reply.raise_for_status()
            except TimeoutExceeded:
                continue
            except ICMPError as exc:  # an ICMP error instead of the reply (raw sockets only)
                echoes.note(str(exc))
                continue
            echoes.rtts.append((reply.time - request.time) * 1000)


class PingDetails(ResultDetails):
    address: str | None = None
    sent: int | None = None
    received: int | None = None
    loss_percent: float | None = None
    rtt_min_ms: float | None = None
    rtt_avg_ms: float | None = None
    rtt_max_ms: float | None = None


class PingCheck(Check):
    kind: ClassVar[str] = KIND
    Settings: ClassVar[type[BaseModel]] = PingSettings
    Details: ClassVar[type[ResultDetails] | None] = PingDetails

    def __init__(self, decide: Callable[[int], bool] = icmp_mode) -> None:
        # Per address family: whether echoes need a raw socket, decided on first use.
        self._decide = decide
        self._privileged: dict[int, bool] = {}

    def target(self, settings: PingSettings) -> str:
        host = settings.host
        return f"ping://[{host}]" if ":" in host else f"ping://{host}"

    def hosts(self, settings: PingSettings) -> tuple[str, ...]:
        return (settings.host,)

    def options(self, settings: dict[str, Any] | None, secrets: dict[str, Any] | None) -> PingOptions:
        valid: PingSettings = self.stored(settings)
        named = literal_address(valid.host) is None
        return PingOptions(valid.host, valid.count, valid.max_loss_percent, named)

    def privileged(self, family: int) -> bool:
        """Whether ``family``'s echoes need a raw socket, decided once (IcmpUnavailable)."""
        decided = self._privileged.get(family)
        if decided is None:
            decided = self._privileged[family] = self._decide(family)
            log.info("ping.sockets", family=f"IPv{family}", privileged=decided)
            if decided:
                # Every raw ICMP socket sees every ICMP packet, so the cost of a ping check grows
                # with the checks in flight: at 200 ping checks/s on raw sockets the scheduler's
                # core was full (bench/README.md, issue 14). Unprivileged sockets do not.
                log.warning(
                    "ping.raw_sockets",
                    family=f"IPv{family}",
                    advice='set net.ipv4.ping_group_range="0 2147483647" (many ping monitors cost '
                    "far more on raw sockets; docs/check-types.md, ping)",
                )
        return decided

    async def run(self, monitor: MonitorSpec, ctx: CheckContext, started: datetime) -> CheckResult:
        options: PingOptions = monitor.options
        begun = time.perf_counter()
        timings: dict[str, float | None] = {}
        try:
            addresses = await vet_host(ctx.session.resolver, options.host)
        except Refused as exc:
            return refused(monitor.id, started, exc)
        finally:
            if options.named:
                timings["dns_ms"] = round((time.perf_counter() - begun) * 1000, 3)
        echoes = Echoes(addresses[0], options.count)
        family = 6 if ":" in echoes.address else 4
        try:
            privileged = self.privileged(family)
        except IcmpUnavailable as exc:
            return CheckResult(
                monitor.id,
                started,
                ok=False,
                error=clip_error(str(exc)),
                timings=timings,
                failure=Failure.CHECKER,
            )
        budget = max(0.001, monitor.timeout_seconds - (time.perf_counter() - begun))
        spacing, wait = plan(budget, options.count)
        try:
            async with asyncio.timeout(budget):
                await send_echoes(echoes, privileged=privileged, spacing=spacing, wait=wait)
        except TimeoutError:
            pass  # the echoes not answered by now count as lost
        except ICMPLibError as exc:  # the socket itself: permissions changed since the decision
            self._privileged.pop(family, None)
            error = f"cannot open an ICMP socket: {exc}"
            return CheckResult(
                monitor.id,
                started,
                ok=False,
                error=clip_error(error),
                timings=timings,
                failure=Failure.CHECKER,
            )
        cause = judge(echoes, options.max_loss_percent)
        figures = details(echoes)
        return CheckResult(
            monitor.id,
            started,
            ok=cause is None,
            latency_ms=figures["rtt_avg_ms"],
            error=clip_error(cause) if cause else None,
            timings=timings,
            details=figures,
            answered=bool(figures["received"]),
            failure=None if not cause else Failure.ASSERTION if figures["received"] else Failure.NETWORK,
        )
