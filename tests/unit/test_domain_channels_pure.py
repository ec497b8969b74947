"""A channel as every face shows it (secrets masked, a generated one shown once), its config as
stored (sealed), and a change's settings (a masked secret kept, ``null`` made anew): pure."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from monitor.channels import REGISTRY as CHANNEL_KINDS
from monitor.domain.channels import kind_error, patched, render, stored
from monitor.domain.errors import DomainError
from monitor.domain.schemas.channels import ChannelCreate
from monitor.secrets import MASK, SecretBox, generate_key, is_sealed

BOX = SecretBox([generate_key()])
WHEN = datetime(2030, 1, 1, tzinfo=UTC)
HOOK = "https://hooks.example.test/in/x"


def row(kind: str, config: dict[str, Any]) -> dict[str, Any]:
    return {"id": 3, "kind": kind, "name": "n", "config": config, "monitors": 2, "created_at": WHEN,
            "updated_at": WHEN}  # fmt: skip


RENDERED = [
    ("a telegram chat is no secret", row("telegram", {"chat_id": "-100"}), None, {"chat_id": "-100"}),
    ("a webhook's URL and secret masked", row("webhook", {"url": "enc:..", "secret": "enc:.."}), None,
     {"url": MASK, "secret": MASK}),
    ("an absent secret stays null", row("webhook", {"url": "enc:..", "secret": None}), None,
     {"url": MASK, "secret": None}),
    ("a generated secret shown once", row("webhook", {"url": "enc:..", "secret": "enc:.."}),
     {"secret": "whsec_new"}, {"url": MASK, "secret": "whsec_new"}),
    ("a kind this version does not know: nothing masked", row("pigeon", {"loft": "x"}), None, {"loft": "x"}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("found", "shown", "config"), [c[1:] for c in RENDERED], ids=[c[0] for c in RENDERED]
)
def test_render(found: dict[str, Any], shown: dict[str, Any] | None, config: dict[str, Any]) -> None:
    assert render(found, shown=shown) == {
        "id": 3, "kind": found["kind"], "name": "n", "config": config, "monitors": 2,
        "created_at": "2030-01-01T00:00:00Z", "updated_at": "2030-01-01T00:00:00Z",
    }  # fmt: skip


@pytest.mark.parametrize(("body", "kind_field"), [
    ({"kind": "carrier-pigeon", "name": "x", "config": {}}, True),
    ({"name": "x", "config": {}}, True),
    ({"kind": "telegram", "name": "x", "config": {"chat_id": []}}, False),
])  # fmt: skip
def test_an_unknown_kind_lists_the_known_ones(body: dict[str, Any], kind_field: bool) -> None:
    with pytest.raises(ValidationError) as caught:
        ChannelCreate.model_validate(body)
    found = kind_error(caught.value)
    if not kind_field:
        assert found is None
        return
    assert found is not None and found.field == "kind"
    assert all(kind in found.message for kind in CHANNEL_KINDS)


def test_stored_seals_the_secrets_and_shows_only_the_one_it_made() -> None:
    kind = CHANNEL_KINDS["webhook"]
    config, shown = stored(BOX, kind, {"url": HOOK, "secret": None, "headers": None})
    assert set(shown) == {"secret"} and shown["secret"].startswith("whsec_")
    assert is_sealed(config["url"]) and BOX.open(config["url"]) == HOOK
    assert BOX.open(config["secret"]) == shown["secret"]
    given = "whsec_" + "A" * 32
    _, none_made = stored(BOX, kind, {"url": HOOK, "secret": given, "headers": None})
    assert none_made == {}


def test_a_change_keeps_a_masked_or_missing_secret_and_renews_a_null_one() -> None:
    kind = CHANNEL_KINDS["webhook"]
    config, shown = stored(BOX, kind, {"url": HOOK, "secret": None, "headers": None})
    current = row("webhook", config)
    for given in ({"url": MASK}, {"url": MASK, "secret": MASK}, {"url": HOOK}):
        _, settings = patched(BOX, current, given)
        assert settings.model_dump(mode="json")["url"] == HOOK
        assert settings.secret.get_secret_value() == shown["secret"]  # type: ignore[attr-defined]
    _, renewed = patched(BOX, current, {"url": MASK, "secret": None})
    assert renewed.secret is None  # type: ignore[attr-defined]  # stored() makes a new one


@pytest.mark.parametrize(("given", "field"), [
    ({"url": "ftp://x"}, "config.url"),
    ({"url": MASK, "colour": "red"}, "config.colour"),
])  # fmt: skip
def test_a_bad_change_names_the_config_field(given: dict[str, Any], field: str) -> None:
    config, _ = stored(BOX, CHANNEL_KINDS["webhook"], {"url": HOOK, "secret": None, "headers": None})
    with pytest.raises(DomainError) as caught:
        patched(BOX, row("webhook", config), given)
    assert (caught.value.status, caught.value.field) == (422, field)
    assert caught.value.message.startswith(f"{field}: ")


def test_a_kind_this_version_does_not_know_cannot_be_changed() -> None:
    with pytest.raises(DomainError) as caught:
        patched(BOX, row("pigeon", {}), {})
    assert caught.value.status == 409
