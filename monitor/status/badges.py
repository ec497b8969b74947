"""SVG badges for a monitor's status, uptime and response time, in the shields.io look.

Badges sit in READMEs beside shields.io's own, so they copy its "flat" and "flat-square"
styles: same 20 px height, colours, padding and Verdana 11 px text, so a row of badges
lines up. No font is available server-side to measure text, so widths come from a table of
Verdana's advance widths for printable ASCII (as shields' badge-maker does); "build: passing"
comes out 88 px wide, like shields' own. Other characters take the width of "m", so text may
be spread a little but never overflows (``textLength`` fits it to its box).

Labels can come from a query string (``?label=``): every text is cleaned (no control or
bidi-override characters, at most MAX_LABEL characters) and escaped, and the SVG holds no
script and no external reference, only the two in-document ids of the flat style.
"""

from __future__ import annotations

import math
import re
import unicodedata
from decimal import ROUND_DOWN, Decimal
from html import escape

from monitor.names import BIDI_CONTROLS, name_problem

COLORS: dict[str, str] = {
    "brightgreen": "#4c1",
    "green": "#97ca00",
    "yellowgreen": "#a4a61d",
    "yellow": "#dfb317",
    "orange": "#fe7d37",
    "red": "#e05d44",
    "blue": "#007ec6",
    "lightgrey": "#9f9f9f",
    "grey": "#555",
}
STYLES = ("flat", "flat-square")
MAX_LABEL = 40
LABEL_COLOR = "#555"

# Verdana advance widths in 1/1000 em for U+0020 (space) to U+007E (~), 16 to a row.
_ADVANCE = tuple(
    int(w)
    for w in """
    351 393 458 818 635 1076 726 268 454 454 635 818 363 454 363 454
    635 635 635 635 635 635 635 635 635 635 454 454 818 818 818 545
    1000 683 685 698 770 632 574 775 751 420 454 692 556 842 748 787
    603 787 695 683 616 731 683 988 685 615 685 454 454 454 818 635
    635 600 623 520 623 595 351 623 632 274 344 591 274 972 632 606
    623 623 426 520 394 632 591 818 591 591 525 634 454 634 818
    """.split()
)
_EXTRA = {"\u2026": 818}  # the ellipsis that ends a cut label
_FALLBACK = _ADVANCE[ord("m") - 32]
_FONT_PX = 11
_PAD = 5  # horizontal padding on each side of a text, as shields
_HEX = re.compile(r"#(?:[0-9a-fA-F]{3}){1,2}")
_BRIGHT = 0.69  # above this background brightness shields switches to dark text


def text_width(text: str) -> float:
    """Width in px of ``text`` in Verdana 11 px; accented letters measure as their base letter."""
    units = 0
    for char in text:
        code = ord(unicodedata.normalize("NFD", char)[0]) - 32
        if 0 <= code < len(_ADVANCE):
            units += _ADVANCE[code]
        else:
            units += _EXTRA.get(char, _FALLBACK)
    return units * _FONT_PX / 1000


def _box_width(text: str) -> int:
    # shields floors the width, then rounds up to odd: text centred on a half pixel lands on the grid.
    width = int(text_width(text))
    return width if width % 2 else width + 1


def _strip(text: str) -> str:
    """``text`` without control, bidi-control or unencodable characters, whitespace collapsed."""
    kept = "".join(c for c in text if c.isspace() or not _unwanted(c))
    return " ".join(kept.split())


def _unwanted(char: str) -> bool:
    # Controls and bidi controls steer the display; surrogates and U+FFFE/U+FFFF are not XML.
    return unicodedata.category(char) in ("Cc", "Cs") or char in BIDI_CONTROLS or char in "\ufffe\uffff"


def _cut(text: str, limit: int = MAX_LABEL) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "\u2026"


def clean_label(text: str | None, default: str) -> str:
    """A user-given label made safe to show: ``default`` when nothing visible is left."""
    label = _cut(_strip(text or ""))
    return default if name_problem(label) is not None else label


def _hex(color: str) -> str:
    value = COLORS.get(color.lower(), color)
    if not _HEX.fullmatch(value):
        raise ValueError(f"color must be one of {', '.join(COLORS)} or #rgb/#rrggbb, not {color!r}")
    return value.lower()


def _text_colors(background: str) -> tuple[str, str]:
    """(text, shadow) colours readable on ``background``, by shields' brightness rule."""
    digits = background[1:]
    if len(digits) == 3:
        digits = "".join(d * 2 for d in digits)
    r, g, b = (int(digits[i : i + 2], 16) for i in (0, 2, 4))
    brightness = (r * 299 + g * 587 + b * 114) / 255000
    return ("#fff", "#010101") if brightness <= _BRIGHT else ("#333", "#ccc")


def _text(x: int, width: int, text: str, fill: str, shadow: str | None) -> str:
    # Drawn at 10x and scaled down, as shields does, so positions get sub-pixel precision.
    body, length = escape(text), f'transform="scale(.1)" textLength="{width * 10}"'
    out = f'<text x="{x}" y="140" {length} fill="{fill}">{body}</text>'
    if not shadow:
        return out
    # The shadow: a faint copy 1 px lower, drawn first and hidden from screen readers.
    shade = f'aria-hidden="true" x="{x}" y="150" fill="{shadow}" fill-opacity=".3"'
    return f"<text {shade} {length}>{body}</text>{out}"


def render(label: str, message: str, color: str, style: str = "flat") -> str:
    """The SVG of a badge: grey ``label`` on the left, ``message`` on ``color`` on the right.

    ``color`` is a name from COLORS or ``#rgb``/``#rrggbb``; an empty label leaves only the
    message. Raises ValueError for an unknown colour or style.
    """
    if style not in STYLES:
        raise ValueError(f"style must be one of {', '.join(STYLES)}, not {style!r}")
    fill = _hex(color)
    label, message = _cut(_strip(label)), _cut(_strip(message))
    label_w, message_w = (_box_width(label) if label else 0), _box_width(message)
    left = label_w + 2 * _PAD if label else 0
    right = message_w + 2 * _PAD
    width = left + right
    message_margin = left - 1 if label else 1  # the 1 px overlap where the two parts meet
    accessible = escape(f"{label}: {message}" if label else message)
    flat = style == "flat"

    texts = ""
    if label:
        text_fill, shadow = _text_colors(LABEL_COLOR)
        texts += _text(10 * (1 + _PAD) + 5 * label_w, label_w, label, text_fill, shadow if flat else None)
    text_fill, shadow = _text_colors(fill)
    message_x = 10 * (message_margin + _PAD) + 5 * message_w
    texts += _text(message_x, message_w, message, text_fill, shadow if flat else None)

    rects = (
        f'<rect width="{left}" height="20" fill="{LABEL_COLOR}"/>' if label else ""
    ) + f'<rect x="{left}" width="{right}" height="20" fill="{fill}"/>'
    if flat:
        shapes = (
            '<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" '
            'stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient>'
            f'<clipPath id="r"><rect width="{width}" height="20" rx="3" fill="#fff"/></clipPath>'
            f'<g clip-path="url(#r)">{rects}<rect width="{width}" height="20" fill="url(#s)"/></g>'
        )
    else:
        shapes = f'<g shape-rendering="crispEdges">{rects}</g>'
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="20" role="img" '
        f'aria-label="{accessible}"><title>{accessible}</title>{shapes}'
        '<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" '
        f'text-rendering="geometricPrecision" font-size="110">{texts}</g></svg>'
    )


_STATUS = {
    "up": "brightgreen",
    "degraded": "yellow",
    "down": "red",
    "maintenance": "blue",
    "paused": "lightgrey",
}


def status_badge(status: str | None) -> tuple[str, str]:
    """(message, colour) for a monitor's status; None or anything unexpected is "unknown"."""
    if status in _STATUS:
        return status, _STATUS[status]
    return "unknown", "lightgrey"


# (lowest percent, colour), best first: the UptimeRobot/shields convention.
def _two_decimals(value: Decimal) -> str:
    """``value`` cut (not rounded) to two decimals, without trailing zeros: 99.999 -> "99.99"."""
    text = f"{value.quantize(Decimal('0.01'), rounding=ROUND_DOWN):f}"
    return text.rstrip("0").rstrip(".")


_UPTIME_COLORS = (
    (99.9, "brightgreen"),
    (99.0, "green"),
    (97.0, "yellowgreen"),
    (95.0, "yellow"),
    (90.0, "orange"),
)


def uptime_badge(percent: float | None) -> tuple[str, str]:
    """(message, colour) for an uptime percentage, truncated so that 99.999 never shows as 100%."""
    if percent is None or not math.isfinite(percent):
        return "no data", "lightgrey"
    percent = 0.0 if percent <= 0 else min(percent, 100.0)  # and never "-0%"
    text = _two_decimals(Decimal(repr(percent)))
    # Truncation keeps the order against thresholds of two decimals, so colour and text agree.
    color = next((c for low, c in _UPTIME_COLORS if percent >= low), "red")
    return f"{text}%", color


_LATENCY_COLORS = ((200, "brightgreen"), (500, "green"), (1000, "yellow"), (2000, "orange"))


def latency_badge(avg_ms: float | None, checked: bool = False) -> tuple[str, str]:
    """(message, colour) for an average response time: "123 ms" or, from a second, "1.23 s".
    Without one (only successful checks have a response time): "none" when the monitor was
    ``checked`` (it never answered), "no data" when it was not."""
    if avg_ms is None or not math.isfinite(avg_ms):
        return ("none" if checked else "no data"), "lightgrey"
    ms = math.floor(max(avg_ms, 0.0) + 0.5)  # whole ms, half up; the colour follows what is shown
    if ms < 1000:
        text = f"{ms} ms"
    else:
        text = f"{_two_decimals(Decimal(ms) / 1000)} s"
    color = next((c for high, c in _LATENCY_COLORS if ms < high), "red")
    return text, color
