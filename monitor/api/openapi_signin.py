"""The OpenAPI description of signing in: the session and its cookie, ``/api/v1/me`` and the
user's own credentials (the routes of ``api/sessions.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode

from monitor.domain.schemas import signin as models
from monitor.domain.session_ids import COOKIE

if TYPE_CHECKING:  # openapi.py imports this module for its MODELS
    from monitor.api.openapi import _Builder as Builder

MODELS: list[tuple[type[BaseModel], JsonSchemaMode]] = [
    *((m, "validation") for m in (models.SignIn, models.TotpConfirm, models.TotpDisable,
                                  models.PasswordChange, models.InvitationCreate, models.InvitationAccept,
                                  models.ResetRequest, models.ResetConfirm)),
    *((m, "serialization") for m in (models.Me, models.TotpEnrolment, models.RecoveryCodes,
                                     models.Ended, models.Invitation, models.Joined)),
]  # fmt: skip
SCHEME = {
    "type": "apiKey",
    "in": "cookie",
    "name": COOKIE,
    "description": "a dashboard session (POST /api/v1/session sets it); writes with it need the "
    "`X-CSRF-Token` header (the `csrf_token` of the sign-in answer and of `GET /api/v1/me`) or an "
    "`Origin` of this site, and `X-Monitor-Account` names the account when the user is a member of "
    "several",
}
SESSION_ONLY: list[dict[str, list[str]]] = [{"session": []}]
SET_COOKIE = {"Set-Cookie": {"required": True, "schema": {"type": "string"},
                             "description": f"{COOKIE}: Secure; HttpOnly; SameSite=Lax; Path=/"}}  # fmt: skip


def _session_only(b: Builder, path: str, method: str) -> None:
    b.paths[path][method]["security"] = SESSION_ONLY


def add_signin(b: Builder) -> None:
    from monitor.api.openapi import _json

    r = b.refs
    # fmt: off
    b.add("post", "/api/v1/session", "signIn",
          "Sign in with an e-mail and password (and a one-time or recovery code when two factors are on)",
          tag="session", public=True, errors=(401, 429, 503),
          body=("SignIn", {"email": "ada@example.com", "password": "correct horse battery"}),
          ok={201: _json(r["Me"], "Signed in: the user, and the session's CSRF token.", SET_COOKIE)})
    b.add("delete", "/api/v1/session", "signOut", "Sign out (this session)", tag="session",
          ok={204: {"description": "Signed out; the cookie is cleared."}})
    b.add("delete", "/api/v1/sessions", "signOutEverywhere", "Sign out everywhere (every session)",
          tag="session", ok={200: _json(r["Ended"], "How many sessions were ended.")})
    b.add("get", "/api/v1/me", "getMe", "The signed-in user, their accounts and roles", tag="session",
          ok={200: _json(r["Me"], "The user.")})
    b.add("post", "/api/v1/me/totp", "enrolTotp", "Start turning two factors on: a new secret for the app",
          tag="session", errors=(409,),
          ok={201: _json(r["TotpEnrolment"], "The secret, shown only here.")})
    b.add("post", "/api/v1/me/totp/confirm", "confirmTotp", "Turn two factors on with the app's first code",
          tag="session", errors=(409,), body=("TotpConfirm", {"code": "123456"}),
          ok={200: _json(r["RecoveryCodes"], "On; the recovery codes, shown only here.")})
    b.add("post", "/api/v1/me/totp/disable", "disableTotp", "Turn two factors off (needs the password)",
          tag="session", errors=(403,), body=("TotpDisable", {"password": "correct horse battery"}),
          ok={204: {"description": "Off; the recovery codes are deleted."}})
    b.add("post", "/api/v1/me/password", "changePassword",
          "Change the password; every other session of the user ends", tag="session", errors=(403,),
          body=("PasswordChange", {"current_password": "correct horse battery",
                                   "new_password": "a longer passphrase, 2026"}),
          ok={200: _json(r["Ended"], "Changed; how many other sessions were ended.")})
    b.add("post", "/api/v1/invitations", "createInvitation",
          "Invite someone to the account by e-mail (a link that works once, for MONITOR_INVITATION_HOURS)",
          tag="members", errors=(403, 409),
          body=("InvitationCreate", {"email": "bo@example.com", "role": "viewer"}),
          ok={201: _json(r["Invitation"], "Invited; the link went by e-mail (never in this answer).")})
    b.add("post", "/api/v1/invitations/accept", "acceptInvitation",
          "Accept an invitation with the token of its link (a new user sets a password)", tag="session",
          public=True, errors=(503,),
          body=("InvitationAccept", {"token": "the-token", "password": "a long one, 2026"}),
          ok={200: _json(r["Joined"], "A member of the account now.")})
    b.add("post", "/api/v1/password-resets", "requestPasswordReset",
          "Ask for a password reset by e-mail (the same answer whether or not a user has it)", tag="session",
          public=True, errors=(503,), body=("ResetRequest", {"email": "ada@example.com"}),
          ok={202: {"description": "If a user has this e-mail, a link is on its way."}})
    b.add("post", "/api/v1/password-resets/confirm", "confirmPasswordReset",
          "Set a new password with the token of a reset's link; every session of the user ends",
          tag="session", public=True, errors=(503,), body=("ResetConfirm", {"token": "the-token",
                                                                             "password": "a long one, 2026"}),
          ok={200: _json(r["Ended"], "Changed; how many sessions were ended.")})
    # fmt: on
    for path, method in (
        ("/api/v1/session", "delete"),
        ("/api/v1/sessions", "delete"),
        ("/api/v1/me", "get"),
        ("/api/v1/me/totp", "post"),
        ("/api/v1/me/totp/confirm", "post"),
        ("/api/v1/me/totp/disable", "post"),
        ("/api/v1/me/password", "post"),
    ):
        _session_only(b, path, method)


def extra(document: dict[str, Any]) -> None:
    """What signing in adds to the document as a whole: the cookie's scheme, as an alternative."""
    document["security"].append({"session": []})
    document["components"]["securitySchemes"]["session"] = SCHEME
