"""What every channel kind shares: its description on the registry, what a send may use, and
the error that says whether retrying can help.

A kind is data plus three functions (:class:`ChannelKind`): the settings model the API
validates, a pure ``compose`` (events to the channel's payload), a ``send`` that classifies
the destination's answer, and the limits the shared pacer keeps for it. Ordering, coalescing,
pacing and retries live in the core (``monitor.alerter.dispatch`` and ``service``), the same
for every kind.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

import aiohttp
from pydantic import BaseModel, SecretStr

from monitor.net.policy import InvalidTarget, parse_target_url

if TYPE_CHECKING:
    from monitor.config import Settings
    from monitor.net.client import HttpSession
    from monitor.net.policy import AddressPolicy
    from monitor.net.resolver import VettedResolver


class DeliveryError(Exception):
    """A send that did not go. ``permanent``: retrying cannot help. ``retry_after``: the
    destination's own wait. ``throttled``: it refused us for going too fast (a 429), which is
    waiting, not a failed attempt."""

    def __init__(
        self, message: str, *, permanent: bool, retry_after: float | None = None, throttled: bool = False
    ) -> None:
        super().__init__(message)
        self.permanent = permanent
        self.retry_after = retry_after
        self.throttled = throttled and not permanent


class DestinationMoved(DeliveryError):
    """The destination answered with its new address (a Telegram group upgraded to a
    supergroup gets a new chat id): send there, and remember it, rather than give up."""

    def __init__(self, message: str, *, moved_to: str) -> None:
        super().__init__(message, permanent=False)
        self.moved_to = moved_to


@dataclass(frozen=True)
class Bucket:
    """At most ``count`` messages in any ``per`` seconds for ``key``.

    E.g. a Telegram chat: ``Bucket("telegram:chat:<id>", 1, 1.05)``; a Telegram group:
    ``Bucket("telegram:group:<id>", 20, 61)``; a bot: ``Bucket("telegram:bot:<id>", 30, 1)``;
    a Discord webhook: 5 per 2 s; a Slack webhook: 1 per 1 s.
    """

    key: str
    count: int
    per: float

    def __post_init__(self) -> None:
        if not self.key:
            raise ValueError("a bucket needs a key")
        if self.count < 1:
            raise ValueError(f"bucket {self.key!r}: count must be at least 1, not {self.count}")
        if not self.per > 0:
            raise ValueError(f"bucket {self.key!r}: per must be positive, not {self.per}")

    @property
    def window_us(self) -> int:
        return math.ceil(self.per * 1_000_000)


@dataclass(frozen=True, slots=True)
class Reply:
    """A destination's answer: status, the response fields asked for (lower case), the body."""

    status: int
    headers: Mapping[str, tuple[str, ...]]
    body: bytes

    def header(self, name: str) -> str | None:
        values = self.headers.get(name.lower())
        return values[-1] if values else None

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def text(self, limit: int = 200) -> str:
        return self.body[:limit].decode("utf-8", "replace").strip()


# Response fields any kind may need to judge an answer (waits and rate limits).
REPLY_HEADERS = frozenset(
    {"retry-after", "x-ratelimit-reset-after", "x-ratelimit-remaining", "x-ratelimit-scope", "content-type"}
)


class WebClient:
    """POSTs to user-supplied URLs through the checks' SSRF-safe client: the address is resolved
    and vetted by us and the vetted IP dialled, so a channel URL cannot reach the network the
    alerter runs in, exactly as a monitor's URL cannot. Errors never carry the URL (a Slack or
    Discord webhook URL is itself the secret)."""

    def __init__(self, session: HttpSession, policy: AddressPolicy, *, timeout: float = 15.0) -> None:
        self._session = session
        self._policy = policy
        self._timeout = timeout

    async def post(self, what: str, url: str, body: bytes, headers: Mapping[str, str]) -> Reply:
        from monitor.net.client import fetch

        got = await fetch(
            self._session,
            self._policy,
            url,
            method="POST",
            timeout=self._timeout,
            headers=headers,
            body=body,
            read_body=True,
            max_body_bytes=64 * 1024,
            header_names=REPLY_HEADERS,
        )
        if got.status is None:
            # A refused address is the user's setting at fault: retrying cannot make it allowed.
            raise DeliveryError(f"{what} unreachable: {got.error}", permanent=got.blocked)
        return Reply(got.status, got.headers or {}, got.body)


async def _ignore_move(kind: str, field: str, old: str, new: str) -> None:
    return None


@dataclass
class SendContext:
    """What a send may use: the alerter's own HTTP session for APIs the operator configured
    (Telegram's base URL), the guarded client for user-supplied URLs (and ``resolver``, the
    same vetted resolver, for hosts a kind dials itself: SMTP), the settings, ``reveal``
    to open a sealed secret of the channel, and for a destination that moved (a Telegram group
    became a supergroup): ``moves`` (destination -> its new address) and ``on_moved(kind,
    field, old, new)``, which updates the stored channels."""

    http: aiohttp.ClientSession
    web: WebClient
    settings: Settings
    reveal: Callable[[str], str] = field(default=lambda value: value)
    moves: dict[str, str] = field(default_factory=dict)
    on_moved: Callable[[str, str, str, str], Awaitable[None]] = _ignore_move
    # For kinds that dial user-supplied hosts themselves (SMTP): the checks' vetted resolver.
    resolver: VettedResolver | None = None


Compose = Callable[..., tuple[Any, int]]
# A send returns None, or the seconds to hold the destination after this accepted message
# (Discord's X-RateLimit-Remaining: 0 with its X-RateLimit-Reset-After): the core holds it
# for every alerter, as after a 429, though nothing was refused.
Send = Callable[[SendContext, Mapping[str, Any], Any], Awaitable[float | None]]


@dataclass(frozen=True)
class ChannelKind:
    """One kind of alert channel on the registry (``monitor.channels.REGISTRY``).

    ``config``: the settings the API validates and stores (fields named in ``secrets`` are
    sealed at rest and masked in answers). ``compose(events, *, max_age, now)``: the payload for
    as many of ``events`` (one destination's, in order) as one message takes, and how many it
    covers; a kind that takes one event per message returns 1. ``send(ctx, channel, payload)``
    raises :class:`DeliveryError` unless the destination accepted it; it may return the seconds
    the destination asked to be left alone after accepting it. ``limits(destination)``:
    the pacer's buckets for one message, the first keyed by the destination itself (a 429
    blocks that key for every alerter). ``destination(channel)``: the key that
    names where messages go (coalescing, pacing, deliveries); the channel's id by default.
    ``unavailable(ctx)``: why this kind cannot send now (None: it can), e.g. no bot token.
    ``accepts(event_kind)``: whether events of that kind go to channels of this kind at all
    (PagerDuty takes no reminders); an event is not addressed to a channel that does not.
    ``targets``: the config fields that say where a send connects (a URL, or a bare host such
    as an SMTP server's); the API judges their hosts when a channel is made or changed, as a
    monitor's (``target_hosts``), and every send judges them again.
    """

    name: str
    title: str
    config: type[BaseModel]
    compose: Compose
    send: Send
    limits: Callable[[str], list[Bucket]]
    secrets: frozenset[str] = frozenset()
    destination: Callable[[Mapping[str, Any]], str | None] | None = None
    unavailable: Callable[[SendContext], str | None] = lambda ctx: None
    accepts: Callable[[str], bool] = lambda event_kind: True
    # Fills in what the API generates (a webhook's signing secret) in a config as stored.
    prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    # Limits one destination shares with others, from its channel (secrets opened): an ntfy
    # server's limit per client covers every topic the alerter publishes to there.
    shared_limits: Callable[[Mapping[str, Any]], list[Bucket]] | None = None
    targets: tuple[str, ...] = ()

    def destination_of(self, channel: Mapping[str, Any]) -> str | None:
        if self.destination is not None:
            return self.destination(channel)
        return f"{self.name}:{channel['id']}" if channel.get("id") is not None else None


def target_hosts(kind: ChannelKind, settings: BaseModel) -> list[tuple[str, str]]:
    """(field, host) for each of ``kind.targets`` set in a validated config: a URL's host, or
    the field's value when it is a host itself."""
    found: list[tuple[str, str]] = []
    for name in kind.targets:
        value = getattr(settings, name, None)
        if isinstance(value, SecretStr):
            value = value.get_secret_value()
        if isinstance(value, str) and value:
            # Validated already: a URL parses, and a bare host is one (no scheme, no port).
            host = parse_target_url(value).raw_host or "" if "://" in value else value
            found.append((name, host))
    return found


def config_values(settings: BaseModel) -> dict[str, Any]:
    """A validated config as stored: JSON values, secrets (``SecretStr``) in clear (the caller
    seals them)."""
    values: dict[str, Any] = settings.model_dump(mode="json")
    for name, value in settings:
        if isinstance(value, SecretStr):
            values[name] = value.get_secret_value()
    return values


def retry_after(reply: Reply) -> float | None:
    """``Retry-After`` in seconds (a number or an HTTP date), None when absent or unreadable."""
    value = reply.header("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(when.tzinfo)).total_seconds())


def classify(what: str, reply: Reply, *, detail: str | None = None) -> None:
    """The common reading of an HTTP answer: 2xx sent; 429 waits (Retry-After, else 1 s); 408,
    425 and 5xx are worth another attempt; any other 4xx is the request's or the setting's
    fault and does not heal by retrying."""
    if 200 <= reply.status < 300:
        return
    message = f"{what} {reply.status}: {detail if detail is not None else reply.text()}".strip().rstrip(":")
    if reply.status == 429:
        raise DeliveryError(message, permanent=False, retry_after=retry_after(reply) or 1.0, throttled=True)
    permanent = 400 <= reply.status < 500 and reply.status not in (408, 425)
    raise DeliveryError(message, permanent=permanent, retry_after=retry_after(reply))


MAX_URL_LENGTH = 2048


def secret_url(value: str) -> str:
    """A URL that is itself a credential (a Slack or Discord webhook): http or https, in the
    form monitors' URLs take (``parse_target_url``: no userinfo, a valid host), normalised.
    Where it points is judged when it is used, by the guarded client. The reason for a refusal
    never quotes the URL's path or query, which hold the token."""
    try:
        parsed = parse_target_url(value)
    except InvalidTarget as exc:
        reason = str(exc)
        if reason.startswith("malformed URL") or value in reason:
            reason = "malformed URL"
        raise ValueError(reason) from None
    stored = str(parsed)
    if len(stored) > MAX_URL_LENGTH:
        raise ValueError(f"longer than {MAX_URL_LENGTH} characters")
    return stored


def without_url(text: str, url: str) -> str:
    """``text`` (a destination's answer, for an error message) without ``url`` or its path,
    should the destination echo them: a webhook URL is the credential."""
    if not url:
        return text
    path = url.split("://", 1)[-1].partition("/")[2].partition("?")[0]
    for secret in (url, f"/{path}" if path else ""):
        if secret:
            text = text.replace(secret, "<webhook>")
    return text
