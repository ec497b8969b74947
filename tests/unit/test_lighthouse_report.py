"""Lighthouse's report read and judged (checks/lighthouse_report.py), the settings of type
pagespeed and the runner's command line, on reports recorded from local pages with the pinned
Lighthouse 12.2.3 (tests/support/lighthouse_pages.py: ``slow.json`` a page whose image is
answered 4 s late and lacks a description and an alt text, ``missing.json`` a 404)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from monitor.browser.lighthouse import LighthouseRun, command, lighthouse_args
from monitor.checks import REGISTRY
from monitor.checks import lighthouse_report as lr
from monitor.checks.pagespeed import (
    PageSpeedDetails,
    PageSpeedOptions,
    PageSpeedSettings,
    max_wait_for_load,
    result,
)
from monitor.domain.errors import from_validation
from monitor.models import Failure, MonitorSpec

FIXTURES = Path(__file__).parent / "fixtures/lighthouse"
URL = "http://127.0.0.1:8000/slow"


def fixture(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text())


SLOW = lr.read(fixture("slow"))
MISSING = lr.read(fixture("missing"))


def test_the_slow_page_reads_as_lighthouse_measured_it() -> None:
    assert SLOW.version == "12.2.3" and SLOW.form_factor == "mobile" and SLOW.runtime_error is None
    assert (SLOW.status_code, SLOW.final_url) == (200, URL)
    assert SLOW.metrics["lcp_ms"] == pytest.approx(4782.4, abs=0.1)
    assert SLOW.metrics["cls"] == 0.0 and SLOW.metrics["tbt_ms"] == 1.0
    assert 2000 < (SLOW.metrics["fcp_ms"] or 0) < (SLOW.metrics["speed_index_ms"] or 0)
    assert SLOW.metrics["ttfb_ms"] is not None
    assert SLOW.scores == {"performance": 0.73, "accessibility": 0.84, "best_practices": 0.96, "seo": 0.82}


def test_failed_audits_costliest_first_each_once() -> None:
    ids = [a["id"] for a in SLOW.failed_audits]
    assert ids[:3] == ["largest-contentful-paint", "image-alt", "meta-description"]
    assert len(ids) == len(set(ids)) <= lr.TOP_AUDITS
    assert "image-size-responsive" in ids  # best practices, the only one failed there
    lcp = SLOW.failed_audits[0]
    assert lcp == {"id": "largest-contentful-paint", "title": "Largest Contentful Paint",
                   "category": "performance", "score": 0.31, "display_value": "4.8 s"}  # fmt: skip
    # image-alt is in accessibility and SEO: listed once, where it costs most.
    assert next(a for a in SLOW.failed_audits if a["id"] == "image-alt")["category"] == "accessibility"
    assert all(a["score"] < lr.PASS_MARK for a in SLOW.failed_audits)


def test_a_404_is_a_runtime_error_with_its_status() -> None:
    assert MISSING.runtime_error is not None and MISSING.runtime_error[0] == "ERRORED_DOCUMENT_REQUEST"
    assert MISSING.status_code == 404
    assert set(MISSING.scores.values()) == {None} and set(MISSING.metrics.values()) == {None}
    assert MISSING.failed_audits == []


@pytest.mark.parametrize(
    ("bounds", "ok", "error", "degraded"),
    [
        ([], True, None, None),
        ([("lcp_ms", "<=", 2500, "down")], False, "lcp_ms 4782 > 2500", None),
        ([("lcp_ms", "<=", 2500, "degraded")], True, None, "lcp_ms 4782 > 2500"),
        ([("lcp_ms", "<", 5000, "down"), ("cls", "<=", 0.1, "down")], True, None, None),
        ([("performance", ">=", 0.8, "down")], False, "performance 0.73 < 0.8", None),
        ([("seo", ">", 0.82, "degraded")], True, None, "seo 0.82 <= 0.82"),
        ([("tbt_ms", ">=", 200, "down")], False, "tbt_ms 1 < 200", None),
        (
            [("lcp_ms", "<=", 2500, "degraded"), ("fcp_ms", "<=", 1800, "down"),
             ("speed_index_ms", "<=", 3400, "down")],
            False, "fcp_ms 2638 > 1800; speed_index_ms 6551 > 3400", None,
        ),
        ([("accessibility", ">=", 0.9, "degraded"), ("best_practices", ">=", 0.9, "degraded")], True, None,
         "accessibility 0.84 < 0.9"),
    ],
)  # fmt: skip
def test_assertions_on_the_slow_page(
    bounds: list[tuple[str, Any, float, Any]], ok: bool, error: str | None, degraded: str | None
) -> None:
    verdict = lr.judge(SLOW, [lr.Bound(*b) for b in bounds], URL)
    assert (verdict.ok, verdict.error, verdict.degraded, verdict.runtime) == (ok, error, degraded, False)
    assert [o["assertion"] for o in verdict.outcomes] == [
        f"{m} {op} {lr.shown(m, v)}" for m, op, v, _ in bounds
    ]


def test_an_assertion_on_a_figure_lighthouse_did_not_measure_fails() -> None:
    blank = lr.read({**fixture("slow"), "audits": {}})
    verdict = lr.judge(blank, [lr.Bound("lcp_ms", "<=", 2500, "degraded")], URL)
    assert (verdict.ok, verdict.degraded) == (True, "lcp_ms: Lighthouse measured none")


ANSWERED_404 = "answered 404 (Lighthouse: ERRORED_DOCUMENT_REQUEST)"


@pytest.mark.parametrize(
    ("refusals", "error"),
    [
        ([], ANSWERED_404),
        (["blocked: 10.0.0.9 (private-use 10.0.0.0/8) for img.example"], ANSWERED_404),
        (["blocked: 127.0.0.1 (loopback 127.0.0.0/8)"], "blocked: 127.0.0.1 (loopback 127.0.0.0/8)"),
    ],
)  # fmt: skip
def test_a_page_that_did_not_load_is_down_whatever_the_assertions(refusals: list[str], error: str) -> None:
    verdict = lr.judge(MISSING, [lr.Bound("lcp_ms", "<=", 2500, "degraded")], URL, refusals)
    assert (verdict.ok, verdict.runtime, verdict.error, verdict.outcomes) == (False, True, error, [])


def test_an_unknown_runtime_error_names_lighthouse_code_and_message() -> None:
    hung = lr.read(
        {**fixture("missing"), "runtimeError": {"code": "NO_FCP", "message": "The page did not paint"}}
    )
    assert lr.judge(hung, [], URL).error == "Lighthouse NO_FCP: The page did not paint"


@pytest.mark.parametrize("written", [None, [], "text", {"lighthouseVersion": "12.2.3"}])
def test_what_is_not_a_report(written: Any) -> None:
    with pytest.raises(lr.NotAReport):
        lr.read(written)


# -- the type's settings and result ------------------------------------------------------------


SITE: dict[str, Any] = {"url": "https://example.com/"}


def A(metric: str, op: str, value: float, **more: Any) -> dict[str, Any]:
    return {"metric": metric, "op": op, "value": value, **more}


def invalid(body: dict[str, Any]) -> str | None:
    with pytest.raises(ValidationError) as caught:
        PageSpeedSettings.model_validate(body)
    return from_validation(caught.value, PageSpeedSettings).field


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "url"),
        ({"url": "ftp://example.com/"}, "url"),
        (SITE | {"profile": "tablet"}, "profile"),
        (SITE | {"categories": []}, "categories"),
        (SITE | {"categories": ["pwa"]}, "categories.0"),
        (SITE | {"assertions": [A("lcp_ms", "<=", 1), A("inp_ms", "<=", 1)]}, "assertions.1.metric"),
        (SITE | {"assertions": [A("lcp_ms", "==", 1)]}, "assertions.0.op"),
        (SITE | {"assertions": [A("performance", ">=", 80)]}, "assertions.0.value"),
        (SITE | {"assertions": [A("cls", "<", -1)]}, "assertions.0.value"),
        (SITE | {"assertions": [A("cls", "<", 0.1, severity="warn")]}, "assertions.0.severity"),
        (SITE | {"screenshots": True}, "screenshots"),
    ],
)  # fmt: skip
def test_invalid_settings_name_their_field(body: dict[str, Any], field: str) -> None:
    assert invalid(body) == field


def test_settings_defaults_and_the_categories_run() -> None:
    settings = PageSpeedSettings.model_validate({"url": "https://example.com/", "categories": ["seo", "seo"]})
    assert (settings.profile, settings.categories, settings.assertions) == ("mobile", ["seo"], [])
    check = REGISTRY.get("pagespeed")
    assert check.heavy and check.min_interval_seconds == 300 and check.default_timeout_seconds == 90
    assert check.hosts(settings) == ("example.com",)
    asserted = check.options(
        {"url": "https://example.com/", "categories": ["seo"],
         "assertions": [{"metric": "lcp_ms", "op": "<=", "value": 2500}]}, None)  # fmt: skip
    assert asserted.categories == ("performance", "seo")  # an asserted metric runs its category


@pytest.mark.parametrize(
    ("timeout", "wait"), [(90, 45_000), (120, 45_000), (60, 40_000), (30, 10_000), (10, 5_000)]
)
def test_lighthouse_waits_for_the_load_within_the_timeout(timeout: float, wait: int) -> None:
    assert max_wait_for_load(timeout) == wait


def spec(options: PageSpeedOptions) -> MonitorSpec:
    return MonitorSpec(id=3, name="Slow", type="pagespeed", url=options.url, interval_seconds=300,
                       timeout_seconds=90, confirm_after=1, paused=False, options=options)  # fmt: skip


def options_of(assertions: list[dict[str, Any]], categories: list[str] | None = None) -> PageSpeedOptions:
    body: dict[str, Any] = {"url": URL, "assertions": assertions}
    if categories:
        body["categories"] = categories
    return REGISTRY.get("pagespeed").options(body, None)


def test_the_result_of_a_degraded_run_holds_its_details() -> None:
    options = options_of([{"metric": "lcp_ms", "op": "<=", "value": 2500, "severity": "degraded"}])
    at = dt.datetime(2026, 12, 2, tzinfo=dt.UTC)
    got = result(spec(options), at, options, SLOW, [])
    assert (got.ok, got.error, got.failure, got.status_code, got.latency_ms) == (
        True,
        None,
        None,
        200,
        4782.4,
    )
    details = PageSpeedDetails.model_validate(got.details).model_dump(exclude_none=True)
    assert details["degraded"] == "lcp_ms 4782 > 2500"
    assert details["scores"]["performance"] == 0.73 and details["metrics"]["lcp_ms"] == 4782.4
    assert details["assertions"] == [{"assertion": "lcp_ms <= 2500", "ok": False, "severity": "degraded",
                                      "value": 4782.4, "message": "lcp_ms 4782 > 2500"}]  # fmt: skip
    assert len(details["failed_audits"]) == len(SLOW.failed_audits)


def test_the_result_of_a_down_run_and_of_a_page_that_did_not_load() -> None:
    options = options_of([{"metric": "lcp_ms", "op": "<=", "value": 2500}], categories=["seo"])
    at = dt.datetime(2026, 12, 2, tzinfo=dt.UTC)
    down = result(spec(options), at, options, SLOW, [])
    assert (down.ok, down.error, down.failure) == (False, "lcp_ms 4782 > 2500", Failure.ASSERTION)
    assert set((down.details or {})["scores"]) == {"performance", "seo"}
    missing = result(spec(options), at, options, MISSING, [])
    assert (missing.ok, missing.failure, missing.status_code) == (False, Failure.ASSERTION, 404)
    assert (missing.details or {})["runtime_error"]["code"] == "ERRORED_DOCUMENT_REQUEST"
    refused = result(spec(options), at, options, MISSING, ["blocked: 127.0.0.1 (loopback 127.0.0.0/8)"])
    assert (refused.failure, refused.error) == (Failure.REFUSED, "blocked: 127.0.0.1 (loopback 127.0.0.0/8)")
    assert (refused.details or {})["refusals"] == ["blocked: 127.0.0.1 (loopback 127.0.0.0/8)"]
    PageSpeedDetails.model_validate(refused.details)


# -- the runner's command line ------------------------------------------------------------------


def test_lighthouse_drives_the_run_chromium_and_never_its_own(tmp_path: Path) -> None:
    args = lighthouse_args(LighthouseRun("https://example.com/", "desktop", ("performance", "seo"), 30_000),
                           9222, tmp_path / "r.json")  # fmt: skip
    assert args[0] == "https://example.com/"
    assert {"--hostname=127.0.0.1", "--port=9222", "--output=json", f"--output-path={tmp_path / 'r.json'}",
            "--only-categories=performance,seo", "--max-wait-for-load=30000", "--preset=desktop",
            "--no-enable-error-reporting"} <= set(args)  # fmt: skip
    assert "--preset=desktop" not in lighthouse_args(LighthouseRun("https://example.com/"), 9222, tmp_path)
    script = tmp_path / "index.js"
    script.write_text("")
    assert command(str(script), "/usr/bin/node") == ["/usr/bin/node", "--max-old-space-size=512", str(script)]
    assert command("/opt/lh/run-lighthouse") == ["/opt/lh/run-lighthouse"]
