"""The first run: the body that makes the first owner and account, and the answer saying
whether one is still to be made (``monitor/domain/first_run.py``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from monitor import passwords
from monitor.domain.schemas.common import Out
from monitor.domain.schemas.signin import Email, Password, Secret
from monitor.names import RULE as NAME_RULE
from monitor.names import name_problem

# The accounts.name CHECK constraint (sql/002), as domain/accounts.py's MAX_ACCOUNT_NAME.
MAX_ACCOUNT_NAME = 100
MAX_DISPLAY_NAME = 100


def _name(value: str) -> str:
    problem = name_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def _display_name(value: str) -> str:
    return _name(value) if value else value


def _new_password(value: str) -> str:
    problem = passwords.problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


DisplayName = Annotated[
    str,
    Field(max_length=MAX_DISPLAY_NAME, description=f"the name shown for the owner: {NAME_RULE}"),
    AfterValidator(_display_name),
]
AccountName = Annotated[
    str,
    Field(min_length=1, max_length=MAX_ACCOUNT_NAME, description=f"the first account's name: {NAME_RULE}"),
    AfterValidator(_name),
]


class FirstOwner(Secret):
    token: str = Field(
        min_length=1,
        max_length=200,
        description="the setup token of the link `make run` and the api's log print",
    )
    email: Email
    name: DisplayName = ""
    password: Annotated[Password, AfterValidator(_new_password)] = Field(
        description="at least 12 characters, not a common password"
    )
    account_name: AccountName


class SetupState(Out):
    needs_owner: bool = Field(description="true while no user exists: the first owner is still to be made")
