"""Badges: colour thresholds, message formats, widths, escaping and well-formed SVG."""

import xml.etree.ElementTree as ET

import pytest

from monitor.status.badges import (
    COLORS,
    MAX_LABEL,
    STYLES,
    clean_label,
    latency_badge,
    render,
    status_badge,
    text_width,
    uptime_badge,
)

SVG = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    return root


def visible_texts(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{SVG}text") if t.get("aria-hidden") != "true"]


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("up", ("up", "brightgreen")),
        ("degraded", ("degraded", "yellow")),
        ("down", ("down", "red")),
        ("paused", ("paused", "lightgrey")),
        ("maintenance", ("maintenance", "blue")),
        (None, ("unknown", "lightgrey")),
        ("unknown", ("unknown", "lightgrey")),
        ("<b>", ("unknown", "lightgrey")),
    ],
)
def test_status_badge(status: str | None, expected: tuple[str, str]) -> None:
    assert status_badge(status) == expected


@pytest.mark.parametrize(
    ("percent", "expected"),
    [
        (100.0, ("100%", "brightgreen")),
        (99.999, ("99.99%", "brightgreen")),  # never rounded up to 100%
        (99.95, ("99.95%", "brightgreen")),
        (99.9, ("99.9%", "brightgreen")),
        (99.899, ("99.89%", "green")),
        (99.0, ("99%", "green")),
        (98.999, ("98.99%", "yellowgreen")),
        (98.0, ("98%", "yellowgreen")),
        (97.0, ("97%", "yellowgreen")),
        (96.999, ("96.99%", "yellow")),
        (95.0, ("95%", "yellow")),
        (94.99, ("94.99%", "orange")),
        (90.0, ("90%", "orange")),
        (89.99, ("89.99%", "red")),
        (0.29, ("0.29%", "red")),  # no float artefact: 0.29 * 100 is 28.999...
        (0.0, ("0%", "red")),
        (-0.0, ("0%", "red")),
        (100.5, ("100%", "brightgreen")),
        (None, ("no data", "lightgrey")),
        (float("nan"), ("no data", "lightgrey")),
    ],
)
def test_uptime_badge(percent: float | None, expected: tuple[str, str]) -> None:
    assert uptime_badge(percent) == expected


@pytest.mark.parametrize(
    ("avg_ms", "expected"),
    [
        (0.0, ("0 ms", "brightgreen")),
        (123.4, ("123 ms", "brightgreen")),
        (199.0, ("199 ms", "brightgreen")),
        (199.5, ("200 ms", "green")),  # the colour follows what is shown
        (200.0, ("200 ms", "green")),
        (499.0, ("499 ms", "green")),
        (500.0, ("500 ms", "yellow")),
        (999.0, ("999 ms", "yellow")),
        (999.6, ("1 s", "orange")),
        (1000.0, ("1 s", "orange")),
        (1234.0, ("1.23 s", "orange")),
        (1500.0, ("1.5 s", "orange")),
        (1999.0, ("1.99 s", "orange")),
        (2000.0, ("2 s", "red")),
        (10000.0, ("10 s", "red")),
        (-5.0, ("0 ms", "brightgreen")),
        (None, ("no data", "lightgrey")),
        (float("inf"), ("no data", "lightgrey")),
    ],
)
def test_latency_badge(avg_ms: float | None, expected: tuple[str, str]) -> None:
    assert latency_badge(avg_ms) == expected


@pytest.mark.parametrize(
    ("avg_ms", "checked", "expected"),
    [
        (None, True, ("none", "lightgrey")),  # checked, never answered: no response time
        (None, False, ("no data", "lightgrey")),  # not checked yet
        (123.0, True, ("123 ms", "brightgreen")),
    ],
)
def test_latency_badge_without_a_successful_check(
    avg_ms: float | None, checked: bool, expected: tuple[str, str]
) -> None:
    assert latency_badge(avg_ms, checked) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, "uptime"),
        ("", "uptime"),
        ("   \t\n ", "uptime"),
        ("\u200d\u200b", "uptime"),  # nothing visible
        ("api", "api"),
        ("  my \t api\n\nstatus ", "my api status"),
        ("a\x00b\x1bc\x7f", "abc"),
        ("a\u202eb\u2066c", "abc"),  # bidi overrides and isolates
        ("x" * MAX_LABEL, "x" * MAX_LABEL),
        ("x" * (MAX_LABEL + 1), "x" * (MAX_LABEL - 1) + "\u2026"),
        ("ab " * 20, "ab " * 12 + "ab\u2026"),  # no space left before the ellipsis
        ("état 😀", "état 😀"),
    ],
)
def test_clean_label(text: str | None, expected: str) -> None:
    assert clean_label(text, "uptime") == expected
    assert len(clean_label(text, "uptime")) <= MAX_LABEL


@pytest.mark.parametrize(
    ("label", "message", "width"),
    [
        ("build", "passing", 88),  # the same as shields.io's badge
        ("license", "MIT", 78),
    ],
)
def test_widths_match_shields(label: str, message: str, width: int) -> None:
    for style in STYLES:
        assert parse(render(label, message, "brightgreen", style)).get("width") == str(width)


def test_widths_grow_with_text() -> None:
    widths = [int(parse(render("uptime", "9" * n, "green")).get("width") or 0) for n in range(1, 12)]
    assert widths == sorted(widths) and len(set(widths)) == len(widths)
    assert text_width("W") > text_width("i") > 0
    assert text_width("é") == text_width("e")
    assert text_width("漢") == text_width("m")  # outside the table: the fallback


@pytest.mark.parametrize(
    "label",
    [
        "<script>alert(1)</script>",
        "&\"'<>",
        "a]]>b",
        "&amp; literally",
        "x\x00y",
    ],
)
@pytest.mark.parametrize("style", STYLES)
def test_hostile_labels_are_escaped_and_round_trip(label: str, style: str) -> None:
    svg = render(label, "up", "brightgreen", style)
    root = parse(svg)
    shown = label.replace("\x00", "")
    assert visible_texts(root) == [shown, "up"]
    assert root.get("aria-label") == f"{shown}: up"
    assert root.findtext(f"{SVG}title") == f"{shown}: up"
    assert "<script" not in svg and root.find(f".//{SVG}script") is None


@pytest.mark.parametrize("style", STYLES)
def test_no_external_references(style: str) -> None:
    svg = render("javascript:x", "http://evil.example/", "red", style)
    root = parse(svg)
    for element in root.iter():
        for name, value in element.attrib.items():
            assert "href" not in name
            assert "url(" not in value or value in ("url(#r)", "url(#s)")
    assert "xlink" not in svg and "<image" not in svg and "<foreignObject" not in svg


def test_flat_has_gradient_rounding_and_shadow() -> None:
    root = parse(render("uptime 30d", "99.95%", "brightgreen"))
    assert root.get("role") == "img" and root.get("height") == "20"
    assert root.find(f"{SVG}linearGradient") is not None
    assert root.find(f"{SVG}clipPath/{SVG}rect").get("rx") == "3"  # type: ignore[union-attr]
    shadows = [t for t in root.iter(f"{SVG}text") if t.get("aria-hidden") == "true"]
    assert [t.text for t in shadows] == ["uptime 30d", "99.95%"]
    assert {t.get("y") for t in shadows} == {"150"}
    fills = [r.get("fill") for r in root.iter(f"{SVG}rect")]
    assert "#555" in fills and COLORS["brightgreen"] in fills


def test_flat_square_is_plain() -> None:
    svg = render("uptime 30d", "99.95%", "brightgreen", "flat-square")
    root = parse(svg)
    assert root.find(f"{SVG}linearGradient") is None and root.find(f"{SVG}clipPath") is None
    assert 'rx="' not in svg and "aria-hidden" not in svg
    assert visible_texts(root) == ["uptime 30d", "99.95%"]


@pytest.mark.parametrize(
    ("color", "fill", "text_fill"),
    [
        ("red", COLORS["red"], "#fff"),
        ("lightgrey", COLORS["lightgrey"], "#fff"),
        ("#ABC123", "#abc123", "#fff"),
        ("#fff", "#fff", "#333"),  # dark text on a light background
    ],
)
def test_colors(color: str, fill: str, text_fill: str) -> None:
    root = parse(render("a", "b", color, "flat-square"))
    assert root.findall(f".//{SVG}rect")[-1].get("fill") == fill
    assert root.findall(f".//{SVG}text")[-1].get("fill") == text_fill


@pytest.mark.parametrize(
    ("color", "style"),
    [
        ("purple-ish", "flat"),
        ("#12", "flat"),
        ("#1234567", "flat"),
        ('red" onload="x', "flat"),
        ("red", "plastic"),
    ],
)
def test_bad_color_or_style_is_refused(color: str, style: str) -> None:
    with pytest.raises(ValueError):
        render("a", "b", color, style)


def test_empty_label_leaves_the_message_alone() -> None:
    root = parse(render("", "up", "brightgreen"))
    assert visible_texts(root) == ["up"]
    assert root.get("aria-label") == "up"
    assert len(root.findall(f".//{SVG}g/{SVG}rect")) == 2  # the message and the gradient


def test_render_cuts_overlong_text() -> None:
    root = parse(render("x" * 500, "y" * 500, "blue"))
    assert visible_texts(root) == ["x" * (MAX_LABEL - 1) + "\u2026", "y" * (MAX_LABEL - 1) + "\u2026"]
