"""The HTTP client every check uses: vetted resolution, exactly the vetted address dialled, capped reads.

``fetch`` turns everything the target can do wrong into a ``FetchResult`` with an ``error``
string, so a hostile or broken target can fail a check but never crash the caller.

It speaks HTTP/1.1 itself (``http1.Exchange``, over httptools' C parser) rather than through
aiohttp: a check is one request on a fresh connection, and aiohttp's pool, streams, tracing and
header objects cost twice the socket work itself, which alone broke the scheduler's CPU budget
(issue 4). Each hop resolves once (names through ``VettedResolver.vet``, literals judged by the
policy), then dials exactly a vetted address; TLS is started on that socket with the URL's name
for SNI and the certificate check (``hop.py``). A server that answers only in HTTP/2 gets
HTTP/2 (``http2.H2Exchange``, on the h2 library) on a connection dialled and vetted the same
way, with the same caps, timings and texts; HTTP/1.1 stays the check's first choice.

Timings, in ms from the start of each hop (``time.perf_counter`` marks): ``dns_ms`` (names
only), ``connect_ms`` (TCP), ``tls_ms`` (the handshake, https only), ``ttfb_ms`` (first byte of
the final response head, after any 1xx), ``total_ms`` (response complete, or its head when the
body is not read).

A timeout names the phase it cut (resolving, connecting, the TLS handshake, waiting for the
response head, reading the body): "timed out" alone does not tell a user whether nothing
answered or a body stalled after its 200.

After each TLS handshake of the monitored URL itself (an https URL's first hop), ``certificate``
holds the peer's leaf certificate (``certificate.PeerCertificate``: expiry, subject, issuer),
whether or not it was verified. A redirect to another URL does not replace it: the certificate
that matters is the one of the host the user monitors, and an http URL that redirects to https
has none. A failed handshake leaves it None (the error says why), and so does plain http.

Credentials (``credentials``: auth and sensitive headers) go to the URL's own origin only; a
redirect to another origin drops them for the rest of the fetch, as ``Authorization`` and
``Cookie`` given in ``headers`` are.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from yarl import URL

from monitor.aio import Deadline

from .certificate import PeerCertificate
from .hop import Failed as _Failed
from .hop import H2Only, Request, http1, http2
from .http1 import REDIRECT_STATUSES
from .policy import AddressPolicy, BlockedTarget, InvalidTarget
from .resolver import VettedResolver
from .session import HttpSession, make_session
from .target import TOKEN, InvalidRequest, Target
from .vetting import Refused, vet_host

__all__ = ["FetchResult", "HttpSession", "PeerCertificate", "fetch", "make_session"]

# Credentials are meant for the origin the user configured, never for whoever it redirects to.
_ORIGIN_BOUND_HEADERS = frozenset({"authorization", "cookie", "proxy-authorization", "host"})
_NONE: frozenset[bytes] = frozenset()
_TIMING_KEYS = ("dns_ms", "connect_ms", "tls_ms", "ttfb_ms", "total_ms")


@dataclass(slots=True)
class FetchResult:
    """What one fetch saw.

    ``ok_transport`` is True only when a complete response head arrived, and the body too
    when it was read; ``error`` is then None. ``status`` can be set with an error too (a body
    that broke off). ``body`` holds at most ``max_body_bytes`` decoded bytes (``truncated``:
    there was more); ``headers`` the values of the fields asked for by name (lower case);
    ``tls_verified`` is False when an https certificate was not checked (``tls_verify=False``);
    ``peer`` is the IP actually dialled; ``certificate`` is the leaf certificate of the first
    hop's TLS handshake (None for http, or when the handshake did not complete);
    ``http_version`` is the final hop's protocol ("1.1", or "2").
    """

    status: int | None
    ok_transport: bool
    error: str | None
    location: str | None
    final_url: str
    elapsed_ms: float
    timings: dict[str, float | None]
    blocked: bool
    body: bytes = b""
    peer: str | None = None
    truncated: bool = False
    headers: dict[str, tuple[str, ...]] | None = None
    content_type: str | None = None
    tls_verified: bool = True
    certificate: PeerCertificate | None = None
    http_version: str = "1.1"  # "2" where the server spoke nothing else (hop.py)
    phase: str = ""  # where the fetch is, for a timeout's message
    # The URL cannot be fetched as written ("invalid target: ..."); the timeout cut the fetch.
    invalid: bool = False
    timed_out: bool = False


async def fetch(
    session: HttpSession,
    policy: AddressPolicy,
    url: str,
    *,
    method: str = "GET",
    timeout: float,  # noqa: ASYNC109 - the check's own budget, applied by Deadline below
    follow_redirects: bool = False,
    max_redirects: int = 5,
    headers: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
    credentials: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
    body: bytes | None = None,
    read_body: bool = True,
    max_body_bytes: int = 1_048_576,
    tls_verify: bool = True,
    header_names: frozenset[str] = frozenset(),
) -> FetchResult:
    """Fetch ``url`` once (or along its redirects) and report what happened; never raises for
    anything the target does. ``timeout`` bounds the whole fetch, redirects and body included.

    ``read_body=False`` stops at the final response head (a status check needs no more).
    Otherwise at most ``max_body_bytes`` of the decoded body are read; a longer body is cut
    there (``truncated``), which is not an error. ``header_names`` (lower case): response
    fields whose values to report. ``tls_verify=False`` skips the certificate check.
    """
    if session.closed:
        raise RuntimeError("fetch on a closed session")
    started = time.perf_counter()
    # Filled in as the fetch goes, so a failure or timeout mid-way reports the hop it stopped on.
    got = FetchResult(None, False, None, None, url, 0.0, dict.fromkeys(_TIMING_KEYS), False)
    error: str | None = None
    try:
        target = session.target(url)
    except InvalidTarget as exc:
        error, got.invalid = f"invalid target: {exc}", True
    else:
        got.final_url = target.text
        loop = asyncio.get_running_loop()
        deadline = Deadline(loop, timeout)
        try:
            if not session.slots.try_acquire():
                got.phase = "waiting for a free check slot"
                await session.slots.acquire()
            try:
                got.body = await _follow(
                    loop,
                    session,
                    policy,
                    target,
                    got,
                    Request(
                        method=method.upper(),
                        headers=dict(headers) if headers else {},
                        credentials=dict(credentials) if credentials else {},
                        body=body,
                        read_body=read_body,
                        max_body=max_body_bytes,
                        ssl_context=session.ssl_context if tls_verify else session.insecure_ssl_context,
                        header_names=frozenset(n.encode() for n in header_names) if header_names else _NONE,
                    ),
                    follow_redirects=follow_redirects,
                    max_redirects=max_redirects,
                )
            finally:
                session.slots.release()
        except _Failed as exc:
            error, got.blocked = exc.message, exc.blocked
        except asyncio.CancelledError:
            if not deadline.caused():
                raise
            error, got.timed_out = f"timed out after {timeout:g}s {got.phase}".rstrip(), True
        finally:
            deadline.cancel()
    if error is not None:
        got.error = clip_error(error)
    else:
        got.ok_transport = True
    got.elapsed_ms = (time.perf_counter() - started) * 1000
    return got


def clip_error(text: str, limit: int = 300) -> str:
    # Errors quote target-controlled bytes (Location, parser messages); they end up in the
    # database and in alert messages, so keep them short and printable.
    clean = "".join(ch if ch.isprintable() else "?" for ch in text)
    return clean if len(clean) <= limit else clean[: limit - 3] + "..."


async def _follow(
    loop: asyncio.AbstractEventLoop,
    session: HttpSession,
    policy: AddressPolicy,
    target: Target,
    got: FetchResult,
    request: Request,
    *,
    follow_redirects: bool,
    max_redirects: int,
) -> bytes:
    method = request.method
    if method != "GET" and not TOKEN.fullmatch(method):
        raise _Failed(f"invalid request to {target.text}: invalid method {method!r}")
    for hop in range(max_redirects + 1):
        if hop:
            got.final_url = target.text
            got.status = got.location = got.peer = got.content_type = None
            got.http_version = "1.1"
            got.headers, got.truncated = None, False
            got.timings = dict.fromkeys(_TIMING_KEYS)
        try:
            body = await _hop(
                loop, session, policy, target, got, request, follow_redirects=follow_redirects, first=not hop
            )
        except _Failed as exc:
            if hop and exc.blocked:  # name the hop: the monitor's own URL was allowed
                raise _Failed(f"{exc.message} after a redirect to {target.text}", blocked=True) from exc
            raise
        if not (follow_redirects and got.status in REDIRECT_STATUSES and got.location):
            return body
        next_target = _next_hop(target, got.location)
        if next_target.origin != target.origin:
            request.credentials = {}
            request.headers = {
                k: v for k, v in request.headers.items() if k.lower() not in _ORIGIN_BOUND_HEADERS
            }
        if got.status == 303 or (got.status in (301, 302) and request.method == "POST"):
            if request.method != "HEAD":
                request.method = "GET"
            request.body = None  # as browsers do: the new request has no body, nor its type
            request.headers = {k: v for k, v in request.headers.items() if k.lower() != "content-type"}
        target = next_target
    raise _Failed(f"too many redirects (more than {max_redirects})")


async def _hop(
    loop: asyncio.AbstractEventLoop,
    session: HttpSession,
    policy: AddressPolicy,
    target: Target,
    got: FetchResult,
    request: Request,
    *,
    follow_redirects: bool,
    first: bool,
) -> bytes:
    """One request to ``target``: judge, resolve, then dial, send and read (``hop``): in
    HTTP/1.1, or in HTTP/2 where the server speaks nothing else. Raises _Failed. The first
    hop records the peer's certificate (``got.certificate``)."""
    started = time.perf_counter()
    if target.literal is not None:
        try:
            addresses = [target.dial_literal(policy)]
        except BlockedTarget as exc:
            raise _Failed(f"blocked: {exc.reason}", blocked=True) from exc
    else:
        got.phase = f"resolving {target.host}"
        addresses = await _resolve(session.resolver, target.host, got.timings)
    headers = {**request.headers, **request.credentials} if request.credentials else request.headers
    if target.h2_only:  # its last check found it h2-only
        body = await _h2(
            loop, session, target, got, request, headers, addresses, follow_redirects, first, started
        )
        if body is not None:
            return body
    try:
        data = target.request(request.method, headers, request.body)
    except InvalidRequest as exc:
        raise _Failed(f"invalid request to {target.text}: {exc}") from exc
    try:
        return await http1(
            loop,
            session,
            target,
            got,
            request,
            addresses,
            data,
            follow_redirects=follow_redirects,
            first=first,
            started=started,
        )
    except H2Only:
        assert got.peer is not None  # the address that answered in HTTP/2
        body = await _h2(
            loop,
            session,
            target,
            got,
            request,
            headers,
            [got.peer],
            follow_redirects,
            first,
            started,
            known=False,
        )
        assert body is not None
        return body


async def _h2(
    loop: asyncio.AbstractEventLoop,
    session: HttpSession,
    target: Target,
    got: FetchResult,
    request: Request,
    headers: dict[str, str],
    addresses: list[str],
    follow_redirects: bool,
    first: bool,
    started: float,
    *,
    known: bool = True,
) -> bytes | None:
    """``hop.http2`` with the request's fields; ``known``: the target's memo sent us."""
    try:
        fields = target.h2_fields(request.method, headers, request.body)
    except InvalidRequest as exc:
        raise _Failed(f"invalid request to {target.text}: {exc}") from exc
    return await http2(
        loop,
        session,
        target,
        got,
        request,
        fields,
        addresses,
        follow_redirects=follow_redirects,
        first=first,
        started=started,
        known=known,
    )


async def _resolve(resolver: VettedResolver, host: str, marks: dict[str, float | None]) -> list[str]:
    """One fresh lookup whose every answer is judged (fail closed): the addresses to dial.
    Nothing else resolves the name, so what was judged is what is dialled."""
    started = time.perf_counter()
    try:
        return await vet_host(resolver, host)
    except Refused as exc:  # the same texts as every other check type's (vetting.py)
        raise _Failed(exc.message, blocked=exc.blocked) from exc
    finally:
        marks["dns_ms"] = (time.perf_counter() - started) * 1000


def _next_hop(current: Target, location: str) -> Target:
    # Hops are parsed afresh, not through the session's memo: a Location is the target's to
    # choose, and must not crowd out the monitors' own URLs.
    try:
        return Target.parse(str(current.url.join(URL(location))))
    except (InvalidTarget, ValueError) as exc:
        raise _Failed(f"redirect to invalid target {location!r}: {exc}") from exc
