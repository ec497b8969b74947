"""The API's error shape: ``{"error": {"code", "message", "field"}}``.

Errors are the domain layer's (``monitor/domain/errors.py``): ``ApiError`` is the same class
under the name the handlers have always used, and ``render_error`` renders one.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from monitor.domain.errors import DomainError, from_validation, not_found

ApiError = DomainError

__all__ = ["ApiError", "DomainError", "error_response", "from_validation", "not_found", "render_error"]


def error_response(
    status: int, code: str, message: str, field: str | None = None, **extra: Any
) -> web.Response:
    body: dict[str, Any] = {"code": code, "message": message}
    if field is not None:
        body["field"] = field
    body.update(extra)
    return web.json_response({"error": body}, status=status)


def render_error(exc: DomainError, **extra: Any) -> web.Response:
    answer = error_response(exc.status, exc.code, exc.message, exc.field, **extra)
    answer.headers.update(exc.headers)
    return answer
