"""People of an account: the bodies that add a member and change a role, a user as made by the
operator, and the answers (members, the audit log)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import Field

from monitor.domain.context import Role
from monitor.domain.schemas.common import Body, Out

EMAIL = r"^[^@\s]{1,64}@[^@\s]+\.[^@\s]+$"
Email = Annotated[str, Field(min_length=3, max_length=254, pattern=EMAIL, description="an e-mail address")]


class UserCreate(Body):
    email: Email
    display_name: str = Field("", max_length=100)


class MemberAdd(Body):
    email: Email = Field(description="the user's e-mail (case does not matter)")
    role: Role = Field(description="no higher than the caller's own")


class MemberPatch(Body):
    role: Role = Field(description="no higher than the caller's own; the last owner stays owner")


# -- answers -----------------------------------------------------------------------------------


class Member(Out):
    id: int = Field(description="the user's id")
    email: str
    display_name: str
    role: Role
    created_at: datetime = Field(description="when the user joined the account")


class MemberList(Out):
    items: list[Member]
    next_cursor: str | None


class AuditUser(Out):
    id: int
    email: str | None


class AuditEntry(Out):
    id: int
    at: datetime
    user: AuditUser | None = Field(description="the signed-in person, or the key's maker")
    key_id: int | None = Field(description="the API key the change came with")
    resource: str
    object_id: str | None
    operation: str
    fields: list[str] = Field(description="the names of the fields the request gave, never their values")
    address: str | None = Field(description="the client's address")


class AuditList(Out):
    items: list[AuditEntry]
    next_cursor: str | None
