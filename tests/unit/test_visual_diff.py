"""The pixel comparison of screenshots (monitor/visual/diff.py) as a table of generated images."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image
from pydantic import ValidationError

from monitor.visual import Mask, VisualSettings, verdict_of
from monitor.visual.diff import (
    MAX_PIXELS,
    TOLERANCE,
    ImageRefused,
    changed,
    compare,
    compare_png,
    highlight,
    percent_text,
    pixels,
    size_of,
    verdict,
)

WHITE = (255, 255, 255)


def page(width: int = 100, height: int = 100, colour: tuple[int, int, int] = WHITE) -> np.ndarray:
    return np.full((height, width, 3), colour, dtype=np.uint8)


def painted(base: np.ndarray, x: int, y: int, w: int, h: int, colour: tuple[int, int, int]) -> np.ndarray:
    out = base.copy()
    out[y : y + h, x : x + w] = colour
    return out


def png(array: np.ndarray, mode: str = "RGB") -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(array).convert(mode).save(buffer, format="PNG")
    return buffer.getvalue()


BLOCK = painted(page(), 0, 0, 10, 10, (0, 0, 0))  # 100 of 10,000 pixels black

CASES = [
    # (name, new, baseline, masks, changed pixels, compared pixels)
    ("same", page(), page(), [], 0, 10_000),
    ("a block appears", BLOCK, page(), [], 100, 10_000),
    ("noise within the tolerance", page(colour=(255 - TOLERANCE,) * 3), page(), [], 0, 10_000),
    ("one level past it", page(colour=(254 - TOLERANCE, 255, 255)), page(), [], 10_000, 10_000),
    ("the block masked", BLOCK, page(), [Mask(x=0, y=0, width=10, height=10)], 0, 9_900),
    ("half of it masked", BLOCK, page(), [Mask(x=0, y=0, width=5, height=10)], 50, 9_950),
    ("a mask past the edge", BLOCK, page(), [Mask(x=95, y=95, width=50, height=50)], 100, 9_975),
    ("everything masked", BLOCK, page(), [Mask(x=0, y=0, width=100, height=100)], 0, 0),
    ("the page grew taller", page(100, 120), page(), [], 2_000, 12_000),
    ("the page shrank", page(100, 80), page(), [], 2_000, 10_000),
    ("wider and shorter: the corner counts", page(120, 80), page(), [], 120 * 100 - 100 * 80, 12_000),
    ("grown part masked", page(100, 120), page(), [Mask(x=0, y=100, width=100, height=20)], 0, 10_000),
]


@pytest.mark.parametrize(
    ("name", "new", "baseline", "masks", "changed_px", "compared_px"), CASES, ids=[c[0] for c in CASES]
)
def test_compare(
    name: str, new: np.ndarray, baseline: np.ndarray, masks: list[Mask], changed_px: int, compared_px: int
) -> None:
    found = compare(new, baseline, masks)
    assert (found.changed_pixels, found.compared_pixels) == (changed_px, compared_px)
    # the same through PNG bytes
    assert compare_png(png(new), png(baseline), masks) == found


@pytest.mark.parametrize(
    ("percent", "threshold", "is_changed"),
    [(0.0, 0.0, False), (0.01, 0.0, True), (5.0, 5.0, False), (5.01, 5.0, True), (100.0, 100.0, False)],
)
def test_threshold(percent: float, threshold: float, is_changed: bool) -> None:
    comparison = compare(page(), page())
    fake = type(comparison)(round(percent * 100), 10_000, (100, 100), (100, 100))
    assert changed(fake, threshold) is is_changed


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.0, "0 %"), (0.01, "< 0.1 %"), (5.0, "5 %"), (23.44, "23.4 %"), (99.96, "100 %"), (2.5, "2.5 %")],
)
def test_percent_text(value: float, text: str) -> None:
    assert percent_text(value) == text


def test_verdict_names_share_threshold_and_sizes() -> None:
    assert verdict(compare(BLOCK, page()), 0.5) == "page changed 1 % (threshold 0.5 %)"
    assert (
        verdict(compare(page(100, 120), page()), 5)
        == "page changed 16.7 % (threshold 5 %; size 100x100 -> 100x120)"
    )


def test_transparency_is_over_white() -> None:
    clear = np.zeros((10, 10, 4), dtype=np.uint8)  # transparent black
    buffer = io.BytesIO()
    Image.fromarray(clear, "RGBA").save(buffer, format="PNG")
    assert (pixels(buffer.getvalue()) == 255).all()
    assert compare_png(buffer.getvalue(), png(page(10, 10))).changed_pixels == 0


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"not an image", "not a PNG"),
        (b"\x89PNG\r\n\x1a\n" + b"\0" * 20, "not a PNG"),
    ],
)
def test_refused_bytes(data: bytes, says: str) -> None:
    with pytest.raises(ImageRefused, match=says):
        size_of(data)


def test_refused_other_formats_and_bombs() -> None:
    buffer = io.BytesIO()
    Image.fromarray(page(4, 4)).save(buffer, format="GIF")
    with pytest.raises(ImageRefused, match="GIF"):
        size_of(buffer.getvalue())
    # a PNG whose header claims more pixels than we decode: refused from the header alone
    huge = io.BytesIO()
    Image.new("1", (4096, MAX_PIXELS // 4096 + 1)).save(huge, format="PNG")
    with pytest.raises(ImageRefused, match="more than"):
        pixels(huge.getvalue())


def test_highlight_marks_changes_red_and_masks_grey() -> None:
    out = pixels(highlight(BLOCK, page(), [Mask(x=50, y=50, width=10, height=10)]))
    assert out.shape == (100, 100, 3)
    assert tuple(out[0, 0]) == (220, 0, 0)
    assert tuple(out[55, 55]) == (160, 160, 160)
    assert tuple(out[90, 90]) == (255, 255, 255)


def test_settings_defaults_and_bounds() -> None:
    assert VisualSettings().model_dump() == {
        "compare": False,
        "threshold_percent": 5.0,
        "severity": "down",
    }
    with pytest.raises(ValidationError, match="threshold_percent"):
        VisualSettings(threshold_percent=101)
    with pytest.raises(ValidationError, match="severity"):
        VisualSettings.model_validate({"severity": "up"})
    with pytest.raises(ValidationError, match="width"):
        Mask.model_validate({"x": 0, "y": 0, "width": 0, "height": 5})


@pytest.mark.parametrize(
    ("kept", "said"),
    [
        (None, (None, None)),
        ({"changed": False}, (None, None)),
        (
            {"changed": True, "severity": "down", "verdict": "page changed 9 % (threshold 5 %)"},
            ("page changed 9 % (threshold 5 %)", None),
        ),
        ({"changed": True, "severity": "degraded", "verdict": "v"}, (None, "v")),
    ],
)
def test_verdict_of(kept: dict[str, object] | None, said: tuple[str | None, str | None]) -> None:
    assert verdict_of(kept) == said
