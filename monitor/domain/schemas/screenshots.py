"""A monitor's screenshots as the API shows them, and the body that sets the baseline's masks
(``domain/screenshots.py``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from monitor.domain.schemas.common import Body, Out
from monitor.visual import MAX_MASKS, Mask


class MaskList(Body):
    """The rectangles of the baseline left out of every comparison (its pixels, from the top
    left); they replace the ones it had, and stay with the next baseline accepted."""

    masks: list[Mask] = Field(max_length=MAX_MASKS, description=f"at most {MAX_MASKS} rectangles")


class Screenshot(Out):
    id: int
    role: Literal["latest", "onset", "baseline"] = Field(
        description="`latest`: the newest (replaced by each run); `onset`: the first of an outage, kept "
        "until MONITOR_SCREENSHOT_RETENTION_DAYS; `baseline`: the accepted one"
    )
    taken_at: str = Field(description="when the check that took it started (RFC 3339)")
    failed: bool = Field(description="taken of a failed run")
    width: int
    height: int
    bytes: int = Field(description="size of the PNG")
    diff_percent: float | None = Field(
        description="share of pixels changed from the baseline; null: not compared"
    )
    baseline_id: int | None = Field(description="the baseline it was compared with (it may be gone since)")
    masks: list[Mask] = Field(description="a baseline's masked rectangles (empty for the others)")
    accepted_at: str | None = Field(description="when a person accepted this baseline; null: taken by itself")
    incident_id: int | None = Field(description="the incident an onset screenshot belongs to")
    image: str = Field(description="the path of the PNG")


class ScreenshotList(Out):
    screenshots: list[Screenshot] = Field(
        description="the latest, the baseline, then the outages' screenshots, newest first (at most 100)"
    )
