"""What every request body shares, and the base of every answer's model."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from monitor.names import RULE as NAME_RULE
from monitor.names import name_problem

TAG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,49}$")
TagName = Annotated[str, Field(pattern=TAG.pattern)]
MonitorId = Annotated[int, Field(strict=True, ge=1, le=2**63 - 1)]


def _name(value: str) -> str:
    problem = name_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


# A monitor's or channel's name, shown in alerts as it is.
Name = Annotated[
    str,
    Field(min_length=1, max_length=200, description=f"shown in alerts: {NAME_RULE}"),
    AfterValidator(_name),
]


class Body(BaseModel):
    """A request body: no unknown fields, strings stripped and free of NUL characters."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    @field_validator("*")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        # PostgreSQL text cannot hold U+0000; refuse it here rather than fail at the INSERT.
        if isinstance(value, str) and "\x00" in value:
            raise ValueError("may not contain NUL characters")
        return value


class Out(BaseModel):
    """An answer: every field documented, none added unseen (schemathesis checks live answers
    against the document, and an extra field breaks it)."""

    model_config = ConfigDict(extra="forbid")
