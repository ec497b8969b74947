"""Local fakes of the web APIs the alerter delivers to: Slack, Discord, ntfy, PagerDuty, webhooks.

One aiohttp server on 127.0.0.1 (random port) serves them all, each on the paths of the real
service, so a channel is pointed at the fake by its URL alone:

==============  =========================================  ==================================
service         path                                       URL helper
==============  =========================================  ==================================
Slack           ``POST /services/{T}/{B}/{secret}``        ``fake.slack.url_for(name)``
Discord         ``POST /api[/v10]/webhooks/{id}/{token}``  ``fake.discord.url_for(name)``
ntfy            ``POST|PUT /{topic}``, JSON at ``/``       ``fake.ntfy.url_for(topic)``
PagerDuty       ``POST /v2/enqueue``                       ``fake.pagerduty.url_for()``
webhooks        ``POST /hooks/{name}``                     ``fake.webhooks.url_for(name)``
==============  =========================================  ==================================

Every service records each request in arrival order (``requests``, ``messages``,
``messages_to(destination)``, ``await wait_messages(n)``), answers faults scripted by the test
(``fail``, ``refuse``, ``hang``/``release``), and enforces its real rate limit unless
``rate_limits`` is off, answering with the real error shapes. A *destination* is the name given
to ``url_for`` (Slack, Discord, webhooks), the topic (ntfy) or the routing key (PagerDuty).

Deliberate simplifications, per service, are in each class's docstring. Scripted faults are
answered before anything else (the service is down, whatever the request); a request that the
client abandoned while held (``hang``) is recorded as ``abandoned`` and never as delivered.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import hmac
import json
import math
import secrets
import string
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar
from urllib.parse import parse_qsl

from aiohttp import web
from multidict import CIMultiDict

from .waiting import DEFAULT_TIMEOUT, wait_for


@dataclass
class ChannelRequest:
    """One request a fake service received, and what it answered."""

    service: str
    destination: str | None  # None: not a known destination (answered as the service does)
    method: str
    path: str
    query: dict[str, str]
    headers: CIMultiDict[str]
    body: bytes
    received_at: float  # time.time()
    payload: Any = None  # what the service understood (the JSON; ntfy: the message it stored)
    answered_at: float | None = None
    status: int | None = None  # None while held, or when abandoned
    response_headers: dict[str, str] = field(default_factory=dict)
    response_text: str = ""
    scripted: bool = False  # answered by a scripted fault
    limited: bool = False  # refused by the service's rate limit
    abandoned: bool = False  # the client left (or the fake closed) while the request was held
    duplicate: bool = False  # webhooks: a webhook-id already delivered
    verified: bool | None = None  # webhooks: signature and timestamp valid
    attachment: bool = False  # ntfy: a body over 4096 bytes, stored as a file

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def response_json(self) -> Any:
        return json.loads(self.response_text)

    @property
    def delivered(self) -> bool:
        """Accepted by the service, and a new message (not a replayed webhook)."""
        return self.status is not None and 200 <= self.status < 300 and not self.duplicate


@dataclass
class _Fault:
    status: int | None  # None: hang until released
    remaining: int | None  # None: no count limit
    until: float | None  # time.monotonic() deadline; None: no time limit
    destination: str | None
    retry_after: float | None

    def applies(self, destination: str | None) -> bool:
        return self.destination is None or self.destination == destination

    def expired(self, now: float) -> bool:
        return (self.remaining is not None and self.remaining <= 0) or (
            self.until is not None and now >= self.until
        )


@dataclass
class _Bucket:
    """A token bucket: ``burst`` tokens, refilled at ``rate`` a second."""

    rate: float
    burst: float
    tokens: float
    at: float

    def take(self, now: float) -> float:
        """0.0 if a token was taken, else the seconds until one is there."""
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / self.rate


def _text(status: int, text: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(status=status, text=text, headers=headers)


def _json(status: int, body: Any, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response(body, status=status, headers=headers)


def _parse_json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None


def _token(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(n))


class ChannelFake:
    """What every fake service shares: recording, scripted faults, holding, waiting."""

    kind: ClassVar[str]

    def __init__(self, server: FakeChannels) -> None:
        self._server = server
        self.rate_limits = server.rate_limits
        self.requests: list[ChannelRequest] = []
        self._faults: list[_Fault] = []
        self._release = asyncio.Event()
        self._aliases: dict[str, str] = {}  # url -> destination

    @property
    def base_url(self) -> str:
        return self._server.base_url

    # -- scripting ---------------------------------------------------------------------

    def fail(
        self,
        status: int = 500,
        *,
        times: int | None = None,
        seconds: float | None = None,
        destination: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        """Answer requests (to ``destination`` only, if given) with ``status`` in the service's shape.

        ``times=N``: the next N; ``seconds=S``: all that arrive in the next S seconds (at most N
        if both are given); neither: the next one. 429 gets the service's rate-limit answer,
        ``retry_after`` seconds (default 1). Scripts queue up in the order given.
        """
        remaining = times if times is not None else (None if seconds is not None else 1)
        until = None if seconds is None else time.monotonic() + seconds
        self._faults.append(_Fault(status, remaining, until, destination, retry_after))

    def refuse(self, status: int, *, destination: str | None = None) -> None:
        """Answer every request (to ``destination``) with ``status`` until :meth:`reset`:
        a permanent error (revoked, deleted, unknown)."""
        self._faults.append(_Fault(status, None, None, destination, None))

    def hang(
        self, *, times: int | None = None, seconds: float | None = None, destination: str | None = None
    ) -> None:
        """Hold requests unanswered until :meth:`release` (the next ``times``, or those arriving
        within ``seconds``; neither: all of them). A released request is answered as usual;
        one whose client left meanwhile is recorded as ``abandoned``."""
        until = None if seconds is None else time.monotonic() + seconds
        self._faults.append(_Fault(None, times, until, destination, None))

    def release(self) -> None:
        """Answer the held requests, and stop holding new ones."""
        self._faults = [f for f in self._faults if f.status is not None]
        self._release.set()
        self._release = asyncio.Event()

    def reset(self) -> None:
        """Forget scripts, permanent errors and rate history (recorded requests stay)."""
        self.release()
        self._faults.clear()
        self._reset_limits()

    def _reset_limits(self) -> None:
        raise NotImplementedError

    # -- what was received -------------------------------------------------------------

    @property
    def messages(self) -> list[ChannelRequest]:
        """Requests accepted as new messages, in the order they were accepted (the order the
        channel shows them; it differs from arrival order only for held requests)."""
        return sorted((r for r in self.requests if r.delivered), key=lambda r: r.answered_at or 0.0)

    def messages_to(self, destination: str) -> list[ChannelRequest]:
        """Messages to a destination (its name, topic or routing key, or the URL given out)."""
        destination = self._aliases.get(destination, destination)
        return [r for r in self.messages if r.destination == destination]

    @property
    def held(self) -> list[ChannelRequest]:
        return [r for r in self.requests if r.status is None and not r.abandoned]

    @property
    def limited(self) -> list[ChannelRequest]:
        """Requests the service's rate limit refused (not the scripted 429s)."""
        return [r for r in self.requests if r.limited]

    def statuses(self) -> Counter[int | None]:
        """How many requests got each status (``statuses()[429]``: every 429 sent)."""
        return Counter(r.status for r in self.requests)

    async def wait_messages(
        self,
        count: int,
        *,
        destination: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,  # noqa: ASYNC109
    ) -> list[ChannelRequest]:
        """Wait until at least ``count`` messages were accepted (for ``destination``, if given)."""

        def enough() -> list[ChannelRequest]:
            got = self.messages if destination is None else self.messages_to(destination)
            return got if len(got) >= count else []

        return await wait_for(
            enough,
            timeout=timeout,
            message=lambda: f"{count} {self.kind} message(s); received: {self.describe()}",
        )

    def describe(self) -> str:
        if not self.requests:
            return "no requests"
        return "; ".join(
            f"{r.method} {r.path} to={r.destination} status={r.status}"
            f"{' scripted' if r.scripted else ''}{' limited' if r.limited else ''}"
            f"{' abandoned' if r.abandoned else ''}{' duplicate' if r.duplicate else ''}"
            f" body={r.text[:80]!r}"
            for r in self.requests
        )

    # -- serving -----------------------------------------------------------------------

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        record = ChannelRequest(
            service=self.kind,
            destination=self._destination(request, body),
            method=request.method,
            path=request.path,
            query=dict(request.query),
            headers=CIMultiDict(request.headers),
            body=body,
            received_at=time.time(),
        )
        self.requests.append(record)
        fault = self._take_fault(record.destination, hang=True)
        if fault is not None:
            event = self._release
            try:
                await event.wait()
            except asyncio.CancelledError:
                record.abandoned = True
                raise
        fault = self._take_fault(record.destination, hang=False)
        if fault is not None:
            assert fault.status is not None
            record.scripted = True
            response = self._error(fault.status, 1.0 if fault.retry_after is None else fault.retry_after)
        else:
            response = self._answer(record, request)
        record.status, record.answered_at = response.status, time.time()
        record.response_headers = dict(response.headers)
        record.response_text = response.text or ""
        return response

    def _take_fault(self, destination: str | None, *, hang: bool) -> _Fault | None:
        now = time.monotonic()
        self._faults = [f for f in self._faults if not f.expired(now)]
        for fault in self._faults:
            if (fault.status is None) == hang and fault.applies(destination):
                if fault.remaining is not None:
                    fault.remaining -= 1
                return fault
        return None

    def _destination(self, request: web.Request, body: bytes) -> str | None:
        raise NotImplementedError

    def _answer(self, record: ChannelRequest, request: web.Request) -> web.Response:
        raise NotImplementedError

    def _error(self, status: int, retry_after: float) -> web.Response:
        """The service's answer with ``status``, as a scripted fault gets it."""
        raise NotImplementedError


# -- Slack ---------------------------------------------------------------------------------


_SLACK_ERRORS = {
    400: "invalid_payload",
    403: "invalid_token",
    404: "no_service",
    410: "channel_is_archived",
    429: "rate_limited",
}
_SLACK_BLOCK_TYPES = frozenset(
    "actions context divider file header image input rich_text section video".split()
)


class SlackFake(ChannelFake):
    """Slack incoming webhooks: ``POST /services/{T}/{B}/{secret}``, JSON (or ``payload=`` form).

    Answers as Slack does, in text/plain: ``ok``; 400 ``invalid_payload`` (not a JSON object),
    ``no_text`` (no text, blocks or attachments), ``invalid_blocks`` (more than 50 blocks, an
    unknown type, a section text over 3000 or a field over 2000 chars, a header over 150, or
    a malformed text object); 404 ``no_service`` (unknown URL), 403 ``invalid_token``
    (:meth:`revoke`), 410 ``channel_is_archived`` (:meth:`archive`). Rate limit: Slack's
    "1 message a second per webhook, short bursts allowed" as a token bucket of ``burst``
    (3) refilled at ``per_second`` (1.0), so an evenly paced sender is never refused for
    jitter; 429 ``rate_limited`` with ``Retry-After`` in whole seconds. Simplified: Block Kit
    is checked for the limits above only (not every element's schema), and the 40,000-char
    text limit (Slack truncates) is not applied.
    """

    kind = "slack"

    def __init__(self, server: FakeChannels) -> None:
        super().__init__(server)
        self.per_second = 1.0
        self.burst = 3.0
        self._paths: dict[str, str] = {}  # "T/B/secret" -> name
        self._buckets: dict[str, _Bucket] = {}

    def url_for(self, name: str = "default") -> str:
        """The webhook URL of destination ``name`` (made on first use)."""
        for path, known in self._paths.items():
            if known == name:
                return f"{self.base_url}/services/{path}"
        upper = string.ascii_uppercase + string.digits
        path = f"T{_token(8, upper)}/B{_token(10, upper)}/{_token(24)}"
        self._paths[path] = name
        url = f"{self.base_url}/services/{path}"
        self._aliases[url] = name
        return url

    def revoke(self, name: str) -> None:
        self.refuse(403, destination=name)

    def archive(self, name: str) -> None:
        self.refuse(410, destination=name)

    def _reset_limits(self) -> None:
        self._buckets.clear()

    def _destination(self, request: web.Request, body: bytes) -> str | None:
        info = request.match_info
        return self._paths.get(f"{info['team']}/{info['bot']}/{info['secret']}")

    def _error(self, status: int, retry_after: float) -> web.Response:
        headers = {"Retry-After": str(max(1, math.ceil(retry_after)))} if status == 429 else None
        return _text(status, _SLACK_ERRORS.get(status, "internal_error"), headers)

    def _answer(self, record: ChannelRequest, request: web.Request) -> web.Response:
        if record.destination is None:
            return self._error(404, 0)
        if self.rate_limits:
            bucket = self._buckets.setdefault(
                record.destination, _Bucket(self.per_second, self.burst, self.burst, time.monotonic())
            )
            wait = bucket.take(time.monotonic())
            if wait:
                record.limited = True
                return self._error(429, wait)
        payload = _parse_json(record.body)
        if payload is None and request.content_type == "application/x-www-form-urlencoded":
            form = dict(parse_qsl(record.body.decode("utf-8", "replace")))
            payload = _parse_json(form.get("payload", "").encode())
        record.payload = payload
        problem = _slack_problem(payload)
        return _text(400, problem) if problem else _text(200, "ok")


def _slack_problem(payload: Any) -> str | None:
    if not isinstance(payload, dict):
        return "invalid_payload"
    text, blocks = payload.get("text"), payload.get("blocks")
    if text is not None and not isinstance(text, str):
        return "invalid_payload"
    if blocks is not None and not _slack_blocks_ok(blocks):
        return "invalid_blocks"
    if not text and not blocks and not payload.get("attachments"):
        return "no_text"
    return None


def _slack_text_ok(obj: Any, limit: int, types: tuple[str, ...] = ("plain_text", "mrkdwn")) -> bool:
    return (
        isinstance(obj, dict)
        and obj.get("type") in types
        and isinstance(obj.get("text"), str)
        and 1 <= len(obj["text"]) <= limit
    )


def _slack_blocks_ok(blocks: Any) -> bool:
    if not isinstance(blocks, list) or not 1 <= len(blocks) <= 50:
        return False
    for block in blocks:
        if not isinstance(block, dict) or block.get("type") not in _SLACK_BLOCK_TYPES:
            return False
        if len(str(block.get("block_id", ""))) > 255:
            return False
        kind = block["type"]
        if kind == "section":
            text, fields = block.get("text"), block.get("fields")
            if text is None and fields is None:
                return False
            if text is not None and not _slack_text_ok(text, 3000):
                return False
            if fields is not None and not (
                isinstance(fields, list)
                and 1 <= len(fields) <= 10
                and all(_slack_text_ok(f, 2000) for f in fields)
            ):
                return False
        elif kind == "header" and not _slack_text_ok(block.get("text"), 150, ("plain_text",)):
            return False
        elif kind == "context":
            elements = block.get("elements")
            if not isinstance(elements, list) or not 1 <= len(elements) <= 10:
                return False
            for element in elements:
                if not isinstance(element, dict):
                    return False
                if element.get("type") != "image" and not _slack_text_ok(element, 3000):
                    return False
    return True


# -- Discord -------------------------------------------------------------------------------


_DISCORD_EPOCH_MS = 1420070400000


@dataclass
class _Window:
    started: float  # time.monotonic()
    used: int = 0


class DiscordFake(ChannelFake):
    """Discord webhooks: ``POST /api[/v{n}]/webhooks/{id}/{token}`` (``?wait=true``: 200 with the
    message object, else 204), a JSON body.

    Validates content (≤2000), embeds (≤10; title ≤256, description ≤4096, ≤25 fields with name
    ≤256 and value ≤1024 both required, footer ≤2048, author name ≤256, all embeds together
    ≤6000 chars) and username (1-80): 400 ``{"code": 50035, "message": "Invalid Form Body",
    "errors": {...}}`` with Discord's nested ``_errors``; no content and no embeds: 400 50006;
    bad JSON: 400 50109; unknown webhook: 404 10015 (also :meth:`remove`); wrong token: 401
    50027. Rate limit: ``limit`` (5) requests per ``window`` (2 s) per webhook, counted from
    the first request of a window as Discord's buckets are, with X-RateLimit-Limit, -Remaining,
    -Reset (epoch s), -Reset-After (s) and -Bucket on every answer of a known webhook; 429
    ``{"message": "You are being rate limited.", "retry_after": s, "global": false}`` with
    ``Retry-After`` and ``X-RateLimit-Scope: user``. Simplified: no per-channel 30/min shared
    limit, no global limit, no files (multipart ``payload_json``), no mention parsing.
    """

    kind = "discord"

    def __init__(self, server: FakeChannels) -> None:
        super().__init__(server)
        self.limit = 5
        self.window = 2.0
        self._hooks: dict[str, tuple[str, str]] = {}  # webhook id -> (name, token)
        self._windows: dict[str, _Window] = {}
        self._sequence = 0

    def url_for(self, name: str = "default") -> str:
        """The webhook URL of destination ``name`` (made on first use)."""
        for hook_id, (known, token) in self._hooks.items():
            if known == name:
                return f"{self.base_url}/api/webhooks/{hook_id}/{token}"
        hook_id = self._snowflake()
        token = _token(68, string.ascii_letters + string.digits + "-_")
        self._hooks[hook_id] = (name, token)
        url = f"{self.base_url}/api/webhooks/{hook_id}/{token}"
        self._aliases[url] = name
        return url

    def remove(self, name: str) -> None:
        """The webhook was deleted: 404 Unknown Webhook from now on (until :meth:`reset`)."""
        self.refuse(404, destination=name)

    def _reset_limits(self) -> None:
        self._windows.clear()

    def _snowflake(self) -> str:
        self._sequence += 1
        return str(((int(time.time() * 1000) - _DISCORD_EPOCH_MS) << 22) | (self._sequence & 0xFFF))

    def _destination(self, request: web.Request, body: bytes) -> str | None:
        known = self._hooks.get(request.match_info["id"])
        return None if known is None or known[1] != request.match_info["token"] else known[0]

    def _error(self, status: int, retry_after: float) -> web.Response:
        if status == 429:
            return self._limited(retry_after, self._headers(None, 0, retry_after))
        if status == 404:
            return _json(404, {"message": "Unknown Webhook", "code": 10015})
        if status == 401:
            return _json(401, {"message": "Invalid Webhook Token", "code": 50027})
        if status == 400:
            return _json(400, {"message": "Cannot send an empty message", "code": 50006})
        return _json(status, {"message": f"{status}: Internal Server Error", "code": 0})

    def _limited(self, retry_after: float, headers: dict[str, str]) -> web.Response:
        headers = {**headers, "Retry-After": str(max(1, math.ceil(retry_after))), "X-RateLimit-Scope": "user"}
        body = {
            "message": "You are being rate limited.",
            "retry_after": round(retry_after, 3),
            "global": False,
        }
        return _json(429, body, headers)

    def _headers(self, hook_id: str | None, remaining: int, reset_after: float) -> dict[str, str]:
        bucket = hashlib.sha1((hook_id or "scripted").encode()).hexdigest()[:32]
        return {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(remaining),
            "X-RateLimit-Reset": f"{time.time() + reset_after:.3f}",
            "X-RateLimit-Reset-After": f"{reset_after:.3f}",
            "X-RateLimit-Bucket": bucket,
        }

    def _answer(self, record: ChannelRequest, request: web.Request) -> web.Response:
        hook_id = request.match_info["id"]
        if hook_id not in self._hooks:
            return self._error(404, 0)
        if record.destination is None:
            return self._error(401, 0)
        now = time.monotonic()
        window = self._windows.get(hook_id)
        if window is None or now - window.started >= self.window:
            window = self._windows[hook_id] = _Window(now)
        reset_after = window.started + self.window - now
        if self.rate_limits and window.used >= self.limit:
            record.limited = True
            return self._limited(reset_after, self._headers(hook_id, 0, reset_after))
        window.used += 1
        headers = self._headers(hook_id, max(0, self.limit - window.used), reset_after)

        payload = record.payload = _parse_json(record.body)
        if not isinstance(payload, dict):
            return _json(400, {"message": "The request body contains invalid JSON.", "code": 50109}, headers)
        content, embeds = payload.get("content") or "", payload.get("embeds") or []
        if not str(content).strip() and not embeds:
            return _json(400, {"message": "Cannot send an empty message", "code": 50006}, headers)
        errors = _discord_errors(payload)
        if errors:
            body = {"code": 50035, "errors": errors, "message": "Invalid Form Body"}
            return _json(400, body, headers)
        if request.query.get("wait", "").lower() not in ("true", "1"):
            return web.Response(status=204, headers=headers)
        message = {
            "id": self._snowflake(),
            "type": 0,
            "content": content,
            "channel_id": str(int(hook_id) + 1),
            "author": {"id": hook_id, "username": payload.get("username") or "Monitor", "bot": True},
            "embeds": embeds,
            "attachments": [],
            "mentions": [],
            "pinned": False,
            "tts": False,
            "timestamp": datetime.now(UTC).isoformat(),
            "webhook_id": hook_id,
        }
        return _json(200, message, headers)


def _discord_errors(payload: dict[str, Any]) -> dict[str, Any]:
    errors: dict[str, Any] = {}

    def add(path: tuple[str, ...], code: str, message: str) -> None:
        node = errors
        for key in path:
            node = node.setdefault(key, {})
        node.setdefault("_errors", []).append({"code": code, "message": message})

    def too_long(path: tuple[str, ...], value: Any, limit: int) -> int:
        size = len(str(value)) if value is not None else 0
        if size > limit:
            add(path, "BASE_TYPE_MAX_LENGTH", f"Must be {limit} or fewer in length.")
        return size

    too_long(("content",), payload.get("content"), 2000)
    username = payload.get("username")
    if username is not None and not 1 <= len(str(username)) <= 80:
        add(("username",), "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 80 in length.")
    embeds = payload.get("embeds") or []
    if not isinstance(embeds, list):
        add(("embeds",), "LIST_TYPE_CONVERT", "Only iterables may be used in a ListType.")
        return errors
    if len(embeds) > 10:
        add(("embeds",), "BASE_TYPE_MAX_LENGTH", "Must be 10 or fewer in length.")
    total = 0
    for i, embed in enumerate(embeds):
        at = ("embeds", str(i))
        if not isinstance(embed, dict):
            add(at, "DICT_TYPE_CONVERT", "Only dictionaries may be used in a DictType.")
            continue
        total += too_long((*at, "title"), embed.get("title"), 256)
        total += too_long((*at, "description"), embed.get("description"), 4096)
        total += too_long((*at, "footer", "text"), (embed.get("footer") or {}).get("text"), 2048)
        total += too_long((*at, "author", "name"), (embed.get("author") or {}).get("name"), 256)
        fields = embed.get("fields") or []
        if len(fields) > 25:
            add((*at, "fields"), "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.")
        for j, item in enumerate(fields):
            for key, limit in (("name", 256), ("value", 1024)):
                value = item.get(key) if isinstance(item, dict) else None
                if value is None or value == "":
                    add((*at, "fields", str(j), key), "BASE_TYPE_REQUIRED", "This field is required")
                total += too_long((*at, "fields", str(j), key), value, limit)
    if total > 6000:
        add(("embeds",), "MAX_EMBED_SIZE_EXCEEDED", "Embed size exceeds maximum size of 6000")
    return errors


# -- ntfy ----------------------------------------------------------------------------------


_NTFY_PRIORITIES = {"min": 1, "low": 2, "default": 3, "high": 4, "urgent": 5, "max": 5}
_NTFY_ERRORS = {
    400: (40000, "invalid request", ""),
    401: (40101, "unauthorized", "https://ntfy.sh/docs/publish/#authentication"),
    403: (40301, "forbidden", "https://ntfy.sh/docs/publish/#authentication"),
    404: (40401, "page not found", ""),
    429: (
        42901,
        "limit reached: too many requests, please be nice",
        "https://ntfy.sh/docs/publish/#limitations",
    ),
}
_NTFY_TOPIC = "{topic:[-_A-Za-z0-9]{1,64}}"
_NTFY_MESSAGE_LIMIT = 4096


class NtfyFake(ChannelFake):
    """ntfy: ``POST|PUT /{topic}`` with the message as the body and the Title, Priority, Tags,
    Click and Markdown headers (with their ``X-`` and short aliases, or as query parameters), or
    ``POST|PUT /`` with the JSON form (``topic``, ``message``, ``title``, ``priority``, ...).

    Answers 200 with the stored message (``id``, ``time``, ``expires``, ``event``, ``topic``,
    ``message``, ``title``, ``priority``, ``tags``, ``click``, ``content_type``); errors are
    ntfy's ``{"code", "http", "error", "link"}``: 400 40007 (bad priority), 40017 (bad JSON),
    40009 (bad topic); a topic given a token by :meth:`protect`: without credentials 403 40301,
    with an unknown token 401 40101, with another topic's token 403 40301. Rate limit: ntfy's
    per-visitor (client address) request limiter, a bucket of ``burst`` (60) refilled one per
    ``replenish`` (5 s); 429 42901 (no Retry-After, as ntfy). A body over 4096 bytes becomes an
    attachment as in ntfy (``attachment`` set, message "You received a file: attachment.txt").
    Simplified: only access tokens (no Basic auth or ``?auth=``), no delays, actions, e-mail or
    daily message quotas.
    """

    kind = "ntfy"

    def __init__(self, server: FakeChannels) -> None:
        super().__init__(server)
        self.burst = 60.0
        self.replenish = 5.0
        self._tokens: dict[str, str] = {}  # topic -> the access token that may publish to it
        self._buckets: dict[str, _Bucket] = {}

    def url_for(self, topic: str) -> str:
        """The topic URL (``POST`` a message to it; the JSON form goes to :attr:`base_url`)."""
        url = f"{self.base_url}/{topic}"
        self._aliases[url] = topic
        return url

    def protect(self, topic: str, token: str | None = None) -> str:
        """Only ``Authorization: Bearer <token>`` may publish to ``topic``; returns the token."""
        token = token or "tk_" + _token(29, string.ascii_lowercase + string.digits)
        self._tokens[topic] = token
        return token

    def _reset_limits(self) -> None:
        self._buckets.clear()

    def _destination(self, request: web.Request, body: bytes) -> str | None:
        if "topic" in request.match_info:
            return request.match_info["topic"]
        payload = _parse_json(body)
        topic = payload.get("topic") if isinstance(payload, dict) else None
        return topic if isinstance(topic, str) else None

    def _error(self, status: int, retry_after: float) -> web.Response:
        code, error, link = _NTFY_ERRORS.get(status, (status * 100 + 1, "internal server error", ""))
        return self._refuse(code, status, error, link)

    @staticmethod
    def _refuse(code: int, status: int, error: str, link: str = "") -> web.Response:
        body: dict[str, Any] = {"code": code, "http": status, "error": error}
        if link:
            body["link"] = link
        return _json(status, body)

    def _answer(self, record: ChannelRequest, request: web.Request) -> web.Response:
        if self.rate_limits:
            now = time.monotonic()
            visitor = request.remote or "?"
            bucket = self._buckets.setdefault(
                visitor, _Bucket(1 / self.replenish, self.burst, self.burst, now)
            )
            if bucket.take(now):
                record.limited = True
                return self._error(429, 0)
        topic = record.destination
        if "topic" in request.match_info:
            fields: dict[str, Any] = {
                "title": _ntfy_param(request, "title", "ti", "t"),
                "priority": _ntfy_param(request, "priority", "prio", "p"),
                "tags": _ntfy_param(request, "tags", "tag", "ta"),
                "click": _ntfy_param(request, "click"),
                "markdown": _ntfy_param(request, "markdown", "md"),
            }
            body = record.body
        else:
            payload = _parse_json(record.body)
            if not isinstance(payload, dict):
                return self._refuse(40017, 400, "invalid request: request body must be message JSON")
            if topic is None:
                return self._refuse(40009, 400, "invalid request: topic invalid")
            fields = {k: payload.get(k) for k in ("title", "priority", "tags", "click", "markdown")}
            body = str(payload.get("message") or "").encode()
        assert topic is not None
        needed, auth = self._tokens.get(topic), request.headers.get("Authorization", "")
        if needed is not None:
            given = auth.removeprefix("Bearer ").strip() if auth.startswith("Bearer ") else None
            if given is None:
                return self._error(403, 0)
            if given not in self._tokens.values():
                return self._error(401, 0)
            if given != needed:
                return self._error(403, 0)
        priority = _ntfy_priority(fields["priority"])
        if priority is None:
            return self._refuse(
                40007, 400, "invalid priority parameter", "https://ntfy.sh/docs/publish/#message-priority"
            )
        now = int(time.time())
        message: dict[str, Any] = {
            "id": _token(12),
            "time": now,
            "expires": now + 43200,
            "event": "message",
            "topic": topic,
            "message": body.decode("utf-8", "replace") or "triggered",
        }
        if len(body) > _NTFY_MESSAGE_LIMIT:
            record.attachment = True
            message["message"] = "You received a file: attachment.txt"
            message["attachment"] = {
                "name": "attachment.txt",
                "type": "text/plain; charset=utf-8",
                "size": len(body),
                "expires": now + 10800,
                "url": f"{self.base_url}/file/{message['id']}.txt",
            }
        if fields["title"]:
            message["title"] = str(fields["title"])
        if priority != 3:
            message["priority"] = priority
        tags = fields["tags"]
        if tags:
            message["tags"] = [t.strip() for t in tags.split(",")] if isinstance(tags, str) else list(tags)
        if fields["click"]:
            message["click"] = str(fields["click"])
        if str(fields["markdown"]).lower() in ("1", "yes", "true"):
            message["content_type"] = "text/markdown"
        record.payload = message
        return _json(200, message)


def _ntfy_param(request: web.Request, name: str, *aliases: str) -> str | None:
    for key in (f"X-{name}", name, *aliases):
        if key in request.headers:
            return request.headers[key]
    for key in (name, *aliases):
        if key in request.query:
            return request.query[key]
    return None


def _ntfy_priority(value: Any) -> int | None:
    """1-5 (3 when not given), or None if ntfy would refuse it."""
    if value is None or value == "":
        return 3
    if isinstance(value, int) and not isinstance(value, bool):
        return value if 1 <= value <= 5 else None
    text = str(value).strip().lower()
    if text.isdigit():
        return int(text) if 1 <= int(text) <= 5 else None
    return _NTFY_PRIORITIES.get(text)


# -- PagerDuty -----------------------------------------------------------------------------


_PD_ACTIONS = ("trigger", "acknowledge", "resolve")
_PD_SEVERITIES = ("critical", "error", "warning", "info")


@dataclass
class PagerDutyAlert:
    """One alert (a dedup key's life from a trigger to its resolve), with every event for it."""

    routing_key: str
    dedup_key: str
    status: str  # "triggered", "acknowledged" or "resolved"
    summary: str
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def open(self) -> bool:
        return self.status != "resolved"


class PagerDutyFake(ChannelFake):
    """PagerDuty Events API v2: ``POST /v2/enqueue`` with a JSON event.

    Checks what PD checks: a 32-char ``routing_key``; ``event_action`` trigger, acknowledge or
    resolve; a trigger's ``payload`` with ``summary`` (≤1024), ``source`` and ``severity``
    (critical, error, warning, info), a parseable ``timestamp``; a ``dedup_key`` (≤255) for
    acknowledge and resolve; ``links`` and ``images`` as lists; the event ≤512 KB. Answers 202
    ``{"status": "success", "message": "Event processed", "dedup_key": ...}`` (a trigger without
    a key gets a new one) or 400 ``{"status": "invalid event", "message": "Event object is
    invalid", "errors": [...]}``. An unknown routing key is accepted, as PD does. The alert
    state is kept per routing key and dedup key (:meth:`alert`, :attr:`alerts`): a trigger opens
    an alert (or adds to the open one), acknowledge and resolve move it, and a resolve or
    acknowledge of no open alert is accepted and ignored. Rate limit: ``per_minute`` (120)
    events a minute per routing key, as a bucket that may burst all of them; 429 with an empty
    body. Simplified: error texts are close to PD's, not verbatim; no change events.
    """

    kind = "pagerduty"

    def __init__(self, server: FakeChannels) -> None:
        super().__init__(server)
        self.per_minute = 120.0
        self.alerts: list[PagerDutyAlert] = []  # in the order they were opened
        self._buckets: dict[str, _Bucket] = {}

    def url_for(self) -> str:
        """The events URL (PD's ``https://events.pagerduty.com/v2/enqueue``)."""
        return f"{self.base_url}/v2/enqueue"

    @staticmethod
    def new_routing_key() -> str:
        """A well-formed (32-char) integration key; any such key is accepted."""
        return secrets.token_hex(16)

    def alert(self, dedup_key: str, routing_key: str | None = None) -> PagerDutyAlert | None:
        """The latest alert with this dedup key (and routing key, if given)."""
        for alert in reversed(self.alerts):
            if alert.dedup_key == dedup_key and routing_key in (None, alert.routing_key):
                return alert
        return None

    @property
    def open_alerts(self) -> list[PagerDutyAlert]:
        return [a for a in self.alerts if a.open]

    def _reset_limits(self) -> None:
        self._buckets.clear()

    def _destination(self, request: web.Request, body: bytes) -> str | None:
        payload = _parse_json(body)
        key = payload.get("routing_key") if isinstance(payload, dict) else None
        return key if isinstance(key, str) else None

    def _error(self, status: int, retry_after: float) -> web.Response:
        if status == 400:
            return self._invalid(["Event object is invalid"])
        if status == 429:
            return web.Response(status=429)
        return _json(status, {"status": "error", "message": "Internal Server Error"})

    @staticmethod
    def _invalid(errors: list[str]) -> web.Response:
        body = {"status": "invalid event", "message": "Event object is invalid", "errors": errors}
        return _json(400, body)

    def _answer(self, record: ChannelRequest, request: web.Request) -> web.Response:
        event = _parse_json(record.body)
        record.payload = event
        if not isinstance(event, dict):
            return self._invalid(["Event object is not a valid JSON object"])
        key = record.destination
        if self.rate_limits and key:
            now = time.monotonic()
            bucket = self._buckets.setdefault(
                key, _Bucket(self.per_minute / 60, self.per_minute, self.per_minute, now)
            )
            if bucket.take(now):
                record.limited = True
                return web.Response(status=429)
        errors = _pagerduty_errors(event, len(record.body))
        if errors:
            return self._invalid(errors)
        assert key is not None
        action, dedup_key = event["event_action"], event.get("dedup_key") or secrets.token_hex(16)
        alert = self.alert(dedup_key, key)
        if action == "trigger":
            if alert is None or not alert.open:
                alert = PagerDutyAlert(key, dedup_key, "triggered", event["payload"]["summary"])
                self.alerts.append(alert)
            alert.events.append(event)
        elif alert is not None and alert.open:
            alert.status = "acknowledged" if action == "acknowledge" else "resolved"
            alert.events.append(event)
        return _json(202, {"status": "success", "message": "Event processed", "dedup_key": dedup_key})


def _pagerduty_errors(event: dict[str, Any], size: int) -> list[str]:
    errors = []
    if size > 512 * 1024:
        errors.append("Event object is larger than 512 KB")
    key = event.get("routing_key")
    if not key:
        errors.append("'routing_key' is missing or blank")
    elif not isinstance(key, str) or len(key) != 32:
        errors.append("Length of 'routing_key' is incorrect (should be 32 characters)")
    action = event.get("event_action")
    if not action:
        errors.append("'event_action' is missing or blank")
    elif action not in _PD_ACTIONS:
        errors.append("'event_action' is invalid (must be one of: trigger, acknowledge, resolve)")
    dedup_key = event.get("dedup_key")
    if dedup_key is not None and (not isinstance(dedup_key, str) or len(dedup_key) > 255):
        errors.append("'dedup_key' must be a string of at most 255 characters")
    if action in ("acknowledge", "resolve") and not dedup_key:
        errors.append("'dedup_key' is missing or blank")
    for name in ("links", "images"):
        if name in event and not isinstance(event[name], list):
            errors.append(f"'{name}' must be an array")
    if action == "trigger":
        payload = event.get("payload")
        if not isinstance(payload, dict):
            return [*errors, "'payload' is missing or not an object"]
        for name in ("summary", "source", "severity"):
            if not payload.get(name):
                errors.append(f"'payload.{name}' is missing or blank")
        if len(str(payload.get("summary") or "")) > 1024:
            errors.append("'payload.summary' is longer than 1024 characters")
        if payload.get("severity") and payload["severity"] not in _PD_SEVERITIES:
            errors.append("'payload.severity' is invalid (must be one of: critical, error, warning, info)")
        if payload.get("timestamp") is not None:
            try:
                datetime.fromisoformat(str(payload["timestamp"]).replace("Z", "+00:00"))
            except ValueError:
                errors.append("'payload.timestamp' is not a valid ISO 8601 timestamp")
    return errors


# -- Standard Webhooks receiver ------------------------------------------------------------


def webhook_secret() -> str:
    """A new Standard Webhooks secret: ``whsec_`` and the base64 of 24 random bytes."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()


def sign_webhook(secret: str, msg_id: str, timestamp: int | str, body: bytes) -> str:
    """The ``webhook-signature`` value (``v1,<base64 HMAC-SHA256>``) for this message."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{msg_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


class WebhookFake(ChannelFake):
    """Receivers of signed webhooks: ``POST /hooks/{name}``, verified the Standard Webhooks way
    (https://www.standardwebhooks.com/): ``webhook-id``, ``webhook-timestamp`` (unix seconds)
    and ``webhook-signature`` (space-separated ``v1,<base64>``; any one matching
    HMAC-SHA256(key, "{id}.{timestamp}.{body}") passes, the key being the base64 after
    ``whsec_`` of the receiver's secret).

    A missing header, a bad signature, or a timestamp more than ``tolerance`` (300 s) away from
    now is refused with 401 and the reason as text (``verified`` False); an unknown receiver
    gets 404. A verified ``webhook-id`` seen before is answered 200 as a receiver would, but
    recorded as ``duplicate`` (not among :attr:`messages`; see :attr:`duplicates`). Scripted
    errors are text, 429 with ``Retry-After``.
    """

    kind = "webhook"

    def __init__(self, server: FakeChannels) -> None:
        super().__init__(server)
        self.tolerance = 300.0
        self._secrets: dict[str, str] = {}
        self._seen: dict[str, set[str]] = {}

    def url_for(self, name: str = "default", secret: str | None = None) -> str:
        """The URL of receiver ``name``, verifying with ``secret`` (made on first use if not given;
        :meth:`secret` returns it)."""
        if secret is not None or name not in self._secrets:
            self._secrets[name] = secret or webhook_secret()
        url = f"{self.base_url}/hooks/{name}"
        self._aliases[url] = name
        return url

    def secret(self, name: str = "default") -> str:
        return self._secrets[name]

    @property
    def duplicates(self) -> list[ChannelRequest]:
        return [r for r in self.requests if r.duplicate]

    def _reset_limits(self) -> None:
        """Webhook receivers have no rate limit; the ids seen stay (replays are still replays)."""

    def _destination(self, request: web.Request, body: bytes) -> str | None:
        name = request.match_info["name"]
        return name if name in self._secrets else None

    def _error(self, status: int, retry_after: float) -> web.Response:
        headers = {"Retry-After": str(max(1, math.ceil(retry_after)))} if status == 429 else None
        return _text(status, f"scripted {status}", headers)

    def _answer(self, record: ChannelRequest, request: web.Request) -> web.Response:
        if record.destination is None:
            return _text(404, "no such receiver")
        record.payload = _parse_json(record.body)
        problem = self._verify(record.destination, record.headers, record.body)
        record.verified = problem is None
        if problem is not None:
            return _text(401, problem)
        seen = self._seen.setdefault(record.destination, set())
        msg_id = record.headers["webhook-id"]
        record.duplicate = msg_id in seen
        seen.add(msg_id)
        return _text(200, "ok")

    def _verify(self, name: str, headers: CIMultiDict[str], body: bytes) -> str | None:
        msg_id, stamp, signatures = (
            headers.get(h) for h in ("webhook-id", "webhook-timestamp", "webhook-signature")
        )
        if not msg_id or not stamp or not signatures:
            return "missing webhook-id, webhook-timestamp or webhook-signature"
        try:
            when = int(stamp)
        except ValueError:
            return "invalid webhook-timestamp"
        if abs(time.time() - when) > self.tolerance:
            return "webhook-timestamp too old or too new"
        try:
            expected = sign_webhook(self._secrets[name], msg_id, stamp, body)
        except (binascii.Error, ValueError):
            return "the receiver's secret is not base64"
        if not any(hmac.compare_digest(given.encode(), expected.encode()) for given in signatures.split()):
            return "no matching signature"
        return None


# -- the server ----------------------------------------------------------------------------


class FakeChannels:
    """One server for all the fake web APIs; ``fake.slack``, ``fake.discord``, ``fake.ntfy``,
    ``fake.pagerduty`` and ``fake.webhooks`` are the services (see :class:`ChannelFake`).

    ``rate_limits=False`` turns every service's rate limit off (each service's
    ``rate_limits`` attribute can be set on its own, and its limits changed, e.g.
    ``fake.slack.burst = 1``).
    """

    def __init__(self, *, host: str = "127.0.0.1", rate_limits: bool = True) -> None:
        self.host = host
        self.rate_limits = rate_limits
        self.port: int | None = None
        self._runner: web.AppRunner | None = None
        self.slack = SlackFake(self)
        self.discord = DiscordFake(self)
        self.ntfy = NtfyFake(self)
        self.pagerduty = PagerDutyFake(self)
        self.webhooks = WebhookFake(self)

    @property
    def services(self) -> tuple[ChannelFake, ...]:
        return (self.slack, self.discord, self.ntfy, self.pagerduty, self.webhooks)

    async def start(self) -> FakeChannels:
        app = web.Application()
        routes: list[tuple[str, str, Callable[[web.Request], Any]]] = [
            ("POST", "/services/{team}/{bot}/{secret}", self.slack._serve),
            ("POST", "/api/webhooks/{id}/{token}", self.discord._serve),
            ("POST", r"/api/{version:v\d+}/webhooks/{id}/{token}", self.discord._serve),
            ("POST", "/v2/enqueue", self.pagerduty._serve),
            ("POST", "/hooks/{name}", self.webhooks._serve),
            ("POST", "/", self.ntfy._serve),
            ("PUT", "/", self.ntfy._serve),
            ("POST", f"/{_NTFY_TOPIC}", self.ntfy._serve),
            ("PUT", f"/{_NTFY_TOPIC}", self.ntfy._serve),
        ]
        for method, path, handler in routes:
            app.router.add_route(method, path, handler)
        # Handler cancellation: a held request whose client gives up is recorded as abandoned.
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self.release()

    async def __aenter__(self) -> FakeChannels:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def base_url(self) -> str:
        assert self.port is not None, "FakeChannels not started"
        return f"http://{self.host}:{self.port}"

    @property
    def requests(self) -> list[ChannelRequest]:
        """Every service's requests, in arrival order."""
        return sorted((r for s in self.services for r in s.requests), key=lambda r: r.received_at)

    def release(self) -> None:
        for service in self.services:
            service.release()

    def reset(self) -> None:
        for service in self.services:
            service.reset()

    def describe(self) -> str:
        return "\n".join(f"{s.kind}: {s.describe()}" for s in self.services)
