"""The OpenAPI description of the first run: whether the first owner is still to be made, and
making them with the setup token (the routes of ``api/first_run.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode

from monitor.api.openapi_signin import SET_COOKIE
from monitor.domain.schemas import first_run as models

if TYPE_CHECKING:  # openapi.py imports this module for its MODELS
    from monitor.api.openapi import _Builder as Builder

MODELS: list[tuple[type[BaseModel], JsonSchemaMode]] = [
    (models.FirstOwner, "validation"),
    (models.SetupState, "serialization"),
]
EXAMPLE = {"token": "the-token-of-the-setup-link", "email": "ada@example.com", "name": "Ada",
           "password": "a long passphrase, 2026", "account_name": "acme"}  # fmt: skip


def add_setup(b: Builder) -> None:
    from monitor.api.openapi import _json

    r = b.refs
    # fmt: off
    b.add("get", "/api/v1/setup", "getSetup", "Whether the first owner is still to be made (no user exists)",
          tag="session", public=True, errors=(503,),
          ok={200: _json(r["SetupState"], "`needs_owner` is true on a fresh installation.")})
    b.add("post", "/api/v1/setup", "createFirstOwner",
          "Make the first owner and account of a fresh installation with the setup token that `make run`, "
          "`monitor setup-url` and the api's log print; signs them in",
          tag="session", public=True, errors=(403, 409, 429, 503), body=("FirstOwner", EXAMPLE),
          ok={201: _json(r["Me"], "Made and signed in: the owner and the session's CSRF token.", SET_COOKIE)})
    # fmt: on
