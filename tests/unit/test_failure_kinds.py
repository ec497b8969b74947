"""Each check type names why its result failed (``models.Failure``) where it makes the result,
beside the error text it always wrote: the scheduler reads the kind, never the text."""

from datetime import UTC, datetime

import pytest

from monitor.checks.base import dial_failure, refused
from monitor.checks.http import fetch_failure
from monitor.models import Failure
from monitor.net.client import FetchResult
from monitor.net.dial import DialError
from monitor.net.vetting import Refused

T = datetime(2026, 3, 1, tzinfo=UTC)


def fetched(error: str | None, **flags: bool) -> FetchResult:
    return FetchResult(
        None, error is None, error, None, "https://x/", 1.0, {}, flags.pop("blocked", False), **flags
    )


@pytest.mark.parametrize(
    ("got", "kind"),
    [
        pytest.param(
            fetched("blocked: 10.0.0.5 (private address)", blocked=True), Failure.REFUSED, id="blocked"
        ),
        pytest.param(fetched("invalid target: no host", invalid=True), Failure.INVALID_TARGET, id="invalid"),
        pytest.param(
            fetched("timed out after 5s reading the body", timed_out=True), Failure.TIMEOUT, id="timeout"
        ),
        pytest.param(fetched("connection refused"), Failure.NETWORK, id="network"),
        pytest.param(fetched(None), Failure.ASSERTION, id="answered-not-as-expected"),
    ],
)
def test_http(got: FetchResult, kind: Failure) -> None:
    assert fetch_failure(got) is kind


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        pytest.param(
            DialError("blocked: 10.0.0.5 (private address)", blocked=True), Failure.REFUSED, id="blocked"
        ),
        pytest.param(
            DialError("timed out after 5s connecting", timed_out=True), Failure.TIMEOUT, id="timeout"
        ),
        pytest.param(
            DialError("TLS certificate error: expired", certificate=True), Failure.TLS, id="certificate"
        ),
        pytest.param(DialError("connection failed: refused"), Failure.NETWORK, id="network"),
    ],
)
def test_dialling(exc: DialError, kind: Failure) -> None:
    assert dial_failure(exc) is kind


def test_a_refused_host_keeps_its_text() -> None:
    denied = refused(
        1, T, Refused("blocked: db.internal resolves to 10.0.0.5 (private address)", blocked=True)
    )
    assert (denied.ok, denied.failure) == (False, Failure.REFUSED)
    assert denied.error == "blocked: db.internal resolves to 10.0.0.5 (private address)"
    unresolved = refused(1, T, Refused("db.internal does not resolve"))
    assert (unresolved.failure, unresolved.error) == (Failure.NETWORK, "db.internal does not resolve")
