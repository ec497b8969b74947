"""A browser monitor's journey as data: its steps, their validation and how each one reads.

A journey is a start URL and a list of steps, each one of seven actions with fields of its own
(``{"action": "click", "selector": "#buy"}``). Nothing in it is code: selectors go to
Playwright's selector engines (CSS by default, ``text=``, ``xpath=``, ``role=`` ...), texts and
URLs are compared in Python, and no step evaluates a user string in the page. What a step is
called in results and causes (``click '#buy'``) is :func:`name`; a step's place is its number
from 1 (``step 3``), while a 422 names its field by index from 0 (``steps.2.selector``), as
every list field of the API is named.

A ``fill`` value may be a secret (a password): one marked ``secret``, or any fill of a selector
that names a password (``input[type=password]``, ``#password``), is stored sealed apart from
the settings and read back masked (``browser_stored.py``); no step's name quotes a value.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StringConstraints,
    model_validator,
)

from monitor.checks.http_settings import Url
from monitor.checks.observed import compile_regex
from monitor.checks.wording import clip, printable
from monitor.visual import VisualSettings

MAX_STEPS = 30
MAX_SELECTOR = 500
MAX_TEXT = 500
MAX_VALUE = 1000
# A step's own timeout, when it gives none; each is cut to what is left of the monitor's.
DEFAULT_STEP_TIMEOUT_SECONDS = 10.0
MAX_STEP_TIMEOUT_SECONDS = 60.0
# Of a selector, text or URL in a step's name.
NAME_CLIP = 60
# Words of a fill's selector that make its value a secret whatever ``secret`` says.
SECRET_SELECTOR = re.compile(r"passw|pwd|\bpw\b|secret|token|\botp\b|\bpin\b|\bcvc\b|\bcvv\b", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _selector(value: str) -> str:
    if _CONTROL.search(value):
        raise ValueError("may not contain control characters")
    if value.lstrip().lower().startswith(("internal:", "_react=", "_vue=")):
        raise ValueError(
            "Playwright's internal selector engines are not available; use CSS, text=, xpath= or role="
        )
    return value


def _no_control(value: str) -> str:
    if _CONTROL.search(value.replace("\n", "").replace("\t", "")):
        raise ValueError("may not contain control characters")
    return value


def _regex(value: str) -> str:
    compile_regex(value)
    return value


Selector = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_SELECTOR),
    Field(description="a Playwright selector: CSS (#buy, form button), text=..., xpath=..., role=..."),
    AfterValidator(_selector),
]
Text = Annotated[
    str,
    StringConstraints(strip_whitespace=False, min_length=1, max_length=MAX_TEXT),
    AfterValidator(_no_control),
]
UrlText = Annotated[str, StringConstraints(min_length=1, max_length=2048), AfterValidator(_no_control)]
StepTimeout = Annotated[
    float,
    Field(
        gt=0,
        le=MAX_STEP_TIMEOUT_SECONDS,
        allow_inf_nan=False,
        description=f"how long the step may wait (default {DEFAULT_STEP_TIMEOUT_SECONDS:g} s; "
        "never past the monitor's timeout_seconds)",
    ),
]


class _Step(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Goto(_Step):
    """Load another page (vetted as the start URL is)."""

    action: Literal["goto"]
    url: Url
    timeout_seconds: StepTimeout | None = None


class Click(_Step):
    """Click the first element the selector matches, once it is visible and enabled."""

    action: Literal["click"]
    selector: Selector
    timeout_seconds: StepTimeout | None = None


class Fill(_Step):
    """Type a value into the first input the selector matches."""

    action: Literal["fill"]
    selector: Selector
    value: Annotated[
        str,
        StringConstraints(strip_whitespace=False, max_length=MAX_VALUE),
        Field(description="what to type; a secret one reads back as ********", repr=False),
    ]
    secret: StrictBool = Field(
        False,
        description="keep the value sealed and masked (always so for a password field's selector)",
    )
    timeout_seconds: StepTimeout | None = None

    @model_validator(mode="after")
    def _password_is_secret(self) -> Fill:
        if SECRET_SELECTOR.search(self.selector):
            self.secret = True
        return self


class WaitFor(_Step):
    """Wait until the first element the selector matches is in the state."""

    action: Literal["wait_for"]
    selector: Selector
    state: Literal["visible", "hidden", "attached"] = "visible"
    timeout_seconds: StepTimeout | None = None


class ExpectText(_Step):
    """The page (or the first element the selector matches) shows this text (case matters)."""

    action: Literal["expect_text"]
    text: Text
    selector: Selector | None = None
    timeout_seconds: StepTimeout | None = None


class ExpectSelector(_Step):
    """An element the selector matches is visible."""

    action: Literal["expect_selector"]
    selector: Selector
    timeout_seconds: StepTimeout | None = None


class ExpectUrl(_Step):
    """The page's URL, exactly one of: equals it, contains it, matches the expression."""

    action: Literal["expect_url"]
    equals: UrlText | None = None
    contains: Text | None = None
    matches: Annotated[Text, AfterValidator(_regex)] | None = Field(
        None, description="a regular expression searched in the URL (syntax of Python's re)"
    )
    timeout_seconds: StepTimeout | None = None

    @model_validator(mode="after")
    def _one(self) -> ExpectUrl:
        given = [n for n in ("equals", "contains", "matches") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of equals, contains and matches")
        return self


Step = Annotated[
    Goto | Click | Fill | WaitFor | ExpectText | ExpectSelector | ExpectUrl, Field(discriminator="action")
]
ACTIONS = ("goto", "click", "fill", "wait_for", "expect_text", "expect_selector", "expect_url")


class Viewport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    width: int = Field(1280, strict=True, ge=320, le=3840)
    height: int = Field(800, strict=True, ge=240, le=2160)


def shown(text: str) -> str:
    """A selector, text or URL as a name quotes it: clipped, escaped, in single quotes."""
    return "'" + printable(clip(text, NAME_CLIP), quotes=False).replace("'", "\\'") + "'"


def name(step: Any) -> str:
    """How a step reads in results and causes; never with a fill's value."""
    match step.action:
        case "goto":
            return f"goto {shown(step.url)}"
        case "wait_for":
            return f"wait_for {shown(step.selector)} {step.state}"
        case "expect_text":
            where = f" in {shown(step.selector)}" if step.selector else ""
            return f"expect_text {shown(step.text)}{where}"
        case "expect_url":
            how = next(n for n in ("equals", "contains", "matches") if getattr(step, n) is not None)
            return f"expect_url {how} {shown(getattr(step, how))}"
        case _:
            return f"{step.action} {shown(step.selector)}"


def start_name(url: str) -> str:
    """The page load every journey begins with (entry 0 of its steps in details)."""
    return f"open {shown(url)}"


class BrowserSettings(BaseModel):
    """A browser monitor (a journey): Chromium opens ``url`` and runs ``steps`` in order, each
    timed; up when the page loads (status below 400) and every step passes. No user code runs:
    the steps are data. Costs seconds of CPU per run: the interval is 300 s at least."""

    model_config = ConfigDict(extra="forbid")

    url: Url
    steps: list[Step] = Field(
        default_factory=list,
        max_length=MAX_STEPS,
        description="run in order after the page loads: goto, click, fill, wait_for, expect_text, "
        "expect_selector, expect_url; the first that fails is the cause",
    )
    viewport: Viewport = Field(
        default_factory=lambda: Viewport(width=1280, height=800),
        description="the window's size in CSS pixels",
    )
    visual: VisualSettings = Field(
        default_factory=lambda: VisualSettings(),
        description="compare each run's screenshot with the accepted baseline (monitor/visual)",
    )


def urls(settings: BrowserSettings) -> list[tuple[str, str]]:
    """(field, URL) of every page the journey loads: the start URL, then each goto's."""
    found = [("url", settings.url)]
    found += [(f"steps.{i}.url", s.url) for i, s in enumerate(settings.steps) if s.action == "goto"]
    return found
