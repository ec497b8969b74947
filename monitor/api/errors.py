"""The API's error shape: ``{"error": {"code", "message", "field"}}``."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from pydantic import BaseModel, ValidationError

from monitor.api.fieldpath import field_path


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        field: str | None = None,
        *,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.headers = headers or {}

    def response(self, **extra: Any) -> web.Response:
        response = error_response(self.status, self.code, self.message, self.field, **extra)
        response.headers.update(self.headers)
        return response


def error_response(
    status: int, code: str, message: str, field: str | None = None, **extra: Any
) -> web.Response:
    body: dict[str, Any] = {"code": code, "message": message}
    if field is not None:
        body["field"] = field
    body.update(extra)
    return web.json_response({"error": body}, status=status)


def not_found(what: str) -> ApiError:
    return ApiError(404, "not_found", f"{what} not found")


def from_validation(
    exc: ValidationError, model: type[BaseModel] | None = None, *, status: int = 422, prefix: str = ""
) -> ApiError:
    """The first problem of a pydantic error, with the field it concerns. Given the ``model``
    that failed, the field is named as the client wrote it, without the union branches pydantic
    adds (``expected_status.0``, not ``expected_status.0.int``; ``assertions.1.path``)."""
    first = exc.errors(include_url=False)[0]
    loc = first["loc"]
    field = (field_path(model, loc) if model else ".".join(str(p) for p in loc)) or None
    message = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        message = "unknown field"
    elif first["type"] == "missing":
        message = "field required"
    if field:
        message = f"{prefix}{field}: {message}"
    return ApiError(status, "invalid", message, field)
