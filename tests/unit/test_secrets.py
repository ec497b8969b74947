"""Secrets at rest (monitor/secrets.py): sealing, opening, rotation between keys, the marks,
legacy plaintext, and the stored shape of a monitor's secrets."""

from __future__ import annotations

from typing import Any

import pytest
from cryptography.fernet import Fernet

from monitor import config
from monitor.secrets import (
    MARK,
    SecretBox,
    SecretKeyError,
    generate_key,
    is_sealed,
    map_monitor_secrets,
    open_monitor_secrets,
    parse_keys,
    seal_monitor_secrets,
)

OLD = generate_key()
NEW = generate_key()
OTHER = generate_key()


@pytest.mark.parametrize(
    "text",
    ["hunter2", "", "pässwörd ✓ 🗝", "enc:v1:looks-sealed-but-is-a-password", "x" * 10_000, "a,b\n\t\"'"],
    ids=["plain", "empty", "unicode", "mark-inside", "long", "punctuation"],
)
def test_seal_and_open_round_trip(text: str) -> None:
    box = SecretBox.from_setting(NEW)
    sealed = box.seal(text)
    assert is_sealed(sealed) and sealed.startswith(MARK)
    assert text not in sealed.removeprefix(MARK) or not text
    assert box.open(sealed) == text
    assert box.seal(text) != sealed  # a fresh IV each time: equal secrets do not look equal


@pytest.mark.parametrize(
    ("value", "sealed"),
    [
        ("enc:v1:gAAAA", True),
        ("enc:v1:", True),
        ("hunter2", False),
        ("ENC:V1:gAAAA", False),
        ("enc:v2:gAAAA", False),
        (" enc:v1:gAAAA", False),
        ("", False),
        (None, False),
        (42, False),
        (["enc:v1:x"], False),
    ],
)
def test_is_sealed_is_the_mark(value: object, sealed: bool) -> None:
    assert is_sealed(value) is sealed


@pytest.mark.parametrize("legacy", ["hunter2", "", "Bearer abc", "gAAAAABlegacy-looking-fernet-token"])
def test_a_value_without_the_mark_is_legacy_plaintext_and_opens_as_it_is(legacy: str) -> None:
    assert SecretBox.from_setting(NEW).open(legacy) == legacy


# (keys that sealed, keys that open, opens?)
KEYRINGS = [
    ([NEW], [NEW], True),
    ([OLD], [NEW, OLD], True),  # rotation: the old key still opens
    ([NEW], [NEW, OLD], True),
    ([OLD], [OLD, NEW], True),
    ([OLD, NEW], [OLD], True),  # the first key seals
    ([OLD], [NEW], False),  # the old key dropped too early
    ([OLD, NEW], [NEW], False),
    ([OLD], [NEW, OTHER], False),
]


@pytest.mark.parametrize(("sealed_with", "opened_with", "opens"), KEYRINGS)
def test_which_keys_open_what(sealed_with: list[str], opened_with: list[str], opens: bool) -> None:
    sealed = SecretBox(sealed_with).seal("s3cret")
    box = SecretBox(opened_with)
    if opens:
        assert box.open(sealed) == "s3cret"
    else:
        with pytest.raises(SecretKeyError, match="MONITOR_SECRET_KEY") as caught:
            box.open(sealed)
        assert "s3cret" not in str(caught.value) and NEW not in str(caught.value)


def test_a_changed_token_is_refused_not_misread() -> None:
    box = SecretBox([NEW])
    sealed = box.seal("s3cret")
    flipped = sealed[:-5] + ("A" if sealed[-5] != "A" else "B") + sealed[-4:]
    for damaged in (flipped, sealed[:-10], MARK, MARK + "not-a-token", MARK + "é"):
        with pytest.raises(SecretKeyError, match="MONITOR_SECRET_KEY"):
            box.open(damaged)


def test_rotate_reseals_with_the_first_key_and_leaves_current_values() -> None:
    before = SecretBox([OLD]).seal("s3cret")
    box = SecretBox([NEW, OLD])
    assert not box.is_current(before)
    after = box.rotate(before)
    assert is_sealed(after) and after != before and box.is_current(after)
    assert SecretBox([NEW]).open(after) == "s3cret"  # the old key is no longer needed
    assert box.rotate(after) == after  # idempotent
    legacy = box.rotate("plain")
    assert is_sealed(legacy) and SecretBox([NEW]).open(legacy) == "plain"
    with pytest.raises(SecretKeyError, match="MONITOR_SECRET_KEY"):
        SecretBox([NEW, OTHER]).rotate(before)


def test_seal_fields_and_open_fields_touch_only_the_named_strings() -> None:
    box = SecretBox([NEW])
    config_ = {"url": "https://hooks.slack.test/T/B/x", "secret": "whsec", "port": 587, "name": "ops"}
    sealed = box.seal_fields(config_, ["url", "secret", "port", "password"])
    assert is_sealed(sealed["url"]) and is_sealed(sealed["secret"])
    assert (sealed["port"], sealed["name"]) == (587, "ops") and "password" not in sealed
    assert config_["url"] == "https://hooks.slack.test/T/B/x"  # a copy; the input is unchanged
    assert box.open_fields(sealed, ["url", "secret", "port"]) == config_
    # An old row with a field still in clear opens as it is.
    assert box.open_fields({**sealed, "secret": "whsec"}, ["url", "secret"]) == config_


MONITOR_SECRETS: list[dict[str, Any]] = [
    {"auth": {"type": "basic", "username": "robot", "password": "pw"}},
    {"auth": {"type": "bearer", "token": "tok"}},
    {"headers": [["X-Api-Key", "k-1"], ["Cookie", "sid=1"]]},
    {"auth": {"type": "basic", "username": "u", "password": ""}, "headers": [["Authorization", "Token t"]]},
]


@pytest.mark.parametrize("secrets", MONITOR_SECRETS)
def test_a_monitors_secrets_are_sealed_value_by_value(secrets: dict[str, Any]) -> None:
    box = SecretBox([NEW])
    sealed = seal_monitor_secrets(box, secrets)
    assert sealed is not None
    values: list[str] = []
    map_monitor_secrets(sealed, lambda v: values.append(v) or v)
    assert values and all(is_sealed(v) for v in values)
    # What the API shows stays readable: auth type and username, header names.
    auth = sealed.get("auth") or {}
    assert {k: v for k, v in auth.items() if k in ("type", "username")} == {
        k: v for k, v in (secrets.get("auth") or {}).items() if k in ("type", "username")
    }
    assert [h[0] for h in sealed.get("headers", [])] == [h[0] for h in secrets.get("headers", [])]
    assert open_monitor_secrets(box, sealed) == secrets
    assert open_monitor_secrets(box, secrets) == secrets  # legacy rows read as they are
    assert seal_monitor_secrets(box, None) is None and open_monitor_secrets(box, None) is None


@pytest.mark.parametrize(
    ("setting", "keys"),
    [
        (NEW, [NEW]),
        (f"{NEW},{OLD}", [NEW, OLD]),
        (f" {NEW} , {OLD} ,", [NEW, OLD]),
    ],
)
def test_parse_keys(setting: str, keys: list[str]) -> None:
    assert parse_keys(setting) == keys


@pytest.mark.parametrize(
    ("setting", "says"),
    [
        ("", "no key given"),
        (" , ", "no key given"),
        ("hunter2", "the value is not a Fernet key"),
        (f"{NEW},hunter2", "key 2 of 2 is not a Fernet key"),
        (NEW[:-2], "not a Fernet key"),
        (NEW + "x", "not a Fernet key"),
        (NEW + NEW, "not a Fernet key"),  # a comma forgotten
        (Fernet.generate_key().decode().rstrip("=") + "!", "not a Fernet key"),
    ],
)
def test_a_bad_setting_says_which_part_and_how_to_make_one(setting: str, says: str) -> None:
    with pytest.raises(ValueError, match=says) as caught:
        parse_keys(setting)
    assert "monitor secrets generate-key" in str(caught.value)
    assert "hunter2" not in str(caught.value)


def test_generated_keys_are_fernet_keys_and_differ() -> None:
    keys = {generate_key() for _ in range(20)}
    assert len(keys) == 20
    for key in keys:
        Fernet(key)
        assert parse_keys(key) == [key]


def test_a_box_shows_no_key() -> None:
    box = SecretBox.from_setting(f"{NEW},{OLD}")
    assert repr(box) == "<SecretBox keys=2>" and box.key_count == 2
    assert NEW not in repr(box) and NEW not in str(box)


# -- the setting ------------------------------------------------------------------------------


def test_the_setting_is_hidden_and_gives_the_box() -> None:
    settings = config.load({"MONITOR_SECRET_KEY": f"{NEW},{OLD}"})
    assert settings.secret_key is not None and NEW not in repr(settings)
    box = settings.secret_box()
    assert SecretBox([NEW]).open(box.seal("x")) == "x"
    assert box.open(SecretBox([OLD]).seal("y")) == "y"


@pytest.mark.parametrize("value", ["hunter2", f"{NEW},hunter2", NEW + "x"])
def test_an_invalid_setting_names_the_variable_and_how_to_make_one(value: str) -> None:
    with pytest.raises(config.ConfigError, match="MONITOR_SECRET_KEY") as caught:
        config.load({"MONITOR_SECRET_KEY": value})
    assert "monitor secrets generate-key" in str(caught.value) and "hunter2" not in str(caught.value)


@pytest.mark.parametrize("env", [{}, {"MONITOR_SECRET_KEY": ""}, {"MONITOR_SECRET_KEY": "  "}])
def test_an_unset_key_is_required_with_a_hint(env: dict[str, str]) -> None:
    settings = config.load(env)
    assert settings.secret_key is None
    for fails in (lambda: settings.require("secret_key"), settings.secret_box):
        with pytest.raises(config.ConfigError, match=r"MONITOR_SECRET_KEY is required .*generate-key"):
            fails()
