"""People for the sign-in tests: users with a password and a membership, written straight to
the database, and a cookie-carrying HTTP client (the session cookie is ``Secure``, which a
client's cookie jar keeps off plain http, so it is sent by hand)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import asyncpg

from monitor.passwords import Hasher

from . import leaks

COOKIE = "__Host-monitor_session"


async def make_user(
    db: asyncpg.Connection,
    email: str,
    password: str | None,
    account_id: int | None = None,
    role: str = "owner",
) -> int:
    leaks.secret("password", password)
    hasher = Hasher(threads=1)
    try:
        hashed = None if password is None else await hasher.hash(password)
    finally:
        hasher.close()
    user_id = int(
        await db.fetchval(
            "INSERT INTO users (email, password_hash) VALUES ($1, $2) RETURNING id", email, hashed
        )
    )
    if account_id is not None:
        await db.execute(
            "INSERT INTO memberships (account_id, user_id, role) VALUES ($1, $2, $3)",
            account_id,
            user_id,
            role,
        )
    return user_id


async def make_password(db: asyncpg.Connection, email: str, password: str) -> None:
    leaks.secret("password", password)
    hasher = Hasher(threads=1)
    try:
        hashed = await hasher.hash(password)
    finally:
        hasher.close()
    await db.execute("UPDATE users SET password_hash = $2 WHERE email = $1", email, hashed)


# Fields of our answers that hand out a secret, and its kind for the run's log scan.
SECRET_FIELDS = {"csrf_token": "CSRF token", "secret": "TOTP secret", "recovery_codes": "recovery code"}


def _register(body: Any) -> None:
    if not isinstance(body, dict):
        return
    for name, kind in SECRET_FIELDS.items():
        value = body.get(name)
        for one in value if isinstance(value, list) else [value]:
            if isinstance(one, str):
                leaks.secret(kind, one)


@dataclass
class Answer:
    status: int
    body: Any
    headers: dict[str, str]
    cookies: list[str] = field(default_factory=list)  # Set-Cookie lines


@dataclass
class Browser:
    """What a browser does with our cookie: keep it, send it, and the CSRF token with writes."""

    base_url: str
    http: aiohttp.ClientSession
    session_id: str | None = None
    csrf: str | None = None
    seen: list[str] = field(default_factory=list)  # every session id and token handed out

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        csrf: bool = True,
        headers: dict[str, str] | None = None,
    ) -> Answer:
        sent = dict(headers or {})
        if self.session_id:
            sent["Cookie"] = f"{COOKIE}={self.session_id}"
        if csrf and self.csrf and method not in ("GET", "HEAD"):
            sent.setdefault("X-CSRF-Token", self.csrf)
        data = None if body is None else json.dumps(body)
        if data is not None:
            sent["Content-Type"] = "application/json"
        async with self.http.request(method, self.base_url + path, data=data, headers=sent) as response:
            text = await response.text()
            answer = Answer(
                response.status,
                json.loads(text) if text else None,
                dict(response.headers),
                response.headers.getall("Set-Cookie", []),
            )
        _register(answer.body)
        return answer

    async def sign_in(self, email: str, password: str, **extra: str) -> Answer:
        answer = await self.call("POST", "/api/v1/session", {"email": email, "password": password, **extra})
        for line in answer.cookies:
            name, _, rest = line.partition("=")
            if name == COOKIE:
                value = rest.split(";", 1)[0]
                self.session_id = value or None
                if value:
                    self.seen.append(value)
                    leaks.secret("session id", value)
        if answer.status == 201:
            self.csrf = answer.body["csrf_token"]
            self.seen.append(self.csrf)
        return answer
