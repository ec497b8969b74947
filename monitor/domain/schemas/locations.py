"""Where a monitor is checked from, and how many of those places must agree (issue 16, item 3).

``locations`` names the places (each a scheduler group's ``MONITOR_LOCATION``) that check the
monitor every tick, each confirming its own streak; ``quorum`` is how many of the live ones
must see it down before it goes down, and up before it comes back (null: a majority). The
rules here are pure: the request schemas call them on a body, the PATCH operation on the body
merged with the stored monitor (as ``check_timeout`` does for the timeout and the interval).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import AfterValidator, Field

# A scheduler's MONITOR_LOCATION (monitor/config.py ``location``; a unit test keeps the two
# equal): what a monitor's locations are matched against.
LOCATION = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
# The schema's bound on ``quorum`` (sql/015) and so on the number of locations.
MAX_LOCATIONS = 16
LOCATIONS_DOC = (
    "where it is checked: each location's schedulers (MONITOR_LOCATION) check it every tick and "
    "confirm their own streak; the first live location leads. Empty: checked once per tick by "
    f"any scheduler. At most {MAX_LOCATIONS}, no repeats"
)
QUORUM_DOC = (
    "how many of the live locations must see it down for it to go down, and up for it to come "
    "back up: 1 to the number of locations; null: a majority. Null when locations is empty"
)


def _location(value: str) -> str:
    if not LOCATION.match(value):
        raise ValueError(
            f"{value[:40]!r} is not a location: lowercase letters, digits, _ and -, at most 32, "
            "as a scheduler's MONITOR_LOCATION"
        )
    return value


def _distinct(values: list[str]) -> list[str]:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise ValueError(f"{value!r} is listed twice")
        seen.add(value)
    return values


LocationName = Annotated[
    str, Field(json_schema_extra={"pattern": LOCATION.pattern}), AfterValidator(_location)
]
Locations = Annotated[
    list[LocationName], Field(max_length=MAX_LOCATIONS, description=LOCATIONS_DOC), AfterValidator(_distinct)
]
Quorum = Annotated[int, Field(strict=True, ge=1, le=MAX_LOCATIONS)]


def majority(count: int) -> int:
    """The quorum of a monitor that names none: more than half of its ``count`` locations."""
    return count // 2 + 1


def check_quorum(quorum: int | None, locations: Sequence[str], *, unchanged: str | None = None) -> None:
    """Refuse a quorum the locations cannot give: one without locations, or more than there are
    (the monitor could then never go down). ``unchanged`` names the field of the pair a PATCH
    leaves as stored, if one. The error is always about ``quorum``."""
    count = len(locations)
    if quorum is None or 0 < quorum <= count:
        return
    if unchanged == "quorum":
        if count == 0:
            raise ValueError(
                f"the monitor's quorum of {quorum} needs locations; set quorum to null in the same PATCH"
            )
        raise ValueError(
            f"the monitor's quorum of {quorum} is more than the {_locations(count)} given; lower quorum, "
            "or set it to null (a majority), in the same PATCH"
        )
    whose = "the monitor's " if unchanged == "locations" else ""
    if count == 0:
        raise ValueError(
            f"{quorum} without locations: a quorum counts locations (null when {whose}locations is empty)"
        )
    raise ValueError(f"{quorum} is more than {whose}{_locations(count)}: the monitor could never go down")


def _locations(count: int) -> str:
    return f"{count} location" if count == 1 else f"{count} locations"


def patch_problem(values: Mapping[str, Any], stored: Mapping[str, Any]) -> str | None:
    """What is wrong with ``quorum`` once a PATCH's ``values`` (the fields it sets) are laid over
    the ``stored`` monitor; None if nothing. Both given: the schema checked them together."""
    changed = {"locations", "quorum"} & set(values)
    if len(changed) != 1:
        return None
    quorum = values.get("quorum", stored["quorum"])
    locations = values.get("locations", stored["locations"])
    try:
        check_quorum(quorum, locations, unchanged=({"locations", "quorum"} - changed).pop())
    except ValueError as exc:
        return str(exc)
    return None


def unlocated(kind: str) -> Any:
    """A before-validator of ``locations`` for a type that is not checked from anywhere (a
    heartbeat: its job's pings come to the api)."""

    def refuse(cls: Any, value: Any) -> Any:
        if value:
            raise ValueError(f"a {kind} monitor is not checked from locations: its pings come to the api")
        return value

    return refuse
