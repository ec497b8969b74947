"""A small client for the monitor API, bound to one base URL.

Every response is read whole into an :class:`ApiResponse`. A 500 is never an acceptable
answer anywhere in the suite, so the client fails the test on one at once.
"""

from __future__ import annotations

import json as jsonlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import aiohttp

from . import leaks

_UNSET: Any = object()


@dataclass
class ApiResponse:
    method: str
    path: str
    status: int
    headers: dict[str, str]
    text: str

    @property
    def json(self) -> Any:
        try:
            return jsonlib.loads(self.text)
        except ValueError as exc:
            raise AssertionError(
                f"{self.method} {self.path} -> {self.status}: not JSON: {self.text[:300]!r}"
            ) from exc

    @property
    def is_json(self) -> bool:
        return self.headers.get("Content-Type", "").startswith("application/json")

    def __repr__(self) -> str:
        return f"<{self.method} {self.path} -> {self.status} {self.text[:300]}>"


def rfc3339(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


class ApiClient:
    def __init__(self, base_url: str, *, key: str | None = None, timeout: float = 15.0) -> None:
        self.base_url = base_url.rstrip("/")
        # Sent as ``Authorization: Bearer <key>`` unless a request gives its own header.
        self.key = key
        leaks.secret("API key", key)
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None
        self.responses: list[ApiResponse] = []

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self._timeout, trust_env=False)
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def __aenter__(self) -> ApiClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = _UNSET,
        data: str | bytes | None = None,
        params: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
        allow_500: bool = False,
    ) -> ApiResponse:
        """``json`` is sent as a JSON body; ``data`` as raw bytes (for malformed bodies)."""
        kwargs: dict[str, Any] = {"params": params, "headers": dict(headers or {})}
        if self.key is not None:
            kwargs["headers"].setdefault("Authorization", f"Bearer {self.key}")
        if json is not _UNSET:
            kwargs["json"] = json
        elif data is not None:
            kwargs["data"] = data
            kwargs["headers"].setdefault("Content-Type", "application/json")
        async with self.session.request(method, self.base_url + path, **kwargs) as resp:
            text = await resp.text(errors="replace")  # an image (a screenshot) too
            response = ApiResponse(method, path, resp.status, dict(resp.headers), text)
        self.responses.append(response)
        if response.status == 500 and not allow_500:
            raise AssertionError(f"the API answered 500: {response!r}")
        return response

    async def get(self, path: str, **kwargs: Any) -> ApiResponse:
        return await self.request("GET", path, **kwargs)

    async def post(self, path: str, **kwargs: Any) -> ApiResponse:
        return await self.request("POST", path, **kwargs)

    async def patch(self, path: str, **kwargs: Any) -> ApiResponse:
        return await self.request("PATCH", path, **kwargs)

    async def delete(self, path: str, **kwargs: Any) -> ApiResponse:
        return await self.request("DELETE", path, **kwargs)

    # -- shortcuts -----------------------------------------------------------------------

    async def create_monitor(self, **fields: Any) -> dict[str, Any]:
        """POST a monitor (name defaults to "test"); the created monitor, or a failed test."""
        fields.setdefault("name", "test")
        response = await self.post("/api/v1/monitors", json=fields)
        assert response.status == 201, response
        return response.json  # type: ignore[no-any-return]

    async def monitor(self, monitor_id: int) -> dict[str, Any]:
        response = await self.get(f"/api/v1/monitors/{monitor_id}")
        assert response.status == 200, response
        return response.json  # type: ignore[no-any-return]
