"""The channel registry (monitor/channels/__init__.py): one kind per name, and a kind is all
that the API, the scheduler and the alerter need."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import BaseModel

from monitor import channels
from monitor.channels import REGISTRY, registry, slack, telegram, webhook
from monitor.domain.schemas.channels import ChannelCreate


def test_every_kind_once_under_its_own_name() -> None:
    assert all(name == kind.name for name, kind in REGISTRY.items())
    assert len(REGISTRY) == len(channels._KINDS)


@pytest.mark.parametrize(
    ("kinds", "error"),
    [
        ((telegram.KIND, slack.KIND, telegram.KIND), "channel kind 'telegram' registered twice"),
        ((webhook.KIND, replace(slack.KIND, name="webhook")), "channel kind 'webhook' registered twice"),
        ((replace(slack.KIND, name="Slack"),), "channel kind 'Slack': a name is"),
        ((replace(slack.KIND, name=""),), "channel kind '': a name is"),
        ((replace(slack.KIND, name="s" * 33),), "a name is"),
    ],
)
def test_a_duplicate_or_unfit_name_is_refused(kinds: tuple[channels.ChannelKind, ...], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        registry(kinds)


def test_distinct_kinds_register() -> None:
    assert list(registry((telegram.KIND, replace(slack.KIND, name="chat_2")))) == ["telegram", "chat_2"]


def test_the_api_takes_every_registered_kind() -> None:
    """The body that creates a channel is built from the registry: a kind added there is taken
    by the API with no edit of its schemas."""
    union = ChannelCreate.model_json_schema()
    tags = set(union["discriminator"]["mapping"])
    assert tags == set(REGISTRY)
    for name, kind in REGISTRY.items():
        assert issubclass(kind.config, BaseModel), name


def test_docs_name_every_kind() -> None:
    """docs/channels.md's table has a row per registered kind, and no other."""
    table = (Path(__file__).resolve().parents[2] / "docs" / "channels.md").read_text()
    rows = set(re.findall(r"^\| `([a-z][a-z0-9_]*)` \|", table, flags=re.MULTILINE))
    assert rows == set(REGISTRY)
