"""A local fake of the Telegram Bot API's ``sendMessage``, for the alerter to talk to.

Point ``MONITOR_TELEGRAM_API_BASE`` at :attr:`FakeTelegram.base_url` and
``MONITOR_TELEGRAM_BOT_TOKEN`` at :attr:`FakeTelegram.token`. Every request is recorded;
answers can be scripted (``fail_next``, ``reject_chat``), requests can be held until
released (``hold``/``release``), and Telegram's flood limits can be enforced
(``enforce_rate_limits=True``: 1 message/s per chat, 20/min for group chats, whose ids are
negative), answered with 429 and ``parameters.retry_after`` as the real API does.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from .waiting import DEFAULT_TIMEOUT, wait_for

DEFAULT_TOKEN = "123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11"


@dataclass
class TelegramRequest:
    """One call the fake received, and what it answered."""

    method: str
    token: str
    token_ok: bool
    chat_id: str | None
    text: str | None
    parse_mode: str | None
    payload: dict[str, Any]
    received_at: float  # time.time()
    answered_at: float | None = None
    status: int | None = None  # HTTP status answered; None while held
    response: dict[str, Any] | None = None
    # Held, and the client went away before the answer: Telegram never processed it.
    abandoned: bool = False

    @property
    def delivered(self) -> bool:
        return self.status == 200


@dataclass
class _Scripted:
    status: int
    description: str
    times: int
    retry_after: int | None
    chat_id: str | None


@dataclass
class _RateState:
    last: float | None = None
    recent: deque[float] = field(default_factory=deque)


class FakeTelegram:
    def __init__(
        self,
        *,
        token: str = DEFAULT_TOKEN,
        host: str = "127.0.0.1",
        enforce_rate_limits: bool = False,
        per_chat_interval: float = 1.0,
        group_per_minute: int = 20,
    ) -> None:
        self.token = token
        self.host = host
        self.enforce_rate_limits = enforce_rate_limits
        self.per_chat_interval = per_chat_interval
        self.group_per_minute = group_per_minute
        self.requests: list[TelegramRequest] = []
        self._scripted: list[_Scripted] = []
        self._rejected: dict[str, tuple[int, str]] = {}
        self._migrated: dict[str, str] = {}
        self._rate: dict[str, _RateState] = {}
        self._released = asyncio.Event()
        self._released.set()
        self._message_id = 0
        self._runner: web.AppRunner | None = None
        self.port: int | None = None

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> FakeTelegram:
        app = web.Application()
        app.router.add_route("*", "/bot{token}/{method}", self._handle)
        # handler_cancellation: a held request whose client goes away (an alerter killed while
        # waiting for the answer) is cancelled, so it is never processed (``abandoned``).
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def close(self) -> None:
        self.release()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeTelegram:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def base_url(self) -> str:
        assert self.port is not None, "FakeTelegram not started"
        return f"http://{self.host}:{self.port}"

    def env(self) -> dict[str, str]:
        """The settings that point the alerter at this fake."""
        return {"MONITOR_TELEGRAM_API_BASE": self.base_url, "MONITOR_TELEGRAM_BOT_TOKEN": self.token}

    # -- scripting ---------------------------------------------------------------------

    def fail_next(
        self,
        status: int,
        description: str = "",
        *,
        times: int = 1,
        retry_after: int | None = None,
        chat_id: str | int | None = None,
    ) -> None:
        """Answer the next ``times`` sendMessage calls (to ``chat_id`` only, if given) with an error.

        ``retry_after`` adds ``parameters.retry_after`` (as Telegram does with 429). Scripts queue
        up in the order given.
        """
        if not description:
            description = {
                400: "Bad Request: chat not found",
                401: "Unauthorized",
                403: "Forbidden: bot was blocked by the user",
                429: f"Too Many Requests: retry after {retry_after or 1}",
            }.get(status, "Internal Server Error")
        self._scripted.append(
            _Scripted(status, description, times, retry_after, None if chat_id is None else str(chat_id))
        )

    def migrate_chat(self, chat_id: str | int, to: str | int) -> None:
        """``chat_id`` became a supergroup ``to``: messages to the old id get Telegram's 400 with
        ``migrate_to_chat_id``, until :meth:`reset`."""
        self._migrated[str(chat_id)] = str(to)

    def reject_chat(
        self, chat_id: str | int, status: int = 400, description: str = "Bad Request: chat not found"
    ) -> None:
        """Answer every message to ``chat_id`` with this error, until :meth:`reset`."""
        self._rejected[str(chat_id)] = (status, description)

    def hold(self) -> None:
        """Keep every request from now on waiting, unanswered, until :meth:`release`."""
        self._released.clear()

    def release(self) -> None:
        self._released.set()

    def reset(self) -> None:
        """Forget scripts, rejections and rate history (recorded requests stay)."""
        self._scripted.clear()
        self._rejected.clear()
        self._migrated.clear()
        self._rate.clear()
        self.release()

    # -- what was received -------------------------------------------------------------

    @property
    def messages(self) -> list[TelegramRequest]:
        """sendMessage calls that were answered with success, in arrival order."""
        return [r for r in self.requests if r.method == "sendMessage" and r.delivered]

    def messages_to(self, chat_id: str | int) -> list[TelegramRequest]:
        return [r for r in self.messages if r.chat_id == str(chat_id)]

    @property
    def held(self) -> list[TelegramRequest]:
        return [r for r in self.requests if r.status is None and not r.abandoned]

    async def wait_messages(
        self,
        count: int,
        *,
        timeout: float = DEFAULT_TIMEOUT,  # noqa: ASYNC109
        chat_id: str | int | None = None,
    ) -> list[TelegramRequest]:
        """Wait until at least ``count`` messages were delivered (to ``chat_id``, if given)."""

        def enough() -> list[TelegramRequest] | None:
            got = self.messages if chat_id is None else self.messages_to(chat_id)
            return got if len(got) >= count else None

        return await wait_for(
            enough,
            timeout=timeout,
            message=lambda: f"{count} Telegram message(s); received: {self.describe()}",
        )

    def describe(self) -> str:
        if not self.requests:
            return "no requests"
        return "; ".join(
            f"{r.method} chat={r.chat_id} status={r.status} text={(r.text or '')[:80]!r}"
            for r in self.requests
        )

    # -- the server --------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.Response:
        token = request.match_info["token"]
        method = request.match_info["method"]
        payload = await _payload(request)
        chat = payload.get("chat_id")
        record = TelegramRequest(
            method=method,
            token=token,
            token_ok=token == self.token,
            chat_id=None if chat is None else str(chat),
            text=payload.get("text"),
            parse_mode=payload.get("parse_mode"),
            payload=payload,
            received_at=time.time(),
        )
        self.requests.append(record)
        try:
            await self._released.wait()
        except asyncio.CancelledError:
            record.abandoned = True
            raise
        status, body = self._answer(record)
        record.status, record.response, record.answered_at = status, body, time.time()
        return web.json_response(body, status=status)

    def _answer(self, record: TelegramRequest) -> tuple[int, dict[str, Any]]:
        if not record.token_ok:
            return _error(401, "Unauthorized")
        if record.method != "sendMessage":
            return _error(404, "Not Found")
        if not record.chat_id:
            return _error(400, "Bad Request: chat_id is empty")
        if not record.text:
            return _error(400, "Bad Request: message text is empty")
        if record.chat_id in self._rejected:
            return _error(*self._rejected[record.chat_id])
        if record.chat_id in self._migrated:
            status, body = _error(400, "Bad Request: group chat was upgraded to a supergroup chat")
            body["parameters"] = {"migrate_to_chat_id": int(self._migrated[record.chat_id])}
            return status, body
        for script in self._scripted:
            if script.chat_id is None or script.chat_id == record.chat_id:
                script.times -= 1
                if script.times <= 0:
                    self._scripted.remove(script)
                return _error(script.status, script.description, script.retry_after)
        if self.enforce_rate_limits:
            wait = self._rate_wait(record.chat_id, record.received_at)
            if wait is not None:
                return _error(429, f"Too Many Requests: retry after {wait}", wait)
        self._message_id += 1
        chat_id: int | str = int(record.chat_id) if record.chat_id.lstrip("-").isdigit() else record.chat_id
        result = {
            "message_id": self._message_id,
            "date": int(record.received_at),
            "chat": {"id": chat_id},
            "text": record.text,
        }
        return 200, {"ok": True, "result": result}

    def _rate_wait(self, chat_id: str, now: float) -> int | None:
        """Seconds to wait (as Telegram rounds them: up), or None if this message may go now."""
        state = self._rate.setdefault(chat_id, _RateState())
        waits = []
        if state.last is not None and now - state.last < self.per_chat_interval:
            waits.append(self.per_chat_interval - (now - state.last))
        if chat_id.startswith("-"):
            while state.recent and now - state.recent[0] >= 60.0:
                state.recent.popleft()
            if len(state.recent) >= self.group_per_minute:
                waits.append(60.0 - (now - state.recent[0]))
        if waits:
            return max(1, math.ceil(max(waits)))
        state.last = now
        state.recent.append(now)
        return None


def _error(status: int, description: str, retry_after: int | None = None) -> tuple[int, dict[str, Any]]:
    body: dict[str, Any] = {"ok": False, "error_code": status, "description": description}
    if retry_after is not None:
        body["parameters"] = {"retry_after": retry_after}
    return status, body


async def _payload(request: web.Request) -> dict[str, Any]:
    """Bot API parameters arrive as JSON, a form or the query string; accept all three."""
    payload: dict[str, Any] = dict(request.query)
    if request.content_type == "application/json":
        try:
            body = await request.json()
        except json.JSONDecodeError:
            body = None
        if isinstance(body, dict):
            payload.update(body)
    elif request.can_read_body:
        payload.update(dict(await request.post()))
    return payload
