"""A browser journey's pure part as tables: its steps validated (each 422 naming its field), how
each step reads, its secrets stored apart and masked, and Playwright's messages reduced."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

import pytest
from cryptography.fernet import Fernet
from pydantic import ValidationError

from monitor.checks import REGISTRY
from monitor.checks.base import SettingsError
from monitor.checks.browser import Journey, JourneyOptions
from monitor.checks.browser_actions import Clock, StepFailed, url_holds
from monitor.checks.browser_steps import BrowserSettings, name
from monitor.checks.browser_wording import blocking, cause, document_refusal, net_error, reduced, scrub
from monitor.domain.errors import from_validation
from monitor.domain.schemas.monitors import CREATE_BODIES
from monitor.models import Failure, MonitorSpec
from monitor.secrets import MASK, SecretBox, is_sealed, open_monitor_secrets, seal_monitor_secrets

START = "https://shop.example/"
CONTEXT = {"min_interval_seconds": 30}


def body(*steps: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"type": "browser", "name": "Shop", "url": START, "interval_seconds": 300,
            "steps": list(steps), **fields}  # fmt: skip


def settings(*steps: dict[str, Any]) -> BrowserSettings:
    return BrowserSettings.model_validate({"url": START, "steps": list(steps)})


# -- each step as it reads ----------------------------------------------------------------------

NAMES = [
    ({"action": "goto", "url": "https://shop.example/cart"}, "goto 'https://shop.example/cart'"),
    ({"action": "click", "selector": "#buy"}, "click '#buy'"),
    ({"action": "click", "selector": "text=Buy 'now'"}, "click 'text=Buy \\'now\\''"),
    ({"action": "fill", "selector": "#email", "value": "a@example.com"}, "fill '#email'"),
    ({"action": "wait_for", "selector": ".spinner", "state": "hidden"}, "wait_for '.spinner' hidden"),
    ({"action": "wait_for", "selector": ".done"}, "wait_for '.done' visible"),
    ({"action": "expect_text", "text": "Thank you"}, "expect_text 'Thank you'"),
    ({"action": "expect_text", "text": "Paid", "selector": "#status"}, "expect_text 'Paid' in '#status'"),
    ({"action": "expect_selector", "selector": "img.logo"}, "expect_selector 'img.logo'"),
    ({"action": "expect_url", "contains": "/thanks"}, "expect_url contains '/thanks'"),
    ({"action": "expect_url", "matches": r"/orders/\d+$"}, "expect_url matches '/orders/\\d+$'"),
    ({"action": "expect_text", "text": "x" * 80}, "expect_text '" + "x" * 60 + "…'"),
    ({"action": "expect_text", "text": "two\nlines"}, "expect_text 'two\\nlines'"),
]


@pytest.mark.parametrize(("step", "said"), NAMES, ids=[n[1][:30] for n in NAMES])
def test_each_step_reads_as_its_action_and_what_it_is_about(step: dict[str, Any], said: str) -> None:
    assert name(settings(step).steps[0]) == said


def test_a_fill_never_shows_its_value_not_even_in_repr() -> None:
    step = settings({"action": "fill", "selector": "#email", "value": "hunter2"}).steps[0]
    assert "hunter2" not in name(step) and "hunter2" not in repr(step)


# -- bodies: valid ones, and each invalid one's field --------------------------------------------

INVALID = [
    ("no url", {"url": None}, "url"),
    ("ftp url", {"url": "ftp://shop.example/"}, "url"),
    ("unknown action", {"steps": [{"action": "hover", "selector": "#a"}]}, "steps.0"),
    ("no selector", {"steps": [{"action": "click"}]}, "steps.0.selector"),
    (
        "third step's empty selector",
        {
            "steps": [
                {"action": "click", "selector": "#a"},
                {"action": "click", "selector": "#b"},
                {"action": "click", "selector": "  "},
            ]
        },
        "steps.2.selector",
    ),
    ("control character", {"steps": [{"action": "click", "selector": "#a\x00"}]}, "steps.0.selector"),
    ("internal engine", {"steps": [{"action": "click", "selector": "internal:role=x"}]}, "steps.0.selector"),
    ("goto without url", {"steps": [{"action": "goto"}]}, "steps.0.url"),
    ("goto javascript:", {"steps": [{"action": "goto", "url": "javascript:alert(1)"}]}, "steps.0.url"),
    ("fill without value", {"steps": [{"action": "fill", "selector": "#a"}]}, "steps.0.value"),
    ("bad state", {"steps": [{"action": "wait_for", "selector": "#a", "state": "gone"}]}, "steps.0.state"),
    ("empty text", {"steps": [{"action": "expect_text", "text": ""}]}, "steps.0.text"),
    ("url: none of three", {"steps": [{"action": "expect_url"}]}, "steps.0"),
    ("url: two of three", {"steps": [{"action": "expect_url", "equals": "x", "contains": "y"}]}, "steps.0"),
    ("bad regex", {"steps": [{"action": "expect_url", "matches": "(["}]}, "steps.0.matches"),
    (
        "step timeout 0",
        {"steps": [{"action": "click", "selector": "#a", "timeout_seconds": 0}]},
        "steps.0.timeout_seconds",
    ),
    (
        "step timeout 61",
        {"steps": [{"action": "click", "selector": "#a", "timeout_seconds": 61}]},
        "steps.0.timeout_seconds",
    ),
    (
        "unknown step field",
        {"steps": [{"action": "click", "selector": "#a", "script": "x()"}]},
        "steps.0.script",
    ),
    ("31 steps", {"steps": [{"action": "click", "selector": "#a"}] * 31}, "steps"),
    ("tiny viewport", {"viewport": {"width": 100, "height": 800}}, "viewport.width"),
    ("timeout over the cap", {"timeout_seconds": 121}, "timeout_seconds"),
]


@pytest.mark.parametrize(("fields", "field"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
def test_an_invalid_journey_is_refused_naming_its_field(fields: dict[str, Any], field: str) -> None:
    model = CREATE_BODIES["browser"]
    given = {**body(), **fields}
    with pytest.raises(ValidationError) as caught:
        model.model_validate(given, context=CONTEXT)
    error = from_validation(caught.value, model)
    assert (error.status, error.field) == (422, field), error.message
    assert error.message.startswith(f"{field}: ")


def test_a_journey_defaults_to_a_60_s_timeout_and_reads_back_as_given() -> None:
    valid = CREATE_BODIES["browser"].model_validate(
        body({"action": "click", "selector": "#buy"}, {"action": "expect_url", "equals": START}),
        context=CONTEXT,
    )
    assert valid.timeout_seconds == 60  # type: ignore[attr-defined]
    assert REGISTRY.get("browser").target(valid) == START


def test_every_page_a_journey_loads_is_a_host_to_vet() -> None:
    journey = settings(
        {"action": "goto", "url": "https://pay.example/"}, {"action": "goto", "url": START + "x"}
    )
    assert REGISTRY.get("browser").hosts(journey) == ("shop.example", "pay.example")


# -- secrets: fill values stored apart, masked, kept when sent back masked -----------------------

LOGIN = [
    {"action": "fill", "selector": "#user", "value": "ann"},
    {"action": "fill", "selector": "input[type=password]", "value": "hunter2"},
    {"action": "fill", "selector": "#code", "value": "1234", "secret": True},
    {"action": "click", "selector": "#login"},
]


def test_secret_fill_values_are_stored_apart_and_read_back_masked() -> None:
    check = REGISTRY.get("browser")
    stored, secrets = check.to_stored(settings(*LOGIN))
    assert secrets == {"fills": [[1, "hunter2"], [2, "1234"]]}
    assert "hunter2" not in str(stored) and "1234" not in str(stored)
    assert stored["steps"][0]["value"] == "ann"
    shown = check.shown(START, stored, None)
    assert [s.get("value") for s in shown["steps"]] == ["ann", MASK, MASK, None]
    assert shown["steps"][1]["secret"] is True and shown["url"] == START
    whole = check.whole(START, stored, secrets)
    assert [s.get("value") for s in whole["steps"]] == ["ann", "hunter2", "1234", None]
    options = check.options(stored, secrets)
    assert isinstance(options, JourneyOptions) and options.secrets == ("hunter2", "1234")
    assert "hunter2" not in repr(options)


def test_a_mask_sent_back_keeps_the_stored_value_of_that_selector_even_moved() -> None:
    check = REGISTRY.get("browser")
    stored, secrets = check.to_stored(settings(*LOGIN))
    whole = check.whole(START, stored, secrets)
    moved = [LOGIN[3], {**LOGIN[2], "value": MASK}, {**LOGIN[1], "value": MASK}]
    kept = check.unmask({"steps": [dict(s) for s in moved]}, whole)
    assert [s.get("value") for s in kept["steps"]] == [None, "1234", "hunter2"]


def test_a_mask_with_nothing_stored_to_keep_names_the_step_value() -> None:
    check = REGISTRY.get("browser")
    given = {"steps": [LOGIN[0], {"action": "fill", "selector": "#new-password", "value": MASK}]}
    with pytest.raises(SettingsError) as caught:
        check.unmask(given, {"steps": []})
    assert caught.value.field == "steps.1.value"


# -- what the run's messages become --------------------------------------------------------------

CLICK_LOG = (
    'Locator.click: Timeout 5000ms exceeded.\nCall log:\n  - waiting for locator("#buy").first\n'
    '  - locator resolved to <button id="buy" disabled>Buy</button>\n  - attempting click action\n'
    "  - waiting for element to be visible, enabled and stable\n  - element is not enabled\n"
    "  - retrying click action\n  - element is not visible\n"
)
REDUCED = [
    (
        "refused",
        "Page.goto: net::ERR_CONNECTION_REFUSED at http://127.0.0.1:9/\nCall log:\n  - navigating",
        "connection refused",
    ),
    ("unknown net code", "Page.goto: net::ERR_QUIC_PROTOCOL_ERROR at x", "ERR_QUIC_PROTOCOL_ERROR"),
    ("blocked click", CLICK_LOG, "element is not visible"),
    (
        "covered",
        'x\n  - <div class="modal"> intercepts pointer events\n',
        '<div class="modal"> intercepts pointer events',
    ),
    (
        "closed",
        "Locator.click: Target page, context or browser has been closed",
        "the browser ended (the run's time limit or memory cap)",
    ),
    (
        "other",
        "Locator.fill: Error: Element is not an <input>\nCall log:\n  - x",
        "Error: Element is not an <input>",
    ),
    ("long", "Page.x: " + "y" * 500, "y" * 117 + "..."),
]


@pytest.mark.parametrize(("message", "said"), [c[1:] for c in REDUCED], ids=[c[0] for c in REDUCED])
def test_playwright_messages_are_reduced_to_a_clause(message: str, said: str) -> None:
    assert reduced(message) == said


def test_net_errors_and_blocking_reasons_alone() -> None:
    assert net_error("no code here") is None and blocking("no log") is None
    assert net_error("net::ERR_NAME_NOT_RESOLVED at https://x/") == "name not resolved"


def test_the_cause_names_the_step_by_number_or_the_start_page() -> None:
    assert cause(3, "click '#buy'", "no element matches within 5 s") == (
        "step 3 click '#buy': no element matches within 5 s"
    )
    said = cause(0, "open 'https://shop.example/'", "answered 503")
    assert said == "open 'https://shop.example/': answered 503"
    assert len(cause(1, "x", "y" * 2000)) == 500


def test_the_document_refused_by_the_proxy_is_found_among_the_refusals() -> None:
    refusals = ["blocked: 169.254.169.254 (link-local 169.254.0.0/16) for http://169.254.169.254/x",
                "blocked: 10.0.0.7 (private-use 10.0.0.0/8) for http://10.0.0.7/"]  # fmt: skip
    assert document_refusal("http://10.0.0.7/", refusals) == refusals[1]
    assert document_refusal("http://[fd00::1]/", ["blocked: [fd00::1] (unique-local)"]) is not None
    assert document_refusal("https://shop.example/", refusals) is None


def test_secrets_are_masked_as_typed_and_as_a_form_sends_them() -> None:
    text = "the URL is 'https://x/login?pw=p%40ss+word&u=ann' (typed p@ss word)"
    assert scrub(text, ["p@ss word", ""]) == f"the URL is 'https://x/login?pw={MASK}&u=ann' (typed {MASK})"


URLS = [
    ({"equals": "https://shop.example/thanks"}, "https://shop.example/thanks", True),
    ({"equals": "https://shop.example/thanks"}, "https://shop.example/thanks?x", False),
    ({"contains": "/thanks"}, "https://shop.example/thanks?x", True),
    ({"matches": r"/orders/\d+$"}, "https://shop.example/orders/42", True),
    ({"matches": r"/orders/\d+$"}, "https://shop.example/orders/x", False),
    ({"matches": r"(a+)+$"}, "https://x/" + "a" * 40 + "!", False),  # backtracks: its budget ends it
]


@pytest.mark.parametrize(("how", "url", "holds"), URLS)
def test_expect_url_compares_in_python(how: dict[str, str], url: str, holds: bool) -> None:
    assert url_holds(settings({"action": "expect_url", **how}).steps[0], url) is holds


def test_fill_values_are_among_the_secrets_sealed_at_rest() -> None:
    box = SecretBox.from_setting(Fernet.generate_key().decode())
    sealed = seal_monitor_secrets(box, {"fills": [[2, "hunter2"]]})
    assert sealed is not None and is_sealed(sealed["fills"][0][1]) and sealed["fills"][0][0] == 2
    assert open_monitor_secrets(box, sealed) == {"fills": [[2, "hunter2"]]}


# -- the verdict of a run's steps (Journey without a browser) ------------------------------------


def journey_of(*steps: dict[str, Any], timeout: float = 60) -> Journey:
    return Journey(REGISTRY.get("browser").options({"url": START, "steps": list(steps)}, None), timeout)


def spec() -> MonitorSpec:
    return MonitorSpec(id=3, name="j", type="browser", url=START, interval_seconds=300,
                       timeout_seconds=60, confirm_after=1, paused=False)  # fmt: skip


def test_a_refused_start_page_is_a_refusal_naming_it() -> None:
    journey = journey_of({"action": "click", "selector": "#buy"})
    journey._done("open 'https://shop.example/'", time.monotonic(), StepFailed("answered 403", status=403))
    journey.status = 403  # as walk() keeps it
    journey.refusals = ["blocked: shop.example resolves to 10.0.0.7 (private-use 10.0.0.0/8) for http://x/"]
    result = journey.result(spec(), dt.datetime.now(dt.UTC))
    assert (result.ok, result.failure, result.status_code) == (False, Failure.REFUSED, 403)
    assert result.error == f"open '{START}': blocked: shop.example resolves to 10.0.0.7 (private-use " \
        "10.0.0.0/8) for http://x/"  # fmt: skip


def test_a_subresource_refused_is_no_failure_by_itself() -> None:
    journey = journey_of()
    journey._done("open 'https://shop.example/'", time.monotonic(), None)
    journey.refusals = ["blocked: 169.254.169.254 (link-local 169.254.0.0/16) for http://169.254.169.254/"]
    result = journey.result(spec(), dt.datetime.now(dt.UTC))
    assert result.ok and (result.details or {})["refusals"] == journey.refusals


@pytest.mark.parametrize(
    ("failed", "cut", "kind"),
    [
        (StepFailed("no element matches within 10 s", timed_out=True), False, Failure.ASSERTION),
        (StepFailed("no element matches within 3.2 s", timed_out=True), True, Failure.TIMEOUT),
        (StepFailed("Error: Element is not an <input>"), True, Failure.ASSERTION),
    ],
)
def test_a_step_cut_by_the_journeys_deadline_is_a_timeout(
    failed: StepFailed, cut: bool, kind: Failure
) -> None:
    journey = journey_of({"action": "click", "selector": "#buy"})
    journey._done("open 'https://shop.example/'", time.monotonic(), None)
    clock = Clock(10, time.monotonic() + (3.2 if cut else 60))
    journey._done("click '#buy'", time.monotonic(), failed, clock)
    assert journey.result(spec(), dt.datetime.now(dt.UTC)).failure is kind


def test_a_run_cut_off_midway_fails_after_its_last_step_and_not_once_done() -> None:
    journey = journey_of({"action": "click", "selector": "#buy"})
    journey._done("open 'https://shop.example/'", time.monotonic(), None)
    journey.cut_off("browser run cut off after 60 s")
    result = journey.result(spec(), dt.datetime.now(dt.UTC))
    assert (result.failure, result.error) == (
        Failure.TIMEOUT, f"browser run cut off after 60 s (after open '{START}')",
    )  # fmt: skip
    done = journey_of()
    done._done("open 'https://shop.example/'", time.monotonic(), None)
    done.finished = True
    done.cut_off("browser run cut off after 60 s")
    assert done.result(spec(), dt.datetime.now(dt.UTC)).ok
