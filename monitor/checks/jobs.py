"""A monitor's check handed to another process, and its result handed back.

Two hand-offs carry a monitor as data: a trial check (the api to a scheduler,
``domain/trials.py`` and ``scheduler/trials.py``) and a heavy check's job (a scheduler to a
worker, ``scheduler/dispatch.py`` and ``worker/``). Both carry the *row form*: the columns of
a ``monitors`` row that make its spec (:func:`row_form`), with its secrets sealed as
``monitor_secrets`` holds them, JSON-ready; the taker makes the spec as the catalogue does a
loaded row (:func:`spec_of`, which opens the secrets with its own key). A heavy check's result
comes back as JSON (:func:`result_json`, :func:`result_of`): every field of ``CheckResult``
with the failure's kind, the check's time as RFC 3339.

Ground floor: the scheduler, the worker and the api all use it, and none imports another.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from monitor.checks import REGISTRY, Registry
from monitor.models import CheckResult, Failure, MonitorSpec
from monitor.secrets import SecretBox, open_monitor_secrets

# What a spec is made of (``MonitorSpec.from_row``), the type's stored fields and their sealed
# secrets: the rest of a ``monitors`` row (its times, its ping token) stays at home.
ROW_FIELDS = (
    "id", "name", "type", "url", "interval_seconds", "timeout_seconds", "confirm_after", "paused",
    "recover_after", "remind_every_minutes", "remind_max", "flap_threshold", "flap_window_minutes",
    "degraded_above_ms", "cert_warn_days", "depends_on", "tags", "account_id", "locations",
    "quorum", "settings", "secrets",
)  # fmt: skip


def row_form(row: Mapping[str, Any]) -> dict[str, Any]:
    """The row form of ``row`` (a ``monitors`` row with its sealed ``secrets``, or a body made
    into one): the fields of ``ROW_FIELDS`` it has, lists for arrays; JSON-ready."""
    form: dict[str, Any] = {}
    for name in ROW_FIELDS:
        if name in row:
            value = row[name]
            form[name] = list(value) if isinstance(value, tuple) else value
    return form


def spec_of(row: Mapping[str, Any], box: SecretBox, registry: Registry = REGISTRY) -> MonitorSpec:
    """The monitor of ``row`` (a ``monitors`` row, or its row form, with its sealed ``secrets``)
    with its type's runtime options (``Check.options``); raises what they raise when they cannot
    be read (another key than the sealer's, settings of a newer version)."""
    secrets = open_monitor_secrets(box, row.get("secrets"))
    options = registry.get(row["type"]).options(row.get("settings"), secrets)
    return MonitorSpec.from_row(row, options)


def result_json(result: CheckResult) -> dict[str, Any]:
    """``result`` as JSON (its ``details`` as they are: a type's details are JSON already)."""
    return {
        "monitor_id": result.monitor_id,
        "time": result.time.isoformat(),
        "ok": result.ok,
        "status_code": result.status_code,
        "latency_ms": result.latency_ms,
        "error": result.error,
        "location": result.location,
        "timings": result.timings,
        "details": result.details,
        "answered": result.answered,
        "failure": result.failure.value if result.failure is not None else None,
    }


def result_of(data: Mapping[str, Any]) -> CheckResult:
    """The result of :func:`result_json`'s ``data``; a ValueError (KeyError, TypeError) when
    it is not one."""
    failure = data.get("failure")
    return CheckResult(
        monitor_id=int(data["monitor_id"]),
        time=datetime.fromisoformat(data["time"]),
        ok=bool(data["ok"]),
        status_code=data.get("status_code"),
        latency_ms=data.get("latency_ms"),
        error=data.get("error"),
        location=data.get("location"),
        timings=dict(data.get("timings") or {}),
        details=data.get("details"),
        answered=bool(data.get("answered")),
        failure=Failure(failure) if failure is not None else None,
    )
