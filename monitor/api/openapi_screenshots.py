"""The OpenAPI description of a monitor's screenshots (browser checks): list them, read one's
PNG, accept one as the baseline, set the baseline's masks."""

from __future__ import annotations

from monitor.api.openapi import _Builder, _id, _json
from monitor.api.params import MAX_ID

SCREENSHOT_ID = {"name": "sid", "in": "path", "required": True, "description": "the screenshot's id",
                 "schema": {"type": "integer", "format": "int64", "minimum": 1,
                            "maximum": MAX_ID}}  # fmt: skip
MASKS_EXAMPLE = {"masks": [{"x": 0, "y": 0, "width": 1280, "height": 60}]}


def add_screenshots(b: _Builder) -> None:
    r, monitor_id = b.refs, _id("monitor")
    base = "/api/v1/monitors/{id}/screenshots"
    png = {
        "description": "The PNG.",
        "content": {"image/png": {"schema": {"type": "string", "format": "binary"}}},
    }
    # fmt: off
    b.add("get", base, "listScreenshots",
          "A browser monitor's screenshots: the latest, the baseline, and the first of each outage",
          tag="history", ok={200: _json(r["ScreenshotList"], "The screenshots (their details).")},
          errors=(404,), parameters=(monitor_id,))
    b.add("get", f"{base}/{{sid}}", "getScreenshot", "A screenshot's PNG", tag="history",
          ok={200: png}, errors=(404,), parameters=(monitor_id, SCREENSHOT_ID))
    b.add("post", f"{base}/{{sid}}/baseline", "acceptBaseline",
          "Accept a screenshot as the baseline the next checks are compared with (editor and up; the "
          "baseline's masks carry over)", tag="history",
          ok={200: _json(r["Screenshot"], "The new baseline.")}, errors=(404, 409),
          parameters=(monitor_id, SCREENSHOT_ID))
    b.add("put", f"{base}/masks", "setScreenshotMasks",
          "Replace the baseline's masked rectangles (editor and up; 409 `no_baseline` before there is one)",
          tag="history", ok={200: _json(r["Screenshot"], "The baseline, with its masks.")},
          errors=(404, 409), parameters=(monitor_id,), body=("MaskList", MASKS_EXAMPLE))
    # fmt: on
