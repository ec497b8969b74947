"""What a Lighthouse report says, and the verdict of a page-speed check on it (pure: tested as
tables on reports recorded from local pages, tests/unit/test_lighthouse_report.py).

Everything is read from Lighthouse's result, never computed again: each metric is its audit's
``numericValue`` (``largest-contentful-paint`` is ``lcp_ms``...), each score its category's
``score`` (0 to 1, as Lighthouse gives it), a page that did not load is its ``runtimeError``
(``ERRORED_DOCUMENT_REQUEST`` for a document answered 404, ``NO_FCP`` for one that paints
nothing, ``FAILED_DOCUMENT_REQUEST`` for one that could not be fetched). The failed audits are
those of the categories run whose score is below Lighthouse's own pass mark (0.9), ordered by
what they cost their category (its weight share times what the audit missed), then by the
time Lighthouse says fixing them would save; ``TOP_AUDITS`` of them are kept.

The verdict: a runtime error is down naming Lighthouse's code and message (or, when the
vetting proxy refused the document itself, that refusal); otherwise each assertion is held
against the figure it names, a failed ``down`` one makes the check down ("lcp_ms 4782 >
2500"), a failed ``degraded`` one makes an up check degraded (``details["degraded"]``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from monitor.net.client import clip_error

# Our names of the figures an assertion may name, and where Lighthouse keeps each.
METRICS: dict[str, str] = {
    "lcp_ms": "largest-contentful-paint",
    "cls": "cumulative-layout-shift",
    "tbt_ms": "total-blocking-time",
    "fcp_ms": "first-contentful-paint",
    "speed_index_ms": "speed-index",
    "ttfb_ms": "server-response-time",
}
SCORES: dict[str, str] = {
    "performance": "performance",
    "accessibility": "accessibility",
    "best_practices": "best-practices",
    "seo": "seo",
}
FIGURES = (*METRICS, *SCORES)
CATEGORIES = tuple(SCORES.values())
PASS_MARK = 0.9  # Lighthouse's: an audit scored below it is shown as failed
TOP_AUDITS = 10
WARNINGS_KEPT = 5
TEXT_CHARS = 300
_STATUS = re.compile(r"\(Status code: (\d{3})\)")
_SCORED = ("binary", "numeric", "metricSavings")

Op = Literal["<=", "<", ">=", ">"]
Severity = Literal["down", "degraded"]
NEGATION: dict[str, str] = {"<=": ">", "<": ">=", ">=": "<", ">": "<="}


class NotAReport(ValueError):
    """What Lighthouse wrote is not a report this version reads."""


@dataclass(frozen=True)
class Report:
    """The parts of a Lighthouse report a page-speed check uses."""

    version: str
    form_factor: str | None
    final_url: str | None
    status_code: int | None
    metrics: dict[str, float | None]
    scores: dict[str, float | None]
    failed_audits: list[dict[str, Any]]
    runtime_error: tuple[str, str] | None = None  # (code, message)
    warnings: list[str] = field(default_factory=list)

    def figure(self, name: str) -> float | None:
        return self.metrics.get(name) if name in METRICS else self.scores.get(name)


def read(report: Any) -> Report:
    """The :class:`Report` of a Lighthouse JSON report (its parsed object)."""
    if not isinstance(report, dict) or not isinstance(report.get("audits"), dict):
        raise NotAReport("lighthouse wrote no report")
    audits: dict[str, Any] = report["audits"]
    categories: dict[str, Any] = report.get("categories") or {}
    error = report.get("runtimeError")
    runtime = None
    if isinstance(error, dict) and error.get("code"):
        runtime = (str(error["code"]), clip_error(str(error.get("message") or ""), TEXT_CHARS))
    # Rounded as they are kept (0.1 ms, 4 places below 10): the figure a cause names and the one
    # the details hold are one figure ("lcp_ms 4768 > 2500" beside 4767.5, not 4767.46).
    metrics = {
        name: _kept(_number(audits.get(audit, {}).get("numericValue"))) for name, audit in METRICS.items()
    }
    scores = {name: _number((categories.get(cid) or {}).get("score")) for name, cid in SCORES.items()}
    warnings = [clip_error(str(w), TEXT_CHARS) for w in report.get("runWarnings") or []][:WARNINGS_KEPT]
    return Report(
        version=str(report.get("lighthouseVersion") or ""),
        form_factor=(report.get("configSettings") or {}).get("formFactor"),
        final_url=report.get("finalDisplayedUrl") or report.get("finalUrl"),
        status_code=_status(report, runtime),
        metrics=metrics,
        scores=scores,
        failed_audits=failed_audits(categories, audits),
        runtime_error=runtime,
        warnings=warnings,
    )


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _kept(value: float | None) -> float | None:
    return None if value is None else round(value, 4 if value < 10 else 1)


def _status(report: dict[str, Any], runtime: tuple[str, str] | None) -> int | None:
    """The main document's status: its request in ``network-requests``, else the one the
    runtime error's message names."""
    main = report.get("mainDocumentUrl") or report.get("finalUrl")
    items = ((report["audits"].get("network-requests") or {}).get("details") or {}).get("items") or []
    for item in items:
        if isinstance(item, dict) and item.get("resourceType") == "Document" and item.get("url") == main:
            status = item.get("statusCode")
            return status if isinstance(status, int) and status > 0 else None
    found = _STATUS.search(runtime[1]) if runtime else None
    return int(found.group(1)) if found else None


def failed_audits(categories: dict[str, Any], audits: dict[str, Any]) -> list[dict[str, Any]]:
    """The audits below the pass mark in the categories run, the costliest first (each once,
    under the category where it costs most), ``TOP_AUDITS`` of them."""
    ranked: dict[str, tuple[tuple[float, float, float], dict[str, Any]]] = {}
    for cid, category in categories.items():
        refs = [r for r in (category or {}).get("auditRefs") or [] if isinstance(r, dict)]
        total = sum(float(r.get("weight") or 0) for r in refs) or 1.0
        for ref in refs:
            audit = audits.get(str(ref.get("id"))) or {}
            score = _number(audit.get("score"))
            if score is None or score >= PASS_MARK or audit.get("scoreDisplayMode") not in _SCORED:
                continue
            cost = float(ref.get("weight") or 0) / total * (1 - score)
            saved = (audit.get("metricSavings") or {}).values()
            savings = sum(v for v in saved if isinstance(v, int | float))
            key = (cost, float(savings), -score)
            if ref["id"] in ranked and ranked[ref["id"]][0] >= key:
                continue
            entry = {"id": ref["id"], "title": clip_error(str(audit.get("title") or ref["id"]), TEXT_CHARS),
                     "category": cid, "score": score,
                     "display_value": _display(audit.get("displayValue"))}  # fmt: skip
            ranked[ref["id"]] = (key, entry)
    ordered = sorted(ranked.values(), key=lambda p: (-p[0][0], -p[0][1], -p[0][2], p[1]["id"]))
    return [entry for _, entry in ordered[:TOP_AUDITS]]


def _display(value: Any) -> str | None:
    # Lighthouse writes "4.8\u00a0s": a plain space reads the same everywhere.
    return clip_error(str(value).replace("\u00a0", " "), TEXT_CHARS) if value else None


# -- the verdict ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Bound:
    """One assertion of a page-speed monitor, as its settings give it."""

    metric: str
    op: Op
    value: float
    severity: Severity = "down"

    def describe(self) -> str:
        return f"{self.metric} {self.op} {shown(self.metric, self.value)}"


@dataclass(frozen=True)
class Verdict:
    ok: bool
    error: str | None  # the cause of a down
    runtime: bool  # the page did not load (Lighthouse's runtime error)
    degraded: str | None  # an up check's degradation
    outcomes: list[dict[str, Any]]


def shown(metric: str, value: float) -> str:
    """A figure as a cause writes it: whole milliseconds, CLS to 3 places, scores to 2."""
    if metric.endswith("_ms"):
        return f"{value:.0f}"
    places = 3 if metric == "cls" else 2
    return f"{value:.{places}f}".rstrip("0").rstrip(".") if value % 1 else f"{value:.0f}"


def holds(op: str, figure: float, bound: float) -> bool:
    return {"<=": figure <= bound, "<": figure < bound, ">=": figure >= bound, ">": figure > bound}[op]


def outcome(bound: Bound, report: Report) -> dict[str, Any]:
    """One assertion against the report: ``{assertion, ok, message, severity, value}``."""
    figure = report.figure(bound.metric)
    said: dict[str, Any] = {"assertion": bound.describe(), "severity": bound.severity}
    if figure is None:
        return {**said, "ok": False, "message": f"{bound.metric}: Lighthouse measured none"}
    said["value"] = round(figure, 4)
    if holds(bound.op, figure, bound.value):
        return {**said, "ok": True}
    was, bounded = shown(bound.metric, figure), shown(bound.metric, bound.value)
    message = f"{bound.metric} {was} {NEGATION[bound.op]} {bounded}"
    return {**said, "ok": False, "message": message}


def judge(report: Report, bounds: Sequence[Bound], url: str, refusals: Iterable[str] = ()) -> Verdict:
    """The check's verdict on ``report`` of ``url``."""
    if report.runtime_error is not None:
        code, message = report.runtime_error
        refused = document_refusal(url, refusals)
        if refused:
            error = refused
        elif report.status_code is not None and report.status_code >= 400:
            error = f"answered {report.status_code} (Lighthouse: {code})"
        else:
            error = f"Lighthouse {code}: {message}" if message else f"Lighthouse {code}"
        return Verdict(False, clip_error(error, 500), True, None, [])
    outcomes = [outcome(bound, report) for bound in bounds]
    down = [o["message"] for o in outcomes if not o["ok"] and o["severity"] == "down"]
    degraded = [o["message"] for o in outcomes if not o["ok"] and o["severity"] == "degraded"]
    if down:
        return Verdict(False, clip_error("; ".join(down), 500), False, None, outcomes)
    return Verdict(True, None, False, clip_error("; ".join(degraded), 500) if degraded else None, outcomes)


def document_refusal(url: str, refusals: Iterable[str]) -> str | None:
    """The vetting proxy's refusal of the page ``url`` itself (one naming its host), or None."""
    from yarl import URL

    host = URL(url).raw_host or ""
    if not host:
        return None
    for refusal in refusals:
        if host in refusal or f"[{host}]" in refusal:
            return clip_error(refusal, TEXT_CHARS)
    return None
