"""What an operation tells its caller when it cannot do what was asked.

A ``DomainError`` carries the HTTP status a JSON client gets (the faces share the codes: the
dashboard shows the message next to ``field``, the CLI prints it and exits non-zero), a stable
``code`` (``invalid``, ``not_found``, ``forbidden``, ``conflict``, ``target_blocked``, ...), a
message naming what was wrong, and the field it is about, as the client wrote it.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from monitor.domain.fieldpath import field_path

Model = TypeVar("Model", bound=BaseModel)


class DomainError(Exception):
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


def not_found(what: str) -> DomainError:
    return DomainError(404, "not_found", f"{what} not found")


def from_validation(
    exc: ValidationError, model: type[BaseModel] | None = None, *, status: int = 422, prefix: str = ""
) -> DomainError:
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
    return DomainError(status, "invalid", message, field)


def validated(model: type[Model], body: Any) -> Model:
    """``body`` as ``model``; else a 422 naming the first field at fault (``from_validation``)."""
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise from_validation(exc, model) from None
