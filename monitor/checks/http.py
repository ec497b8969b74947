"""HTTP(S) check: one request through the SSRF-safe client, judged as a visitor would.

Up means: the response arrived (its head; its body too when an assertion needs it), its status
is one of the monitor's expected statuses, and every assertion holds (``assertions.Judge``).
The cause of a down names what failed and what was found, and travels with the result to the
alert ("keyword "Welcome" not found in the first 1 MiB").

A status check reads no body: it ends at the response head, so a large download, an
encoding we cannot decode or a body cut short does not fail it (issue 10's false downs). With
a body assertion, at most ``max_body_bytes`` are read and judged; a longer body is cut there,
which the result notes (``details.body_truncated``) but which is no failure by itself.

Every https check records the monitored host's certificate (``details.certificate``: its expiry,
days left, subject and issuer; shape and readers in ``checks/certificate.py``), whatever the
verdict; a plain http check with nothing else to note keeps ``details`` None. A check that
spoke HTTP/2 (the server answers nothing else) says so: ``details.http_version = "2"``
(absent, it was HTTP/1.1).

``HttpOptions`` is the runtime form of a monitor's stored settings (``monitors.settings``: its
expected statuses, whether it follows redirects, its request options) and secrets
(``monitor_secrets``), built once when the scheduler loads the monitor; a monitor with none of
them has ``options = None`` and costs no memory for them, and monitors that differ from that only
in their statuses or redirects share one ``HttpOptions`` per combination.
"""

from __future__ import annotations

import asyncio
import base64
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from monitor.checks import http_stored
from monitor.checks.assertions import ASSERTIONS, Judge, Observed, Outcome
from monitor.checks.base import Check, CheckContext, ResultDetails
from monitor.checks.certificate import KEY as CERTIFICATE
from monitor.checks.certificate import Certificate, certificate_details
from monitor.checks.http_settings import DEFAULT_MAX_BODY_BYTES, DEFAULT_STATUSES, HttpSettings
from monitor.models import CheckResult, Failure, MonitorSpec
from monitor.net.client import FetchResult, clip_error, fetch
from monitor.net.policy import parse_target_url

# A body larger than this is judged on a worker thread, not on the event loop: a JSON path
# over a 1 MB document took about a second (the bench's 100 KiB keyword search stays inline).
JUDGE_INLINE_BYTES = 256 * 1024
# The seo assertion parses the page's HTML: about 0.2 s a MiB (html.parser), so 32 KiB is ~7 ms.
HTML_INLINE_BYTES = 32 * 1024
_DEFAULT_RANGES: tuple[tuple[int, int], ...] = tuple((low, high) for low, high in DEFAULT_STATUSES)


@dataclass(frozen=True, slots=True)
class HttpOptions:
    """What to send and how to judge it, beyond a plain GET judged by its status."""

    expected_status: tuple[tuple[int, int], ...] = _DEFAULT_RANGES
    follow_redirects: bool = False
    method: str = "GET"
    headers: tuple[tuple[str, str], ...] = ()
    # Auth and sensitive headers: sent to the monitor's own origin only, never logged.
    credentials: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    body: bytes | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    tls_verify: bool = True
    judge: Judge | None = None

    @property
    def needs_body(self) -> bool:
        return self.judge is not None and self.judge.needs_body

    def expects(self, status: int) -> bool:
        for low, high in self.expected_status:
            if low <= status <= high:
                return True
        return False

    @classmethod
    def from_stored(
        cls, settings: dict[str, Any] | None, secrets: dict[str, Any] | None
    ) -> HttpOptions | None:
        """The options of stored ``settings`` and ``secrets`` (formats in ``http_stored.py``);
        None when both say nothing (a plain GET)."""
        settings = settings or {}
        secrets = secrets or {}
        if not settings and not secrets:
            return None
        headers = [(str(k), str(v)) for k, v in settings.get("headers", ())]
        body = settings.get("body")
        if body is not None and settings.get("content_type"):
            headers.append(("Content-Type", str(settings["content_type"])))
        credentials = [(str(k), str(v)) for k, v in secrets.get("headers", ())]
        auth = secrets.get("auth")
        if auth:
            credentials.append(("Authorization", authorization(auth)))
        assertions = ASSERTIONS.validate_python(settings.get("assertions", []))
        statuses = tuple(
            (int(low), int(high)) for low, high in settings.get("expected_status", DEFAULT_STATUSES)
        )
        statuses = _STATUSES.setdefault(statuses, statuses)
        options = cls(
            expected_status=statuses,
            follow_redirects=bool(settings.get("follow_redirects", False)),
            method=str(settings.get("method", "GET")),
            headers=tuple(headers),
            credentials=tuple(credentials),
            body=body.encode() if body is not None else None,
            max_body_bytes=int(settings.get("max_body_bytes", DEFAULT_MAX_BODY_BYTES)),
            tls_verify=bool(settings.get("tls_verify", True)),
            judge=Judge(assertions) if assertions else None,
        )
        if options.headers or options.credentials or options.body is not None or options.judge is not None:
            return options
        # Only statuses and redirects of their own: a handful of combinations, shared.
        return _SHARED.setdefault(options, options)


def authorization(auth: dict[str, Any]) -> str:
    """The Authorization value of stored auth settings."""
    if auth.get("type") == "bearer":
        return f"Bearer {auth['token']}"
    pair = f"{auth.get('username', '')}:{auth.get('password', '')}".encode()
    return f"Basic {base64.b64encode(pair).decode()}"


PLAIN = HttpOptions()
# Most monitors share a few expected-status lists and option sets: one of each is kept (memory
# per monitor matters when one scheduler carries 100,000 of them).
_STATUSES: dict[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]] = {}
_SHARED: dict[HttpOptions, HttpOptions] = {}


class AssertionOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid")

    assertion: str
    ok: bool
    message: str | None = None
    security_headers: dict[str, Any] | None = None
    seo: dict[str, Any] | None = None


class HttpDetails(ResultDetails):
    """null for a plain status check"""

    assertions: list[AssertionOutcome] | None = Field(
        None, description='each with "assertion", "ok" and, when it failed, "message"'
    )
    body_truncated: bool | None = Field(None, description="the body was cut at its cap, after body_bytes")
    body_bytes: int | None = None
    tls_verified: bool | None = Field(None, description="false: the certificate was not checked")
    http_version: str | None = Field(None, description='"2": a server that speaks only HTTP/2')
    certificate: Certificate | None = Field(None, description="https")


class HttpCheck(Check):
    kind: ClassVar[str] = "http"
    Settings: ClassVar[type[BaseModel]] = HttpSettings
    Shown: ClassVar[type[BaseModel] | None] = http_stored.HttpShown
    secrets: ClassVar[frozenset[str]] = http_stored.SECRET_FIELDS
    default: ClassVar[bool] = True
    Details: ClassVar[type[ResultDetails] | None] = HttpDetails

    def target(self, settings: HttpSettings) -> str:
        return settings.url

    def hosts(self, settings: HttpSettings) -> tuple[str, ...]:
        return (parse_target_url(settings.url).raw_host or "",)

    def to_stored(self, settings: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
        return http_stored.stored_settings(settings)

    def legacy_columns(self, settings: dict[str, Any]) -> dict[str, Any]:
        return http_stored.legacy_columns(settings)

    def whole(
        self, url: str, settings: dict[str, Any] | None, secrets: dict[str, Any] | None
    ) -> dict[str, Any]:
        return http_stored.whole(url, settings, secrets)

    def unmask(self, given: dict[str, Any], stored: dict[str, Any]) -> dict[str, Any]:
        return http_stored.unmask(given, stored)

    def shown(
        self, url: str | None, settings: dict[str, Any] | None, view: dict[str, Any] | None
    ) -> dict[str, Any]:
        return http_stored.shown(url or "", settings, view)

    def options(self, settings: dict[str, Any] | None, secrets: dict[str, Any] | None) -> HttpOptions | None:
        return HttpOptions.from_stored(settings, secrets)

    async def run(self, monitor: MonitorSpec, ctx: CheckContext, started: datetime) -> CheckResult:
        options: HttpOptions = monitor.options or PLAIN
        judge = options.judge
        max_body = min(options.max_body_bytes, ctx.http_max_body_bytes)
        tls_verify = options.tls_verify or not ctx.allow_insecure_tls
        page = fetch(
            ctx.session,
            ctx.policy,
            monitor.url,
            method=options.method,
            timeout=monitor.timeout_seconds,
            follow_redirects=options.follow_redirects,
            headers=options.headers,
            credentials=options.credentials,
            body=options.body,
            read_body=options.needs_body,
            max_body_bytes=max_body,
            tls_verify=tls_verify,
            header_names=judge.header_names if judge is not None else frozenset(),
        )
        files = judge.site if judge is not None else None
        site = files.kept() if files is not None else None
        if files is None or site is not None:
            got = await page
        else:
            # robots.txt and the sitemap (an seo assertion's, when due) beside the page.
            files_due = files.report(ctx, monitor.url, seconds=monitor.timeout_seconds, tls_verify=tls_verify)
            got, site = await asyncio.gather(page, files_due)
        error = got.error
        causes: list[str] = []
        details: dict[str, Any] | None = None
        if error is None:
            if got.status is None or not options.expects(got.status):
                causes.append(f"unexpected status {got.status}")
            if judge is not None:
                observed = _observed(got, options, max_body, site)
                inline = HTML_INLINE_BYTES if judge.parses_html else JUDGE_INLINE_BYTES
                if len(got.body) > inline:
                    # Parsing and searching a large body (JSON paths above all) takes long
                    # enough to delay every other check's timer: do it beside the loop.
                    outcomes = await asyncio.to_thread(judge.judge, observed)
                else:
                    outcomes = judge.judge(observed)
                causes += [o.message or o.assertion for o in outcomes if not o.ok]
                details = {"assertions": [_outcome(o) for o in outcomes]}
            if causes:
                error = clip_error("; ".join(causes), 500)
        if got.truncated:
            details = {**(details or {}), "body_truncated": True, "body_bytes": len(got.body)}
        if not got.tls_verified:
            details = {**(details or {}), "tls_verified": False}
        if got.http_version != "1.1":
            details = {**(details or {}), "http_version": got.http_version}
        if got.certificate is not None:
            details = details if details is not None else {}
            details[CERTIFICATE] = certificate_details(got.certificate, started)
        return CheckResult(
            monitor_id=monitor.id,
            time=started,
            ok=error is None,
            status_code=got.status,
            latency_ms=round(got.elapsed_ms, 3),
            error=error,
            location=got.location,
            timings=got.timings,
            details=details,
            failure=None if error is None else fetch_failure(got),
        )


def fetch_failure(got: FetchResult) -> Failure:
    """Why a fetch with an error, or a response not as expected, failed."""
    if got.error is None:
        return Failure.ASSERTION
    if got.blocked:
        return Failure.REFUSED
    if got.invalid:
        return Failure.INVALID_TARGET
    return Failure.TIMEOUT if got.timed_out else Failure.NETWORK


def _outcome(outcome: Outcome) -> dict[str, Any]:
    got: dict[str, Any] = {"assertion": outcome.assertion, "ok": outcome.ok}
    if outcome.message:
        got["message"] = outcome.message
    if outcome.details:
        got.update(outcome.details)
    return got


def _observed(got: FetchResult, options: HttpOptions, max_body: int, site: Any = None) -> Observed:
    return Observed(
        status=got.status,
        headers=got.headers or {},
        body=got.body if options.needs_body else None,
        body_truncated=got.truncated,
        body_cap=max_body,
        body_error=None,
        elapsed_ms=got.elapsed_ms,
        content_type=got.content_type,
        https=got.final_url.startswith("https:"),
        url=got.final_url,
        site=site,
    )
