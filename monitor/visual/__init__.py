"""Screenshots and visual change: what a browser check hands its screenshots to, and what it
gets back.

A browser monitor's settings embed ``visual: VisualSettings`` (compare on or off, the share of
pixels that may differ, whether a change is down or degraded). The masked rectangles belong to
the accepted baseline (their coordinates are that image's pixels), kept with it in the database
and set through the screenshots API and the dashboard (PUT .../screenshots/masks): one place
for them, carried over when a later screenshot is accepted. In a worker,
``CheckContext.screenshots`` is a :class:`ScreenshotKeeper` (``store.ScreenshotStore`` on the
database pool): the check calls ``keeps(monitor)`` to learn whether to take a screenshot of a
passing run at all, and ``await keep(monitor, png, at=started, failed=...)`` with the PNG bytes;
the answer (a :data:`Kept` dict) goes into the result's ``details["screenshot"]`` as it is.

What the check does with the answer: ``kept["changed"]`` true means the page differs from the
accepted baseline by more than the threshold; ``kept["verdict"]`` says so in a line ("page
changed 23.4 % (threshold 5 %)") and ``kept["severity"]`` says how it counts: ``"down"``, the
result fails with the verdict as its error (``Failure.ASSERTION``); ``"degraded"``,
``details["degraded"] = verdict`` (``judging.degraded_by``). :func:`verdict_of` does that
reading for the check.

Rules of the store (``store.py``): a monitor's latest screenshot is replaced by each run; the
first screenshot of a failing streak (a failed run, or a visual change judged down, after a
passing one) is kept apart until MONITOR_SCREENSHOT_RETENTION_DAYS, and it is the one of the
incident that streak opens (``incidents.started_at`` is the first failing check's time, the
screenshot's ``taken_at``); the first passing screenshot of a monitor that compares and has no
baseline becomes the baseline (as UptimeRobot does); a person accepts a later one
(``domain/screenshots.py``). A failed run's screenshot is never compared: the page is not there.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, Protocol, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from monitor.models import MonitorSpec

Severity = Literal["down", "degraded"]
# The most rectangles a monitor may mask.
MAX_MASKS = 50


class Mask(BaseModel):
    """A rectangle of the page, in CSS pixels from its top left corner, left out of the comparison."""

    model_config = ConfigDict(extra="forbid")

    x: int = Field(ge=0, le=100_000, description="left edge, px")
    y: int = Field(ge=0, le=100_000, description="top edge, px")
    width: int = Field(ge=1, le=100_000, description="px")
    height: int = Field(ge=1, le=100_000, description="px")


class VisualSettings(BaseModel):
    """A browser monitor's visual change detection (``visual`` in its settings)."""

    model_config = ConfigDict(extra="forbid")

    compare: Annotated[bool, Field(description="screenshot every run, compare it with the baseline")] = False
    threshold_percent: Annotated[
        float, Field(ge=0.0, le=100.0, description="share of pixels that may differ (percent)")
    ] = 5.0
    severity: Annotated[Severity, Field(description="what a change makes the monitor")] = "down"


class Kept(TypedDict, total=False):
    """What ``keep`` answers (and ``details["screenshot"]`` holds)."""

    id: int  # the screenshot's id (GET /api/v1/monitors/{monitor}/screenshots/{id})
    width: int
    height: int
    failed: bool  # taken of a failed run
    baseline_id: int | None  # the baseline it was compared with (None: not compared)
    became_baseline: bool  # the first screenshot of a comparing monitor: now its baseline
    diff_percent: float | None  # share of differing pixels, masks left out
    threshold_percent: float | None
    changed: bool  # diff_percent above threshold_percent
    severity: Severity | None  # set when changed
    verdict: str | None  # "page changed 23.4 % (threshold 5 %)" when changed
    note: str  # why nothing was stored or compared (not a PNG, over the size cap)
    url: str  # the monitor's screenshots page (with MONITOR_PUBLIC_URL): the down alert links it


class ScreenshotKeeper(Protocol):
    """``CheckContext.screenshots`` in a worker."""

    def keeps(self, monitor: MonitorSpec) -> bool:
        """Whether the monitor keeps (and compares) a screenshot of every run, not only of a failure."""
        ...

    async def keep(
        self,
        monitor: MonitorSpec,
        png: bytes,
        *,
        at: datetime,
        failed: bool,
        visual: VisualSettings | None = None,
    ) -> Kept:
        """Store ``png`` as the monitor's latest screenshot (and as the start of an outage when
        it is one), compare it with the baseline when ``visual.compare``; ``visual`` None: the
        monitor's own (``visual_of(monitor)``)."""
        ...


def visual_of(monitor: MonitorSpec) -> VisualSettings:
    """A monitor's visual settings, from its runtime options (``options.settings.visual``, as
    the browser type's ``JourneyOptions`` holds them, or ``options.visual``); off when it has none."""
    options: Any = monitor.options
    for holder in (getattr(options, "settings", None), options):
        found = getattr(holder, "visual", None)
        if isinstance(found, VisualSettings):
            return found
    return VisualSettings()


def verdict_of(kept: Kept | dict[str, Any] | None) -> tuple[str | None, str | None]:
    """(the error that fails the run, the degraded reason) a kept screenshot says: (verdict,
    None) for a change that is down, (None, verdict) for one that is degraded, else (None, None)."""
    if not kept or not kept.get("changed"):
        return None, None
    verdict = str(kept.get("verdict") or "page changed")
    return (verdict, None) if kept.get("severity") == "down" else (None, verdict)
