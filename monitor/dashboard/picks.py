"""What the forms of maintenance windows and status pages share: the account's monitors to
pick from, and the lists a form posts (monitor ids, tags) as the domain takes them.

Up to ``SHOWN`` monitors are offered as checkboxes (by name); an account with more names the
rest by id in a text field (``monitor_ids_extra``), so the form stays small at ten thousand.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from multidict import MultiDict

from monitor.domain import monitor_lists
from monitor.domain.context import Actor, Deps

SHOWN = 200


async def choices(deps: Deps, actor: Actor) -> tuple[list[tuple[int, str]], bool]:
    """The first monitors (id, name), and whether there are more."""
    found = await monitor_lists.listing(deps, actor, limit=SHOWN)
    return [(m["id"], m["name"]) for m in found["items"]], found["next_cursor"] is not None


def _id(text: str) -> Any:
    text = text.strip()
    return int(text) if text.isdigit() and len(text) < 19 else text  # the domain names a bad one


def monitor_ids(posted: MultiDict[str], name: str = "monitor_ids") -> list[Any]:
    """The ids ticked and those typed (comma or space separated), each once, in order."""
    typed = posted.get(name + "_extra", "").replace(",", " ").split()
    return list(dict.fromkeys(_id(v) for v in [*posted.getall(name, []), *typed] if v.strip()))


def words(text: str) -> list[str]:
    """Tags typed comma separated: each once, in order."""
    return list(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))


def joined(values: Iterable[Any]) -> str:
    return ", ".join(str(v) for v in values)
