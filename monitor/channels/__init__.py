"""Alert channels: one module per kind, each registered here.

A kind is one module with a settings model, a pure renderer and a send function
(:class:`~monitor.channels.base.ChannelKind`); adding one is that module and one
line in ``_KINDS``. The API validates channels against the registry's models (the body
that creates a channel is a union built from them), the scheduler names each event's
destinations with it, and the alerter sends through it. The registry refuses a second
kind of one name (the later would silently have replaced the earlier), and a name the
``channels`` table would refuse (sql/007).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from monitor.channels import discord, email, ntfy, pagerduty, slack, telegram, webhook
from monitor.channels.base import ChannelKind

_KINDS: tuple[ChannelKind, ...] = (
    telegram.KIND,
    webhook.KIND,
    ntfy.KIND,
    slack.KIND,
    discord.KIND,
    email.KIND,
    pagerduty.KIND,
)
# What channels.kind takes (its CHECK constraint, sql/007_channel_kinds_event_order.sql).
NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")


def registry(kinds: Iterable[ChannelKind]) -> dict[str, ChannelKind]:
    """The kinds by name; a ValueError naming the kind for a duplicate or an unfit name."""
    found: dict[str, ChannelKind] = {}
    for kind in kinds:
        if not NAME.match(kind.name):
            raise ValueError(
                f"channel kind {kind.name!r}: a name is {NAME.pattern} (the channels table's rule)"
            )
        if kind.name in found:
            raise ValueError(f"channel kind {kind.name!r} registered twice")
        found[kind.name] = kind
    return found


REGISTRY: dict[str, ChannelKind] = registry(_KINDS)


def get(name: str) -> ChannelKind | None:
    return REGISTRY.get(name)


def carried(row: Mapping[str, Any]) -> dict[str, Any]:
    """A stored channel (a row with its ``id``, ``kind``, ``name`` and ``config``) as an event
    carries it: {"id", "kind", "name", ... its settings}, what :func:`destination` reads."""
    return {"id": row["id"], "kind": row["kind"], "name": row["name"], **row["config"]}


def destination(channel: Mapping[str, Any], event_kind: str | None = None) -> str | None:
    """The destination key of one channel as an event carries it ({"id", "kind", "name", ...
    its settings}); None for a kind this version does not know, or one that does not take
    events of ``event_kind``."""
    kind = REGISTRY.get(str(channel.get("kind")))
    if kind is None or (event_kind is not None and not kind.accepts(event_kind)):
        return None
    return kind.destination_of(channel)
