"""Whether the checker itself is cut off from the network (issue 13, point 5).

When the scheduler's own network fails, every check fails at once; without this guard every
monitor would go down and every channel would be told. The scheduler asks the guard before a
failing check changes a monitor's state; while the checker is cut off the result is recorded as
unknown, and the operator hears once that the checker was cut off and once that it is back.

Two tests, the operator's choice:

- **References** (``MONITOR_CONNECTIVITY_TARGETS``): a few targets the operator trusts to be up,
  ``https://www.example.com/`` (any HTTP answer counts, whatever its status) or ``1.1.1.1:53``
  (a TCP connection opens). Cut off when every one fails; one answering is enough. A round of
  probes runs at most once per ``cache_seconds``, callers meanwhile sharing its answer (and
  callers during a round waiting for that round), and each probe is bounded by ``probe_timeout``.
- **Share** (no references): the latest result of every monitor checked in the last ``window``
  seconds. Cut off when at least ``min_monitors`` were checked and at least ``failing_share`` of
  them failed ("9 of 10 monitors failing at once"); with fewer monitors, no conclusion either
  way. The test needs the failures to have happened: monitors are checked spread over their
  intervals, so in the first moments of an outage only a few have failed, and a monitor whose
  first failure confirms it down (``confirm_after`` 1) early in the spread may go down before the
  share is reached. References answer at once.

What counts as a failure here is the network's: a check that got any HTTP answer reached its
target, whatever the verdict, and one refused by the SSRF guard says nothing about the network
(the scheduler passes ``ok`` accordingly).

The state (:func:`settle`) changes only on a conclusive answer, so the operator is told once
each way; :meth:`Guard.run` asks again every few seconds while cut off, so the return is
noticed even when no check asks (checks that succeed never do).

Cost: ``record`` runs for every check: 0.36-0.40 us a call, the call itself included (about
0.1 us of it), against 0.2-0.3 ms of CPU for the check (``python -m bench.connectivity``,
2-core VM, 1,000 to 100,000 monitors; bench/README.md). O(1) amortised; memory, one small tuple
per check in the window (20,000 at 333 checks a second over 60 s).
"""

from __future__ import annotations

import asyncio
import enum
import ssl
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from monitor import logging as mlog
from monitor.config import parse_reference
from monitor.net.client import fetch
from monitor.net.policy import BlockedTarget, InvalidTarget
from monitor.net.resolver import ResolutionError, VettedResolver
from monitor.net.session import make_session

log = mlog.get(__name__)

# ``probe(target)``: None when the target answered, else what went wrong.
Probe = Callable[[str], Awaitable[str | None]]


class Unsure(enum.Enum):
    """The share test saw too few monitors to say anything."""

    UNSURE = "unsure"


UNSURE = Unsure.UNSURE
# A test's answer: why the checker is cut off, None (it is not), or UNSURE.
Verdict = str | None | Literal[Unsure.UNSURE]


@dataclass(frozen=True, slots=True)
class Outage:
    """The checker is cut off: why (as first found) and since when (epoch seconds)."""

    reason: str
    since: float


@dataclass(frozen=True, slots=True)
class Change:
    """What the operator is told: ``lost`` (with the reason) or ``restored`` (with the reason it
    had been lost with, ``since`` and how long it ``lasted``). ``at``: when it was found."""

    kind: Literal["lost", "restored"]
    reason: str
    since: float
    at: float

    @property
    def lasted(self) -> float:
        return self.at - self.since


def share_verdict(failing: int, seen: int, *, min_monitors: int, failing_share: float) -> Verdict:
    """The share test: ``seen`` monitors checked in the window, ``failing`` of them last failed."""
    if seen < min_monitors or seen == 0:
        return UNSURE
    if failing / seen >= failing_share:
        return f"{failing} of {seen} monitors failing at once"
    return None


def references_verdict(errors: Sequence[tuple[str, str | None]]) -> str | None:
    """The reference test over ``(target, error or None)``: cut off when every one failed."""
    if not errors or any(error is None for _, error in errors):
        return None
    return "references failing: " + "; ".join(f"{target}: {error}" for target, error in errors)


def settle(outage: Outage | None, verdict: Verdict, now: float) -> tuple[Outage | None, Change | None]:
    """The guard's state after a test's ``verdict`` at ``now``, and the change to signal.

    state      verdict  -> state                            signal
    ---------  -------     -------------------------------  ----------------------------
    connected  reason      cut off (that reason, since now) "lost" (reason, since now)
    connected  None        connected                        none
    connected  unsure      connected                        none
    cut off    reason      cut off (first reason and since) none
    cut off    unsure      cut off                          none (no evidence it is back)
    cut off    None        connected                        "restored" (reason, since, lasted)
    """
    if outage is None:
        if isinstance(verdict, str):
            return Outage(verdict, now), Change("lost", verdict, now, now)
        return None, None
    if verdict is None:
        return None, Change("restored", outage.reason, outage.since, now)
    return outage, None


class Guard:
    """Says whether the checker is cut off; see the module docstring.

    ``targets`` and ``probe``: the references and how to probe one (:class:`ReferenceProbe`);
    without targets the share test is used. ``on_change`` is called once when the checker is
    found cut off and once when it is back (synchronously, from the caller of :meth:`cut_off`
    or from :meth:`run`); an exception it raises is logged, not raised to that caller.
    Times are epoch seconds (``time.time()``), given by the caller.
    """

    def __init__(
        self,
        targets: Sequence[str] = (),
        probe: Probe | None = None,
        *,
        window: float = 60.0,
        min_monitors: int = 5,
        failing_share: float = 0.8,
        cache_seconds: float = 5.0,
        probe_timeout: float = 5.0,
        on_change: Callable[[Change], None] | None = None,
    ) -> None:
        if targets and probe is None:
            raise ValueError("reference targets need a probe")
        self._targets = tuple(targets)
        self._probe = probe
        self._window = window
        self._min_monitors = min_monitors
        self._failing_share = failing_share
        self._cache_seconds = cache_seconds
        self._probe_timeout = probe_timeout
        self._on_change = on_change
        # The share test: (at, monitor id, ok) per recorded check in order of recording, and
        # each monitor's latest of them (the same tuple); ``_failing`` counts latest ones not ok.
        self._entries: deque[tuple[float, int, bool]] = deque()
        self._latest: dict[int, tuple[float, int, bool]] = {}
        self._failing = 0
        self._outage: Outage | None = None
        self._round: asyncio.Task[str | None] | None = None
        self._probed: tuple[float, str | None] | None = None  # (when, verdict) of the last round

    @property
    def outage(self) -> Outage | None:
        """The outage under way, or None while the checker is connected."""
        return self._outage

    def record(self, monitor_id: int, ok: bool, at: float) -> None:
        """One check's outcome for the share test (``ok``: the network carried it). Call it for
        every check, before asking :meth:`cut_off` about that check. A result older than the
        monitor's latest is ignored; with references this does nothing."""
        if self._targets:
            return
        entries = self._entries
        if entries and entries[0][0] < at - self._window:
            self._expire(at - self._window)
        latest = self._latest
        previous = latest.get(monitor_id)
        if previous is not None:
            if previous[0] > at:
                return
            if not previous[2]:
                self._failing -= 1
        entry = (at, monitor_id, ok)
        latest[monitor_id] = entry
        entries.append(entry)
        if not ok:
            self._failing += 1

    def _expire(self, cutoff: float) -> None:
        # Entries leave in the order they were recorded; one recorded after a later one (a
        # check that took longer) leaves with it, at most a check's duration late.
        entries, latest = self._entries, self._latest
        while entries and entries[0][0] < cutoff:
            entry = entries.popleft()
            if latest.get(entry[1]) is entry:
                del latest[entry[1]]
                if not entry[2]:
                    self._failing -= 1

    def counts(self, now: float) -> tuple[int, int]:
        """(monitors whose latest check in the window failed, monitors checked in the window)."""
        self._expire(now - self._window)
        return self._failing, len(self._latest)

    async def cut_off(self, now: float) -> str | None:
        """Why the checker is cut off, or None. Signals a change of state (``on_change``)."""
        verdict: Verdict
        if self._targets:
            verdict = await self._references(now)
        else:
            failing, seen = self.counts(now)
            verdict = share_verdict(
                failing, seen, min_monitors=self._min_monitors, failing_share=self._failing_share
            )
        outage, change = settle(self._outage, verdict, now)
        self._outage = outage
        if change is not None:
            self._signal(change)
        if verdict is UNSURE:
            return outage.reason if outage is not None else None
        return verdict

    async def run(self, *, every: float = 5.0, clock: Callable[[], float] = time.time) -> None:
        """While cut off, test again every ``every`` seconds, so the return is found (and
        signalled) without a check asking. Runs until cancelled."""
        while True:
            await asyncio.sleep(every)
            if self._outage is not None:
                await self.cut_off(clock())

    async def close(self) -> None:
        """Cancel a round of probes in flight."""
        task, self._round = self._round, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    def _signal(self, change: Change) -> None:
        if change.kind == "lost":
            log.warning("connectivity.lost", reason=change.reason)
        else:
            log.warning("connectivity.restored", reason=change.reason, lasted_s=round(change.lasted, 3))
        if self._on_change is not None:
            try:
                self._on_change(change)
            except Exception:
                log.exception("connectivity.signal_failed", kind=change.kind)

    # -- references ------------------------------------------------------------------

    async def _references(self, now: float) -> str | None:
        probed = self._probed
        if probed is not None and now - probed[0] < self._cache_seconds:
            return probed[1]
        task = self._round
        if task is None:
            task = self._round = asyncio.get_running_loop().create_task(
                self._probe_round(now), name="connectivity-probe"
            )
        # Shielded: a caller cut short (its check's deadline) must not cancel the others' round.
        return await asyncio.shield(task)

    async def _probe_round(self, now: float) -> str | None:
        try:
            verdict = references_verdict(await self._probe_all())
            self._probed = (now, verdict)
            return verdict
        finally:
            self._round = None

    async def _probe_all(self) -> list[tuple[str, str | None]]:
        """Every reference at once; as soon as one answers, the others are not waited for."""
        pending = {
            asyncio.get_running_loop().create_task(self._probe_one(target)): index
            for index, target in enumerate(self._targets)
        }
        errors: dict[int, str] = {}
        try:
            while pending:
                done, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    index = pending.pop(task)
                    error = task.result()
                    if error is None:
                        return [(self._targets[index], None)]
                    errors[index] = error
        finally:
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending)
        return [(target, errors[index]) for index, target in enumerate(self._targets)]

    async def _probe_one(self, target: str) -> str | None:
        assert self._probe is not None
        try:
            async with asyncio.timeout(self._probe_timeout):
                return await self._probe(target)
        except TimeoutError:
            return f"timed out after {self._probe_timeout:g}s"
        except Exception as exc:  # a bug in a probe must not stop the guard; it counts as failing
            log.exception("connectivity.probe_crashed", target=target)
            return f"internal error: {type(exc).__name__}"


class ReferenceProbe:
    """``probe(target)`` over the network, for a :class:`Guard`, through the checks' SSRF guard:
    names are resolved and judged by the scheduler's ``VettedResolver``, literals by its policy
    (``MONITOR_ALLOW_CIDRS`` lets the operator reach private ranges), and exactly a vetted
    address is dialled.

    A URL is fetched by the checks' client (``fetch``, response head only): any HTTP answer means
    reachable. It uses a session of its own, so a probe never waits for a slot held by checks
    (which, while the network is down, all wait for their timeouts). ``host:port``: a TCP
    connection to the first vetted address that takes it, closed at once. ``timeout`` bounds a
    probe; keep it below the guard's ``probe_timeout``, so the error names the phase it cut.
    Close it on shutdown (not the resolver: its owner does that).
    """

    def __init__(
        self,
        resolver: VettedResolver,
        *,
        timeout: float = 4.0,
        ssl_context: ssl.SSLContext | None = None,
        limit: int = 16,
    ) -> None:
        self._resolver = resolver
        self._timeout = timeout
        self._session = make_session(resolver, limit=limit, ssl_context=ssl_context, max_targets=64)

    async def __call__(self, target: str) -> str | None:
        try:
            reference = parse_reference(target)
        except ValueError as exc:
            return f"invalid target: {exc}"
        if reference.url is not None:
            got = await fetch(
                self._session, self._resolver.policy, reference.url, timeout=self._timeout, read_body=False
            )
            return got.error
        try:
            async with asyncio.timeout(self._timeout):
                return await self._connect(reference.host, reference.port)
        except TimeoutError:
            return f"timed out after {self._timeout:g}s connecting to {reference.host} port {reference.port}"

    async def _connect(self, host: str, port: int) -> str | None:
        try:
            addresses = await self._resolver.vet(host)
        except BlockedTarget as exc:
            return f"blocked: {host} {exc.reason}" if exc.host else f"blocked: {exc.reason}"
        except InvalidTarget as exc:
            return f"blocked: {host} {exc}"
        except ResolutionError as exc:
            return str(exc)
        except OSError as exc:
            return f"cannot resolve {host}: {exc}"
        loop = asyncio.get_running_loop()
        failures: list[str] = []
        for address in addresses:
            try:
                transport, _ = await loop.create_connection(asyncio.Protocol, str(address), port)
            except OSError as exc:
                # Worded as the checks' client words it.
                if isinstance(exc, ConnectionRefusedError):
                    failures.append(f"refused by {address} port {port}")
                else:
                    failures.append(f"{address} port {port}: {exc.strerror or exc}")
                continue
            transport.close()
            return None
        return f"connection failed: {'; '.join(failures)}"

    async def close(self) -> None:
        await self._session.close()
