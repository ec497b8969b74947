"""Sign-in: the bodies of signing in, two factors, a password change, invitations and resets,
and their answers. Never a password, a session id, a TOTP secret or a token in an answer, but
the two that exist to be handed over once: a new TOTP secret (to enrol an app) and the
recovery codes, each in the one answer that makes them."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import ConfigDict, Field

from monitor.domain.context import Role
from monitor.domain.schemas.common import Body, Out

EMAIL = r"^[^@\s]{1,64}@[^@\s]+\.[^@\s]+$"
Email = Annotated[str, Field(min_length=3, max_length=254, pattern=EMAIL, description="an e-mail address")]
# Any password is judged on sign-in (a wrong one fails like any other); 1024 bounds the request.
Password = Annotated[str, Field(min_length=1, max_length=1024)]
Code = Annotated[str, Field(min_length=1, max_length=64)]
Token = Annotated[str, Field(min_length=1, max_length=200, description="the token of the e-mailed link")]


class Secret(Body):
    """A body with a password: kept exactly as typed (spaces are characters of a password)."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)


class SignIn(Secret):
    email: Email
    password: Password
    totp: Code | None = Field(None, description="the app's 6-digit code, when two factors are on")
    recovery_code: Code | None = Field(None, description="one of the recovery codes, instead of `totp`")


class TotpConfirm(Body):
    code: Code = Field(description="the app's current code, proving it holds the secret")


class TotpDisable(Secret):
    password: Password


class PasswordChange(Secret):
    current_password: Password
    new_password: Password = Field(description="at least 12 characters, not a common password")


class InvitationCreate(Body):
    email: Email
    role: Role = Field(description="no higher than the caller's own")


class InvitationAccept(Secret):
    token: Token
    password: Password | None = Field(
        None,
        description="the new user's password (at least 12 characters, not a common one); "
        "an existing user keeps theirs",
    )
    display_name: str = Field("", max_length=100)


class ResetRequest(Body):
    email: Email


class ResetConfirm(Secret):
    token: Token
    password: Password = Field(description="at least 12 characters, not a common password")


# -- answers -----------------------------------------------------------------------------------


class Membership(Out):
    account_id: int
    account: str = Field(description="the account's name")
    role: Role


class Me(Out):
    id: int
    email: str
    display_name: str
    totp_enabled: bool
    memberships: list[Membership]
    csrf_token: str = Field(description="send it as X-CSRF-Token with writes made with the session cookie")
    session_expires_at: datetime


class TotpEnrolment(Out):
    secret: str = Field(description="the base32 secret, shown only in this answer")
    otpauth_uri: str = Field(description="the same as an otpauth:// URI, for a QR code")


class RecoveryCodes(Out):
    recovery_codes: list[str] = Field(description="each works once instead of a code; shown only here")


class Invitation(Out):
    id: int
    email: str
    role: Role
    expires_at: datetime


class Joined(Out):
    account_id: int
    role: Role
    email: str


class Ended(Out):
    ended: int = Field(description="how many sessions were ended")
