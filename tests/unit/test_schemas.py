"""Request validation: every field names itself in the error; request options stored and shown."""

import re
from typing import Any, Literal

import pytest
from pydantic import ValidationError

from monitor.api.errors import ApiError, from_validation
from monitor.checks import http_stored as http
from monitor.checks.base import SettingsError
from monitor.checks.http_settings import MAX_URL_LENGTH, parse_status_ranges, render_status_ranges
from monitor.checks.http_stored import BasicAuthShown, BearerAuthShown
from monitor.domain.schemas.monitors import HttpMonitorCreate, MonitorPatch, check_timeout
from monitor.secrets import MASK

CTX = {"min_interval_seconds": 30}
GOOD = {"name": "site", "url": "https://example.com/health", "interval_seconds": 60}


def field_of(body: dict, model: type = HttpMonitorCreate) -> str | None:
    with pytest.raises(ValidationError) as info:
        model.model_validate(body, context=CTX)
    return from_validation(info.value, model).field


def test_defaults() -> None:
    spec = HttpMonitorCreate.model_validate(GOOD, context=CTX)
    assert spec.expected_status == ["200-399"]
    assert spec.confirm_after == 2 and spec.type == "http" and not spec.paused


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"url": "ftp://example.com/"}, "url"),
        ({"url": "not a url"}, "url"),
        ({"url": "http://user:pw@example.com/"}, "url"),
        ({"interval_seconds": 10}, "interval_seconds"),
        ({"interval_seconds": "60"}, "interval_seconds"),
        ({"interval_seconds": 10**9}, "interval_seconds"),
        ({"timeout_seconds": -1}, "timeout_seconds"),
        ({"timeout_seconds": 0}, "timeout_seconds"),
        ({"type": "tcp"}, "type"),
        ({"confirm_after": 0}, "confirm_after"),
        ({"confirm_after": True}, "confirm_after"),
        ({"expected_status": []}, "expected_status"),
        ({"expected_status": ["600"]}, "expected_status"),
        ({"expected_status": ["399-200"]}, "expected_status"),
        ({"telegram_chat_id": "not a chat"}, "telegram_chat_id"),
        ({"name": ""}, "name"),
        ({"bogus": 1}, "bogus"),
    ],
)
def test_bad_fields_are_named(change: dict, field: str) -> None:
    assert field_of({**GOOD, **change}) == field


def test_missing_fields_are_named() -> None:
    assert field_of({"url": "https://example.com/"}) == "name"


def test_patch_refuses_null_for_required_fields() -> None:
    assert field_of({"interval_seconds": None}, MonitorPatch) == "interval_seconds"
    assert MonitorPatch.model_validate({"telegram_chat_id": None}, context=CTX).telegram_chat_id is None


@pytest.mark.parametrize(
    ("given", "ranges"),
    [
        ([200], [[200, 200]]),
        (["2xx", "301-302"], [[200, 299], [301, 302]]),
        ([404, "5xx"], [[404, 404], [500, 599]]),
    ],
)
def test_status_ranges_round_trip(given: list, ranges: list) -> None:
    assert parse_status_ranges(given) == ranges
    assert parse_status_ranges(render_status_ranges(ranges)) == ranges


# -- request options (checks/http_settings.py, http_stored.py) -------------------------------

HTTP_CTX = {"min_interval_seconds": 30, "http_max_body_bytes": 10 * 1024 * 1024, "allow_insecure_tls": False}
BASIC = {"type": "basic", "username": "u", "password": "hunter2"}


def invalid_field(
    body: dict[str, Any], model: type = HttpMonitorCreate, context: dict | None = None
) -> ApiError:
    with pytest.raises(ValidationError) as info:
        model.model_validate(body, context=HTTP_CTX if context is None else context)
    return from_validation(info.value, model)


BAD_OPTIONS = [
    ("method unknown", {"method": "TRACE"}, "method"),
    ("method in lower case", {"method": "post"}, "method"),
    ("headers not an object", {"headers": [["X-A", "1"]]}, "headers"),
    ("header value not a string", {"headers": {"X-A": 1}}, "headers.X-A"),
    ("header name with a space", {"headers": {"X A": "1"}}, "headers"),
    ("header name with a colon", {"headers": {"X:A": "1"}}, "headers"),
    ("header name empty", {"headers": {"": "1"}}, "headers"),
    ("header value with CR LF", {"headers": {"X-A": "1\r\nX-B: 2"}}, "headers"),
    ("header value with NUL", {"headers": {"X-A": "1\x00"}}, "headers"),
    ("header value over 8 KiB", {"headers": {"X-A": "v" * 8193}}, "headers"),
    ("header given twice in two cases", {"headers": {"X-A": "1", "x-a": "2"}}, "headers"),
    ("51 headers", {"headers": {f"X-{i}": "v" for i in range(51)}}, "headers"),
    *((f"framing header {name}", {"headers": {name: "1"}}, "headers")
      for name in ("Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "Upgrade", "TE",
                   "expect")),
    ("body with GET", {"body": "x"}, "body"),
    ("body with HEAD", {"method": "HEAD", "body": "x"}, "body"),
    ("a body assertion with HEAD", {"method": "HEAD", "assertions": [{"type": "keyword", "keyword": "a"}]},
     "assertions"),
    ("body over 16 KiB", {"method": "POST", "body": "é" * 8193}, "body"),
    ("body not a string", {"method": "POST", "body": {"a": 1}}, "body"),
    ("body with NUL", {"method": "POST", "body": "a\x00"}, "body"),
    ("content_type without a body", {"content_type": "text/plain"}, "content_type"),
    ("content_type not a media type", {"method": "POST", "body": "x", "content_type": "json"},
     "content_type"),
    ("content_type with CR LF", {"method": "POST", "body": "x", "content_type": "a/b\r\nX: 1"},
     "content_type"),
    ("content_type twice",
     {"method": "POST", "body": "x", "content_type": "a/b", "headers": {"content-type": "a/b"}},
     "content_type"),
    ("auth of unknown type", {"auth": {"type": "digest"}}, "auth"),
    ("auth without type", {"auth": {"username": "u", "password": "p"}}, "auth"),
    ("auth a string", {"auth": "Bearer t"}, "auth"),
    ("basic auth without password", {"auth": {"type": "basic", "username": "u"}}, "auth.password"),
    ("basic auth user with a colon", {"auth": {**BASIC, "username": "a:b"}}, "auth.username"),
    ("basic auth password with LF", {"auth": {**BASIC, "password": "p\n"}}, "auth.password"),
    ("basic auth extra field", {"auth": {**BASIC, "realm": "x"}}, "auth.realm"),
    ("bearer token empty", {"auth": {"type": "bearer", "token": ""}}, "auth.token"),
    ("bearer token too long", {"auth": {"type": "bearer", "token": "t" * 4097}}, "auth.token"),
    ("auth and an Authorization header", {"auth": BASIC, "headers": {"authorization": "Basic x"}}, "auth"),
    ("max_body_bytes zero", {"max_body_bytes": 0}, "max_body_bytes"),
    ("max_body_bytes over the setting", {"max_body_bytes": 10 * 1024 * 1024 + 1}, "max_body_bytes"),
    ("max_body_bytes a float", {"max_body_bytes": 1.5}, "max_body_bytes"),
    ("max_body_bytes a string", {"max_body_bytes": "1024"}, "max_body_bytes"),
    ("tls_verify false, not allowed", {"tls_verify": False}, "tls_verify"),
    ("tls_verify a string", {"tls_verify": "false"}, "tls_verify"),
    ("assertions not a list", {"assertions": {"type": "keyword"}}, "assertions"),
    ("21 assertions", {"assertions": [{"type": "keyword", "keyword": "a"}] * 21}, "assertions"),
    ("assertion of unknown type", {"assertions": [{"type": "xpath"}]}, "assertions.0"),
    ("assertion missing a field", {"assertions": [{"type": "keyword"}]}, "assertions.0.keyword"),
    ("second assertion's path",
     {"assertions": [{"type": "keyword", "keyword": "a"}, {"type": "json", "path": "$.", "op": "exists"}]},
     "assertions.1.path"),
    ("json value missing", {"assertions": [{"type": "json", "path": "$.a", "op": "=="}]},
     "assertions.0.value"),
    ("regex does not compile", {"assertions": [{"type": "regex", "pattern": "("}]}, "assertions.0.pattern"),
    ("header assertion name", {"assertions": [{"type": "header", "name": "a b", "op": "exists"}]},
     "assertions.0.name"),
    ("response time zero", {"assertions": [{"type": "response_time", "below_ms": 0}]},
     "assertions.0.below_ms"),
]  # fmt: skip


@pytest.mark.parametrize(("change", "field"), [c[1:] for c in BAD_OPTIONS], ids=[c[0] for c in BAD_OPTIONS])
def test_bad_request_options_are_named(change: dict[str, Any], field: str) -> None:
    error = invalid_field({**GOOD, **change})
    assert (error.status, error.field) == (422, field), error.message
    assert error.message.startswith(f"{field}: "), error.message


SECRETS_IN_BAD_INPUT = [
    {"auth": {"type": "basic", "username": "u", "password": "S3cr3t-pass\n"}},
    {"auth": {"type": "bearer", "token": "S3cr3t-token" * 400}},
    {"auth": {"type": "bearer", "token": 12345678901}},
    {"headers": {"X-Api-Key": "S3cr3t\r\nkey"}},
    {"headers": {"Authorization": "S3cr3t" * 2000}},
    {"headers": {"Authorization": "S3cr3t"}, "auth": {"type": "bearer", "token": "S3cr3t"}},
]


@pytest.mark.parametrize("change", SECRETS_IN_BAD_INPUT, ids=str)
def test_an_error_never_quotes_a_secret(change: dict[str, Any]) -> None:
    error = invalid_field({**GOOD, **change})
    assert "S3cr3t" not in error.message and "12345678901" not in error.message, error.message


def test_patch_leaves_the_rules_between_fields_to_the_options_as_changed() -> None:
    patch = MonitorPatch.model_validate({"body": "x", "content_type": "text/plain"}, context=HTTP_CTX)
    assert patch.body == "x"
    assert invalid_field({"method": None}, MonitorPatch).field == "method"
    assert invalid_field({"assertions": None}, MonitorPatch).field == "assertions"
    assert MonitorPatch.model_validate({"auth": None, "body": None}, context=HTTP_CTX).auth is None


def test_limits_come_from_the_validation_context() -> None:
    allowing = {**HTTP_CTX, "allow_insecure_tls": True, "http_max_body_bytes": 100}
    spec = HttpMonitorCreate.model_validate(
        {**GOOD, "tls_verify": False, "max_body_bytes": 100}, context=allowing
    )
    assert spec.tls_verify is False and spec.max_body_bytes == 100
    assert invalid_field({**GOOD, "max_body_bytes": 101}, context=allowing).field == "max_body_bytes"
    error = invalid_field({**GOOD, "tls_verify": False})
    assert "MONITOR_ALLOW_INSECURE_TLS" in error.message
    # Without a context: the defaults (10 MiB, no insecure TLS).
    assert HttpMonitorCreate.model_validate({**GOOD, "max_body_bytes": 10 * 1024 * 1024}).max_body_bytes > 0


def test_the_request_body_keeps_its_whitespace() -> None:
    spec = HttpMonitorCreate.model_validate({**GOOD, "method": "POST", "body": "  {}\n"}, context=HTTP_CTX)
    assert spec.body == "  {}\n"


SECRET_NAMES = [
    ("Authorization", True), ("proxy-authorization", True), ("Cookie", True), ("X-Api-Key", True),
    ("X-API-KEY", True), ("apikey", True), ("Api_Key", True), ("X-Auth-Token", True), ("X-Session-Id", True),
    ("X-Client-Secret", True), ("X-Password", True), ("passwd", True), ("X-Access-Token", True),
    ("Accept", False), ("X-Env", False), ("User-Agent", False), ("Content-Type", False), ("Host", False),
]  # fmt: skip


@pytest.mark.parametrize(("name", "secret"), SECRET_NAMES, ids=[n for n, _ in SECRET_NAMES])
def test_which_headers_are_secret(name: str, secret: bool) -> None:
    assert http.is_secret_header(name) is secret


def stored_of(body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    spec = HttpMonitorCreate.model_validate(
        {**GOOD, **body}, context={**HTTP_CTX, "allow_insecure_tls": True}
    )
    return http.to_stored(http.unmask(spec.model_dump(include=set(http.FIELDS), mode="json"), {}))


def test_a_plain_monitor_stores_nothing() -> None:
    assert stored_of({}) == ({}, None)
    explicit = {"method": "GET", "headers": {}, "body": None, "content_type": None, "auth": None,
                "max_body_bytes": 1_048_576, "tls_verify": True, "assertions": []}  # fmt: skip
    assert stored_of(explicit) == ({}, None)


def test_stored_form_splits_secrets_out_and_reads_back_masked() -> None:
    body = {
        "method": "POST",
        "headers": {"X-Env": "prod", "Authorization": "Token abc", "X-Api-Key": "k-1", "Accept": "text/html"},
        "body": '{"q": 1}',
        "content_type": "application/json",
        "auth": None,
        "max_body_bytes": 4096,
        "tls_verify": False,
        "assertions": [{"type": "json", "path": "$.ok", "op": "==", "value": True}],
    }
    settings, secrets = stored_of(body)
    assert settings == {
        "method": "POST",
        "body": '{"q": 1}',
        "content_type": "application/json",
        "max_body_bytes": 4096,
        "tls_verify": False,
        "assertions": [{"type": "json", "path": "$.ok", "op": "==", "value": True}],
        "headers": [["X-Env", "prod"], ["Accept", "text/html"]],
    }
    assert secrets == {"headers": [["Authorization", "Token abc"], ["X-Api-Key", "k-1"]]}
    view = {"auth": None, "header_names": ["Authorization", "X-Api-Key"]}
    shown = http.render(settings, view)
    assert shown["headers"] == {
        "X-Env": "prod",
        "Accept": "text/html",
        "Authorization": MASK,
        "X-Api-Key": MASK,
    }
    assert {k: v for k, v in shown.items() if k != "headers"} == {
        k: v for k, v in body.items() if k != "headers"
    }
    assert http.from_stored(settings, secrets) == body


@pytest.mark.parametrize(
    ("auth", "shown"),
    [
        (BASIC, {"type": "basic", "username": "u", "password": MASK}),
        ({"type": "bearer", "token": "t0k"}, {"type": "bearer", "token": MASK}),
    ],
    ids=["basic", "bearer"],
)
def test_auth_is_a_secret_and_reads_masked(auth: dict[str, Any], shown: dict[str, Any]) -> None:
    settings, secrets = stored_of({"auth": auth})
    assert settings == {} and secrets == {"auth": auth}
    view = {"auth": {k: v for k, v in auth.items() if k not in ("password", "token")}, "header_names": []}
    assert http.render(settings, view)["auth"] == shown


def test_a_mask_sent_back_keeps_the_stored_secret() -> None:
    stored = http.from_stored({}, {"auth": BASIC, "headers": [["X-Api-Key", "k-1"]]})
    given = {
        "auth": {"type": "basic", "username": "v", "password": MASK},
        "headers": {"x-api-key": MASK, "X-B": MASK},
    }
    assert http.unmask(given, stored) == {
        "auth": {"type": "basic", "username": "v", "password": "hunter2"},
        "headers": {"x-api-key": "k-1", "X-B": MASK},  # X-B is not a secret header: the mask is its value
    }


@pytest.mark.parametrize(
    ("given", "field"),
    [
        ({"auth": {"type": "bearer", "token": MASK}}, "auth.token"),  # stored auth is basic
        ({"auth": {"type": "basic", "username": "u", "password": MASK}}, None),
        ({"headers": {"X-Token": MASK}}, "headers"),
    ],
    ids=["other auth type", "same auth type", "no such secret header"],
)
def test_a_mask_with_nothing_to_keep_is_refused(given: dict[str, Any], field: str | None) -> None:
    stored = http.from_stored({}, {"auth": BASIC})
    if field is None:
        assert http.unmask(given, stored)["auth"]["password"] == "hunter2"
        return
    with pytest.raises(SettingsError) as info:
        http.unmask(given, stored)
    assert info.value.field == field
    with pytest.raises(SettingsError):  # nothing is stored on a create
        http.unmask(dict(given), {})


def test_the_shown_auth_models_use_the_mask() -> None:
    assert BasicAuthShown.model_fields["password"].annotation == Literal[MASK]  # type: ignore[valid-type]
    assert BearerAuthShown.model_fields["token"].annotation == Literal[MASK]  # type: ignore[valid-type]


# -- timeout, URL length, credentials in the URL -----------------------------------------------

SHORT = {"min_interval_seconds": 1}


@pytest.mark.parametrize(
    ("given", "timeout"),
    [
        ({"interval_seconds": 60}, 10),  # the default
        ({"interval_seconds": 60, "timeout_seconds": 60}, 60),  # as long as the interval: fine
        ({"interval_seconds": 5}, 5),  # the default, shortened to an interval below it
        ({"interval_seconds": 5, "timeout_seconds": 2.5}, 2.5),
    ],
    ids=["default", "equal", "default above the interval", "below"],
)
def test_a_timeout_within_the_interval_is_taken(given: dict[str, Any], timeout: float) -> None:
    spec = HttpMonitorCreate.model_validate({**GOOD, **given}, context=SHORT)
    assert spec.timeout_seconds == timeout


@pytest.mark.parametrize("model", [HttpMonitorCreate, MonitorPatch])
def test_a_timeout_longer_than_the_interval_is_refused(model: type) -> None:
    with pytest.raises(ValidationError) as info:
        model.model_validate({**GOOD, "interval_seconds": 30, "timeout_seconds": 31}, context=SHORT)
    error = from_validation(info.value, model)
    assert error.field == "timeout_seconds"
    assert error.message == (
        "timeout_seconds: 31 s is longer than interval_seconds (30 s): a check must end before the next "
        "one is due"
    )


@pytest.mark.parametrize(
    ("timeout", "interval", "unchanged", "says"),
    [
        (20, 10, None, "20 s is longer than interval_seconds (10 s)"),
        (20, 10, "interval_seconds", "20 s is longer than the monitor's interval_seconds (10 s)"),
        (20, 10, "timeout_seconds", "the monitor's 20 s is longer than the new interval_seconds (10 s); "
                                    "lower timeout_seconds in the same PATCH"),
    ],
)  # fmt: skip
def test_the_timeout_error_says_which_side_is_stored(
    timeout: float, interval: float, unchanged: str | None, says: str
) -> None:
    check_timeout(10, 10, unchanged=unchanged)
    with pytest.raises(ValueError, match="^" + re.escape(says)):
        check_timeout(timeout, interval, unchanged=unchanged)


def _url_of_stored_length(length: int) -> str:
    """A URL with non-ASCII letters whose stored (percent-encoded) form has ``length`` characters."""
    base = "https://example.com/"
    letters, rest = divmod(length - len(base), 6)  # "я" is stored as %D1%8F
    return base + "я" * letters + "a" * rest


@pytest.mark.parametrize("model", [HttpMonitorCreate, MonitorPatch])
def test_the_url_length_is_that_of_the_stored_form(model: type) -> None:
    url = "https://example.com/" + "я" * 700  # 720 characters, 4,220 once percent-encoded
    with pytest.raises(ValidationError) as info:
        model.model_validate({**GOOD, "url": url}, context=CTX)
    error = from_validation(info.value, model)
    assert error.field == "url"
    assert error.message == (
        f"url: longer than {MAX_URL_LENGTH} characters as stored (4220 once normalised: non-ASCII "
        "characters percent-encoded, the host in IDNA)"
    )
    longest = model.model_validate({**GOOD, "url": _url_of_stored_length(MAX_URL_LENGTH)}, context=CTX)
    assert len(longest.url) == MAX_URL_LENGTH
    # What is stored can be sent back as it is, and is stored the same.
    assert model.model_validate({**GOOD, "url": longest.url}, context=CTX).url == longest.url
    assert field_of({**GOOD, "url": _url_of_stored_length(MAX_URL_LENGTH + 1)}, model) == "url"


@pytest.mark.parametrize(
    "url", ["http://user:pw@example.com/", "http://user@example.com/", "http://@example.com/"]
)
def test_credentials_in_the_url_point_to_the_auth_field(url: str) -> None:
    error = invalid_field({**GOOD, "url": url})
    assert error.field == "url"
    assert (
        error.message
        == "url: credentials in the URL are not allowed: put them in the auth field, not in the URL"
    )
    assert "auth" in HttpMonitorCreate.model_fields  # the field the message names
