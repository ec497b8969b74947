"""The share of a page's pixels that changed between two screenshots: pure, no I/O.

Each pixel of the new screenshot is set against the same pixel of the baseline; it counts as
changed when one of its colour channels moved by more than ``TOLERANCE`` (of 255). Measured
here: two headless Chromium shots of one local page (1280x800) differ in no pixel at all, and
removing its banner changes 14.2 % of them; comparing takes ~40 ms. The tolerance is for what
one machine does not show: antialiased edges and image decoding that move a few levels
between Chromium builds or GPU paths, while real text, colour or layout changes move a
channel by far more (dark text on white: ~200).

Masks are rectangles (CSS pixels of the screenshot, which Chromium takes at a device scale of
1) left out of both the changed pixels and the whole they are a share of: a clock, a
rotating banner. Everything masked: nothing to compare, 0 %.

Screenshots of different sizes (a page grown taller, a viewport changed) are set on a common
canvas, the larger width by the larger height, both anchored at the top left: inside the
overlap pixels are compared; every pixel of the canvas that only one of them has (or neither,
the corner an L-shaped difference leaves) counts as changed. No resizing: a resized page
would compare blurred text, and a page that grew by 200 px has changed by what it grew.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from PIL import Image

if TYPE_CHECKING:
    from collections.abc import Iterable

    from monitor.visual import Mask

# How far (of 255) a channel may move before its pixel counts as changed.
TOLERANCE = 24
# The most pixels a screenshot may have (a 1280 x 12,800 full-page shot; 16 Mi pixels of RGB
# is 48 MiB once decoded): larger ones are refused, never decoded (a PNG "bomb").
MAX_PIXELS = 16 * 1024 * 1024


class ImageRefused(ValueError):
    """Bytes that are not a PNG screenshot we compare (not a PNG, or too large once decoded)."""


@dataclass(frozen=True)
class Comparison:
    """What comparing a screenshot with its baseline found."""

    changed_pixels: int
    compared_pixels: int  # the canvas less what the masks cover
    size: tuple[int, int]  # the new screenshot's (width, height)
    baseline_size: tuple[int, int]

    @property
    def percent(self) -> float:
        if self.compared_pixels == 0:
            return 0.0
        return 100.0 * self.changed_pixels / self.compared_pixels


def size_of(png: bytes) -> tuple[int, int]:
    """A PNG's (width, height), read from its header alone; :class:`ImageRefused` otherwise."""
    try:
        with Image.open(io.BytesIO(png)) as image:
            if image.format != "PNG":
                raise ImageRefused(f"not a PNG image ({image.format or 'unknown format'})")
            width, height = image.size
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
        if isinstance(exc, ImageRefused):
            raise
        raise ImageRefused(f"not a PNG image: {exc}") from None
    if width * height > MAX_PIXELS:
        raise ImageRefused(f"{width}x{height} is more than {MAX_PIXELS:,} pixels")
    return width, height


def pixels(png: bytes) -> np.ndarray:
    """A PNG as an array of RGB pixels (height, width, 3), transparency over white."""
    size_of(png)
    try:
        with Image.open(io.BytesIO(png)) as image:
            if image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info:
                flat = Image.new("RGB", image.size, (255, 255, 255))
                flat.paste(image.convert("RGBA"), mask=image.convert("RGBA").getchannel("A"))
                return np.asarray(flat)
            return np.asarray(image.convert("RGB"))
    except (OSError, SyntaxError, ValueError) as exc:
        raise ImageRefused(f"not a readable PNG image: {exc}") from None


def changed_map(new: np.ndarray, baseline: np.ndarray) -> np.ndarray:
    """Which pixels of the common canvas changed (True), as a (height, width) array."""
    height = max(new.shape[0], baseline.shape[0])
    width = max(new.shape[1], baseline.shape[1])
    # Every canvas pixel counts as changed until the overlap says otherwise.
    changed = np.ones((height, width), dtype=bool)
    overlap_h, overlap_w = min(new.shape[0], baseline.shape[0]), min(new.shape[1], baseline.shape[1])
    a = new[:overlap_h, :overlap_w].astype(np.int16)
    b = baseline[:overlap_h, :overlap_w].astype(np.int16)
    changed[:overlap_h, :overlap_w] = (np.abs(a - b) > TOLERANCE).any(axis=2)
    return changed


def compare(new: np.ndarray, baseline: np.ndarray, masks: Iterable[Mask] = ()) -> Comparison:
    """How many pixels of ``new`` changed from ``baseline``, ``masks`` left out (module doc)."""
    height_new, width_new = new.shape[:2]
    height_old, width_old = baseline.shape[:2]
    changed = changed_map(new, baseline)
    counted = np.ones(changed.shape, dtype=bool)
    for mask in masks:
        counted[mask.y : mask.y + mask.height, mask.x : mask.x + mask.width] = False
    return Comparison(
        changed_pixels=int(np.count_nonzero(changed & counted)),
        compared_pixels=int(np.count_nonzero(counted)),
        size=(width_new, height_new),
        baseline_size=(width_old, height_old),
    )


def compare_png(new: bytes, baseline: bytes, masks: Iterable[Mask] = ()) -> Comparison:
    return compare(pixels(new), pixels(baseline), masks)


def percent_text(value: float) -> str:
    """A share as the verdict writes it: one decimal, none when whole (5 %, 23.4 %); a change
    too small to show at one decimal is not written as 0 %."""
    if 0.0 < value < 0.05:
        return "< 0.1 %"
    rounded = round(value, 1)
    return f"{rounded:g} %" if rounded == int(rounded) else f"{rounded:.1f} %"


def verdict(comparison: Comparison, threshold_percent: float) -> str:
    """ "page changed 23.4 % (threshold 5 %)", with the sizes when they differ."""
    text = f"page changed {percent_text(comparison.percent)} (threshold {percent_text(threshold_percent)}"
    if comparison.size != comparison.baseline_size:
        (w0, h0), (w1, h1) = comparison.baseline_size, comparison.size
        text += f"; size {w0}x{h0} -> {w1}x{h1}"
    return text + ")"


def changed(comparison: Comparison, threshold_percent: float) -> bool:
    """Whether the page changed more than the threshold allows (at 0 %, any changed pixel)."""
    return comparison.percent > threshold_percent


def highlight(new: np.ndarray, baseline: np.ndarray, masks: Iterable[Mask] = ()) -> bytes:
    """A PNG of ``new`` dimmed, its changed pixels in red and the masks grey: what the
    dashboard shows beside the two screenshots."""
    changed_px = changed_map(new, baseline)
    canvas = np.full((*changed_px.shape, 3), 255, dtype=np.uint8)
    canvas[: new.shape[0], : new.shape[1]] = new
    out = ((canvas.astype(np.uint16) + 3 * 255) // 4).astype(np.uint8)
    out[changed_px] = (220, 0, 0)
    for mask in masks:
        out[mask.y : mask.y + mask.height, mask.x : mask.x + mask.width] = (160, 160, 160)
    buffer = io.BytesIO()
    Image.fromarray(out, "RGB").save(buffer, format="PNG", optimize=False)
    return buffer.getvalue()
