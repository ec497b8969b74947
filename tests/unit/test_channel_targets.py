"""Where each channel kind connects (``ChannelKind.targets``): the fields the API vets as a
monitor's target. A kind that takes a URL or a host and does not say so would be created
without vetting, so the registry is read here field by field."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import SecretStr

from monitor.channels import REGISTRY
from monitor.channels.base import target_hosts

# Field names that say where a send goes, whatever the kind.
WHERE = ("url", "host", "server", "endpoint", "api_base", "base_url")

# One valid config per kind, its target fields pointing somewhere recognisable.
CONFIGS: dict[str, dict[str, Any]] = {
    "telegram": {"chat_id": "-100123"},
    "webhook": {"url": "https://hooks.example.com/in"},
    "slack": {"url": "https://hooks.slack.example/services/T0/B0/x"},
    "discord": {"url": "https://discord.example/api/webhooks/1/x"},
    "ntfy": {"url": "https://ntfy.example/alerts"},
    "pagerduty": {"routing_key": "a" * 32, "url": "https://events.pagerduty.example/v2/enqueue"},
    "email": {"host": "SMTP.Example.", "from_address": "a@example.com", "to": ["b@example.com"]},
}
HOSTS = {
    "telegram": [],
    "webhook": [("url", "hooks.example.com")],
    "slack": [("url", "hooks.slack.example")],
    "discord": [("url", "discord.example")],
    "ntfy": [("url", "ntfy.example")],
    "pagerduty": [("url", "events.pagerduty.example")],
    "email": [("host", "smtp.example")],
}


def test_every_kind_has_a_case() -> None:
    assert set(CONFIGS) == set(REGISTRY) == set(HOSTS)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_field_that_says_where_is_a_target(name: str) -> None:
    kind = REGISTRY[name]
    fields = set(kind.config.model_fields)
    where = {f for f in fields if f in WHERE or f.endswith(tuple(f"_{w}" for w in WHERE))}
    assert where == set(kind.targets), f"{name}: declare {sorted(where)} in targets"
    assert set(kind.targets) <= fields


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_target_hosts_of_a_validated_config(name: str) -> None:
    kind = REGISTRY[name]
    assert target_hosts(kind, kind.config.model_validate(CONFIGS[name])) == HOSTS[name]


def test_target_hosts_of_literals() -> None:
    webhook, email = REGISTRY["webhook"], REGISTRY["email"]
    assert target_hosts(webhook, webhook.config.model_validate({"url": "http://[::1]:8080/x"})) == [
        ("url", "::1")
    ]
    settings = email.config.model_validate({**CONFIGS["email"], "host": "[::1]"})
    assert target_hosts(email, settings) == [("host", "::1")]
    slack = REGISTRY["slack"]
    settings = slack.config.model_validate({"url": "http://10.0.0.1/hook"})
    assert isinstance(settings.url, SecretStr)  # type: ignore[attr-defined]
    assert target_hosts(slack, settings) == [("url", "10.0.0.1")]
