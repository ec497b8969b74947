"""A person at the dashboard without a browser: an HTTP client that signs in through the
sign-in form, carries the session cookie by hand (it is ``Secure``, which a cookie jar keeps
off plain http), reads each page's CSRF token from its ``<meta name="csrf-token">`` and sends
it with the forms it posts. Pages come back parsed (``support.markup``).

    person = await Person.sign_in(base_url, http, email, password)
    page = await person.get("/")
    answer = await person.post("/monitors/new", {"name": "Shop", ...})
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest

from . import leaks
from .inprocess import InProcessFactory
from .markup import Element, parse
from .people import COOKIE


@pytest.fixture(name="http")
async def http_fixture() -> AsyncIterator[aiohttp.ClientSession]:
    """A client session for the test's people (``from support.dashboard import http_fixture``)."""
    async with aiohttp.ClientSession() as session:
        yield session


@pytest.fixture(name="base_url")
async def base_url_fixture(inprocess_api: InProcessFactory) -> str:
    """An in-process api's address, with the test processes' settings (needs
    ``inprocess_api_fixture`` imported too)."""
    return (await inprocess_api()).base_url


@dataclass
class Page:
    status: int
    text: str
    headers: dict[str, str]
    location: str | None

    @property
    def tree(self) -> Element:
        return parse(self.text)


@dataclass
class Person:
    base_url: str
    http: aiohttp.ClientSession
    cookies: dict[str, str] = field(default_factory=dict)
    csrf: str = ""

    @classmethod
    async def sign_in(
        cls, base_url: str, http: aiohttp.ClientSession, email: str, password: str, **extra: str
    ) -> Person:
        person = cls(base_url, http)
        answer = await person.post("/signin", {"email": email, "password": password, **extra}, csrf=False)
        assert answer.status == 303, f"sign-in failed: {answer.status} {answer.text[:500]}"
        assert COOKIE in person.cookies, "no session cookie after signing in"
        await person.get("/")  # for the CSRF token
        return person

    def _cookie_header(self) -> dict[str, str]:
        if not self.cookies:
            return {}
        return {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}

    def _keep(self, response: aiohttp.ClientResponse) -> None:
        for name, morsel in response.cookies.items():
            if morsel.value == "" or morsel.get("max-age") == "0":
                self.cookies.pop(name, None)
            else:
                self.cookies[name] = morsel.value
                if name == COOKIE:
                    leaks.secret("session id", morsel.value)

    async def _page(self, response: aiohttp.ClientResponse) -> Page:
        self._keep(response)
        text = await response.text()
        marker = '<meta name="csrf-token" content="'
        if marker in text:
            self.csrf = text.split(marker, 1)[1].split('"', 1)[0]
            leaks.secret("CSRF token", self.csrf)
        return Page(response.status, text, dict(response.headers), response.headers.get("Location"))

    async def get(self, path: str, headers: dict[str, str] | None = None) -> Page:
        async with self.http.get(
            self.base_url + path, headers={**self._cookie_header(), **(headers or {})}, allow_redirects=False
        ) as response:
            return await self._page(response)

    async def post(
        self,
        path: str,
        form: dict[str, Any] | list[tuple[str, str]],
        *,
        csrf: bool = True,
        headers: dict[str, str] | None = None,
    ) -> Page:
        fields = list(form.items()) if isinstance(form, dict) else list(form)
        if csrf and self.csrf:
            fields.append(("csrf", self.csrf))
        async with self.http.post(
            self.base_url + path,
            data=fields,
            headers={**self._cookie_header(), **(headers or {})},
            allow_redirects=False,
        ) as response:
            return await self._page(response)
