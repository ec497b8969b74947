"""The answers that are the API's own, as pydantic models: its error shape and its probes.

What a resource's answers look like is the domain's (``monitor/domain/schemas/``); these
describe what only the JSON API answers, for the OpenAPI document. Every model forbids extra
fields, which makes an undocumented field a schema violation too.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from monitor.domain.schemas.config import ConfigProblem


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ErrorBody(_Out):
    code: str = Field(description="machine-readable: invalid, invalid_json, not_found, unauthorized, ...")
    message: str
    # Only present when the error concerns one field of the request.
    field: str | SkipJsonSchema[None] = Field(None, description="the field or parameter at fault")
    # Only from POST /api/v1/apply: files that cannot be applied have many problems at once.
    problems: list[ConfigProblem] | SkipJsonSchema[None] = Field(
        None, description="`POST /api/v1/apply` only: every problem of the files, each at its place"
    )


class Error(_Out):
    """Every 4xx and 5xx answer of the API."""

    error: ErrorBody


class Health(_Out):
    status: Literal["ok", "unavailable"]
    database: Literal["up", "down"] | SkipJsonSchema[None] = None
