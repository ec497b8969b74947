"""A channel kind's form comes from the monitor forms' schema walker (``schema_form``): the same
labels, widgets, secrets and list rule (one per line or comma-separated)."""

from __future__ import annotations

from monitor.channels import REGISTRY
from monitor.dashboard import channel_form, schema_form


def test_every_kind_is_walked_as_a_monitor_type_is() -> None:
    for kind in REGISTRY.values():
        walked = {
            f.name: f for f in schema_form.fields_of(kind.config.model_json_schema(), secrets=kind.secrets)
        }
        for field in channel_form.fields(kind):
            same = walked[field.prop]
            assert (field.label, field.secret, field.required) == (same.label, same.secret, same.required)
            assert field.name == channel_form.PREFIX + field.prop


def test_labels_secrets_and_lists() -> None:
    webhook = {f.prop: f for f in channel_form.fields(REGISTRY.get("webhook"))}
    assert webhook["url"].label == "URL" and webhook["url"].widget == "password"
    assert webhook["headers"].widget == "pairs" and webhook["headers"].secret
    email = REGISTRY.get("email")
    to = {f.prop: f for f in channel_form.fields(email)}["to"]
    assert to.widget == "lines" and "comma" in to.hint
    config = channel_form.config_of(
        email, {"config.to": "a@example.com, b@example.com\nc@example.com"}, editing=False
    )
    assert config["to"] == ["a@example.com", "b@example.com", "c@example.com"]
