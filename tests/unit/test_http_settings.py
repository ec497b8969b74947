"""An http monitor's settings as every type's are: stored in ``monitors.settings``, turned into
the check's runtime options once per load."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from monitor.checks import REGISTRY
from monitor.checks.base import SettingsError
from monitor.checks.http import PLAIN, HttpOptions
from monitor.domain.errors import from_validation
from monitor.secrets import MASK

# -- stored settings -> runtime options ------------------------------------------------------

OPTIONS = [
    ("plain", {}, None, PLAIN.expected_status, False),
    ("one status", {"expected_status": [[200, 200]]}, None, ((200, 200),), False),
    ("classes", {"expected_status": [[200, 299], [404, 404]]}, None, ((200, 299), (404, 404)), False),
    ("redirects", {"follow_redirects": True}, None, PLAIN.expected_status, True),
    ("with options", {"method": "HEAD", "expected_status": [[204, 204]]}, None, ((204, 204),), False),
    ("secrets only", {}, {"auth": {"type": "bearer", "token": "t"}}, PLAIN.expected_status, False),
]


@pytest.mark.parametrize(
    ("settings", "secrets", "statuses", "follow"), [c[1:] for c in OPTIONS], ids=[c[0] for c in OPTIONS]
)
def test_statuses_and_redirects_are_read_from_the_settings(
    settings: dict[str, Any], secrets: dict[str, Any] | None, statuses: Any, follow: bool
) -> None:
    options = REGISTRY.get("http").options(settings, secrets)
    got = options or PLAIN
    assert (got.expected_status, got.follow_redirects) == (statuses, follow)
    assert (options is None) == (not settings and not secrets)  # a plain monitor pays nothing


@pytest.mark.parametrize(
    ("status", "expected"), [(199, False), (200, True), (204, True), (299, True), (300, False), (404, True)]
)
def test_a_status_is_expected_within_a_range(status: int, expected: bool) -> None:
    options = HttpOptions.from_stored({"expected_status": [[200, 299], [404, 404]]}, None)
    assert options is not None and options.expects(status) is expected


def test_monitors_that_differ_only_in_statuses_or_redirects_share_their_options() -> None:
    first = HttpOptions.from_stored({"expected_status": [[200, 204]], "follow_redirects": True}, None)
    second = HttpOptions.from_stored({"follow_redirects": True, "expected_status": [[200, 204]]}, None)
    assert first is second
    with_body = HttpOptions.from_stored(
        {"method": "POST", "body": "x", "expected_status": [[200, 204]]}, None
    )
    assert with_body is not None and with_body.expected_status is first.expected_status  # type: ignore[union-attr]


# -- HttpCheck.Settings: valid and invalid bodies, each error naming its field ---------------

HTTP = REGISTRY.get("http")
CTX = {"http_max_body_bytes": 10 * 1024 * 1024, "allow_insecure_tls": False}
URL = "https://example.com/health"

VALID = [
    ("the URL alone", {}, {"url": URL, "expected_status": ["200-399"], "follow_redirects": False}),
    ("statuses normalised", {"expected_status": [200, "2xx", "301-302"]},
     {"expected_status": [200, "200-299", "301-302"]}),
    ("redirects", {"follow_redirects": True}, {"follow_redirects": True}),
    ("a URL normalised", {"url": "https://EXAMPLE.com/ä"}, {"url": "https://example.com/%C3%A4"}),
    ("a POST with a body", {"method": "POST", "body": " {}\n", "content_type": "application/json"},
     {"method": "POST", "body": " {}\n", "content_type": "application/json"}),
    ("basic auth", {"auth": {"type": "basic", "username": "u", "password": "p"}},
     {"auth": {"type": "basic", "username": "u", "password": "p"}}),
]  # fmt: skip

INVALID = [
    ("no URL", {"url": None}, "url"),
    ("a URL of another scheme", {"url": "ftp://example.com/"}, "url"),
    ("credentials in the URL", {"url": "https://u:p@example.com/"}, "url"),
    ("no status", {"expected_status": []}, "expected_status"),
    ("a status out of range", {"expected_status": [600]}, "expected_status"),
    ("a reversed range", {"expected_status": ["399-200"]}, "expected_status"),
    ("a status that is a bool", {"expected_status": [True]}, "expected_status.0"),
    ("21 statuses", {"expected_status": [200] * 21}, "expected_status"),
    ("redirects a string", {"follow_redirects": "yes"}, "follow_redirects"),
    ("an unknown field", {"retries": 3}, "retries"),
    ("a body with GET", {"body": "x"}, "body"),
    ("a framing header", {"headers": {"Content-Length": "1"}}, "headers"),
    ("auth and an Authorization header",
     {"auth": {"type": "bearer", "token": "t"}, "headers": {"Authorization": "x"}}, "auth"),
    ("tls_verify false, not allowed", {"tls_verify": False}, "tls_verify"),
    ("a mask of a password on a create", {"auth": {"type": "basic", "username": "u", "password": "********"}},
     "auth.password"),
]  # fmt: skip


def validated(body: dict[str, Any]) -> Any:
    given = {"url": URL, **body}
    settings = HTTP.Settings.model_validate({k: v for k, v in given.items() if v is not None}, context=CTX)
    HTTP.unmask(settings.model_dump(mode="json"), {})
    return settings


@pytest.mark.parametrize(("body", "fields"), [c[1:] for c in VALID], ids=[c[0] for c in VALID])
def test_valid_settings(body: dict[str, Any], fields: dict[str, Any]) -> None:
    settings = validated(body).model_dump(mode="json")
    assert {name: settings[name] for name in fields} == fields


@pytest.mark.parametrize(("body", "field"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
def test_invalid_settings_name_the_field(body: dict[str, Any], field: str) -> None:
    with pytest.raises((ValidationError, SettingsError)) as info:
        validated(body)
    if isinstance(info.value, SettingsError):
        assert info.value.field == field
    else:
        assert from_validation(info.value, HTTP.Settings).field == field


# -- stored, read back, changed: through the type, as the api does ---------------------------

FULL = {
    "url": URL,
    "expected_status": ["200-204", 404],
    "follow_redirects": True,
    "method": "POST",
    "headers": {"X-Env": "prod", "X-Api-Key": "k-1"},
    "body": "{}",
    "auth": {"type": "bearer", "token": "t0k"},
}


def test_the_stored_form_keeps_the_url_out_and_the_secrets_apart() -> None:
    settings, secrets = HTTP.to_stored(validated(FULL))
    assert settings == {
        "expected_status": [[200, 204], [404, 404]],
        "follow_redirects": True,
        "method": "POST",
        "body": "{}",
        "headers": [["X-Env", "prod"]],
    }
    assert secrets == {"headers": [["X-Api-Key", "k-1"]], "auth": {"type": "bearer", "token": "t0k"}}
    assert HTTP.legacy_columns(settings) == {
        "expected_status": [[200, 204], [404, 404]],
        "follow_redirects": True,
    }
    assert HTTP.to_stored(validated({})) == ({}, None)
    assert HTTP.legacy_columns({}) == {"expected_status": [[200, 399]], "follow_redirects": False}


def test_read_back_whole_and_shown_masked() -> None:
    settings, secrets = HTTP.to_stored(validated(FULL))
    whole = HTTP.whole(URL, settings, secrets)
    assert HTTP.Settings.model_validate(whole, context=CTX) == validated(FULL)
    view = {"auth": {"type": "bearer"}, "header_names": ["X-Api-Key"]}
    shown = HTTP.shown(URL, settings, view)
    assert shown == {
        **whole,
        "headers": {"X-Env": "prod", "X-Api-Key": MASK},
        "auth": {"type": "bearer", "token": MASK},
        "content_type": None,
    }
    assert HTTP.shown(URL, {}, None) == validated({}).model_dump(mode="json")


def test_a_mask_sent_back_keeps_the_stored_secret() -> None:
    settings, secrets = HTTP.to_stored(validated(FULL))
    whole = HTTP.whole(URL, settings, secrets)
    given = {"auth": {"type": "bearer", "token": MASK}, "headers": {"X-Api-Key": MASK}}
    assert HTTP.unmask(given, whole) == {
        "auth": {"type": "bearer", "token": "t0k"},
        "headers": {"X-Api-Key": "k-1"},
    }
