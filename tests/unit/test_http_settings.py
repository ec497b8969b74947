"""An http monitor's settings as every type's are: stored in ``monitors.settings``, turned into
the check's runtime options once per load."""

from __future__ import annotations

from typing import Any

import pytest

from monitor.checks import REGISTRY
from monitor.checks.http import PLAIN, HttpOptions

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
