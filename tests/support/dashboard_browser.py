"""The dashboard in a real browser: signing in through the form, and a tour of pages at a
phone's and a wide screen's width in both colour schemes (no sideways scroll, axe-core clean,
a screenshot each).

Selenium blocks: an async test calls these in a thread (``asyncio.to_thread``), so the servers
on its event loop (the target, the fake channels) keep answering.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast
from urllib.parse import urlsplit

from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.select import Select

from . import axe
from .browser import Browser, Scheme
from .people import COOKIE

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / ".state" / "screenshots"
# (width, colour scheme): a phone and a wide screen, each in both schemes.
LOOKS: list[tuple[int, Scheme]] = [(360, "light"), (360, "dark"), (1280, "light"), (1280, "dark")]


def path_of(browser: Browser) -> str:
    parts = urlsplit(browser.driver.current_url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


# The visible elements matching arguments[0], and their text, read at one instant (so a live
# update that replaces them between two reads cannot leave a stale reference).
VISIBLE = """
return [...document.querySelectorAll(arguments[0])]
  .filter((e) => e.getClientRects().length && getComputedStyle(e).visibility !== "hidden")
  .map((e) => [e, e.innerText.trim()]);
"""


def texts(browser: Browser, selector: str) -> list[str]:
    """The texts of the visible elements matching ``selector``."""
    return [text for _element, text in browser.script(VISIBLE, selector)]


def heading(browser: Browser) -> str:
    found = texts(browser, "h1")
    return found[0] if found else ""


def row_state(browser: Browser, monitor_id: int) -> str:
    """The state the overview's row of a monitor says ("Up", "Down"...); "" without the row."""
    found = browser.script(
        "const a = document.querySelector(`main a[href='/monitors/${arguments[0]}']`);"
        "const tr = a && a.closest('tr'); const st = tr && tr.querySelector('.state');"
        "return st ? st.textContent.trim() : null",
        monitor_id,
    )
    return str(found or "")


def errors_shown(browser: Browser) -> list[str]:
    """The error messages the page shows (a form's, next to their fields)."""
    return [t for t in texts(browser, ".error-text") if t]


def wait_for_path(browser: Browser, pattern: str, *, timeout: float = 10.0) -> str:
    """Wait until the page's path (without its query) matches the regular expression
    ``pattern``; the path. A failure names the errors the page shows."""
    try:
        return browser.wait_until(
            lambda b: p if re.fullmatch(pattern, p := urlsplit(b.driver.current_url).path) else None,
            timeout=timeout,
            message=f"a page at {pattern}",
        )
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the page shows {errors_shown(browser)}") from None


def type_into(browser: Browser, selector: str, text: str) -> None:
    """Click a field, empty it and type ``text`` as a person would."""
    element = browser.wait_for_element(selector)
    element.click()
    element.clear()
    element.send_keys(text)


# Shows the field named arguments[0]: opens the <details> it is folded in, if any.
UNFOLD = """
const el = document.getElementsByName(arguments[0])[0];
if (!el) return false;
for (let d = el.closest("details"); d; d = d.parentElement.closest("details")) d.open = true;
el.scrollIntoView({block: "center"});
return true;
"""


def form_field(browser: Browser, name: str, value: str | None = None) -> WebElement:
    """The form field named ``name`` (its ``value`` one of a group of checkboxes), unfolded."""
    assert browser.script(UNFOLD, name), f"no field {name!r} on {path_of(browser)}"
    selector = f'[name="{name}"]' + (f'[value="{value}"]' if value is not None else "")
    return browser.wait_for_element(selector)


def fill(browser: Browser, name: str, text: str) -> None:
    """Type ``text`` into the field named ``name`` (a select: choose the option of that value)."""
    element = form_field(browser, name)
    if element.tag_name == "select":
        Select(element).select_by_value(text)
        return
    element.click()
    element.clear()
    element.send_keys(text)


def tick(browser: Browser, name: str, value: str) -> None:
    """Tick the checkbox ``name`` of ``value`` (left ticked if it is)."""
    box = form_field(browser, name, value)
    if not box.is_selected():
        box.click()


def press(browser: Browser, text: str, scope: str = "main") -> None:
    """Click the button (or link styled as one) inside ``scope`` whose text is ``text``."""

    def found(b: Browser) -> WebElement | None:
        for element, shown in b.script(VISIBLE, f"{scope} button, {scope} a"):
            if shown == text:
                return cast(WebElement, element)
        return None

    for _attempt in range(3):  # a live update may replace the button between finding and clicking
        element = browser.wait_until(found, message=f"a button {text!r} on {path_of(browser)}")
        try:
            browser.script("arguments[0].scrollIntoView({block: 'center'})", element)
            element.click()
            return
        except StaleElementReferenceException:
            continue
    raise AssertionError(f"the button {text!r} on {path_of(browser)} kept being replaced")


def sign_out(browser: Browser) -> None:
    """Forget the session (the cookies), as closing a private window does."""
    browser.driver.delete_all_cookies()


def sign_in(browser: Browser, base_url: str, email: str, password: str, *, width: int = 1280) -> None:
    """Through the sign-in form: type the e-mail and password, press the button, land on the
    overview."""
    sign_out(browser)
    browser.open(base_url + "/signin", width=width)
    type_into(browser, "#email", email)
    type_into(browser, "#password", password)
    browser.driver.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
    browser.wait_until(
        lambda b: path_of(b) == "/" and heading(b) == "Monitors",
        message=f"the overview after signing in as {email}",
    )


def session_cookie(browser: Browser) -> str:
    """The browser's session id (WebDriver reads HttpOnly cookies too), for a client beside it."""
    cookie = browser.driver.get_cookie(COOKIE)
    assert cookie is not None, "the browser holds no session cookie"
    return str(cookie["value"])


def csrf_token(browser: Browser) -> str:
    """The page's CSRF token, as its forms and htmx send it."""
    token = browser.script("const m = document.querySelector('meta[name=csrf-token]'); return m && m.content")
    assert token, f"no CSRF token on {path_of(browser)}"
    return str(token)


def forged_post(browser: Browser, path: str, form: dict[str, str]) -> int:
    """A form post sent by script from the open page (its cookie, its Origin, the page's CSRF
    token): what a person who edits the page could send. The answer's status."""
    source = """
    const [path, form, done] = arguments;
    fetch(path, {method: "POST", body: new URLSearchParams(form), redirect: "manual",
                 credentials: "same-origin"}).then((r) => done(r.status), (e) => done(String(e)));
    """
    status = browser.driver.execute_async_script(source, path, {**form, "csrf": csrf_token(browser)})
    assert isinstance(status, int), f"the forged post to {path} failed: {status}"
    return status


def forged_api_call(browser: Browser, method: str, path: str) -> int:
    """A JSON API call from the open page with its session cookie and CSRF header."""
    source = """
    const [method, path, token, done] = arguments;
    fetch(path, {method, headers: {"X-CSRF-Token": token}, credentials: "same-origin"})
      .then((r) => done(r.status), (e) => done(String(e)));
    """
    status = browser.driver.execute_async_script(source, method, path, csrf_token(browser))
    assert isinstance(status, int), f"the forged {method} {path} failed: {status}"
    return status


@dataclass(frozen=True)
class Shot:
    """One look at one page."""

    page: str
    width: int
    scheme: Scheme
    path: Path
    minor: list[str]  # axe's violations of lesser impact, by rule id (reported, not failed)


@dataclass
class Tour:
    shots: list[Shot] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


SCROLL = "return [document.documentElement.scrollWidth, window.innerWidth]"
# The innermost elements reaching past arguments[0] px: what makes a page wider than the screen.
OVERFLOWING = """
const limit = arguments[0], found = [];
for (const el of document.body.querySelectorAll("*")) {
  if (el.getBoundingClientRect().right <= limit + 1) continue;
  if ([...el.children].some((c) => c.getBoundingClientRect().right > limit + 1)) continue;
  let clipped = false;  // inside a box that scrolls or clips, itself within the screen
  for (let a = el.parentElement; a && a !== document.body && !clipped; a = a.parentElement) {
    clipped = getComputedStyle(a).overflowX !== "visible" && a.getBoundingClientRect().right <= limit + 1;
  }
  if (clipped) continue;
  const id = el.id ? "#" + el.id : "";
  const cls = el.classList.length ? "." + [...el.classList].join(".") : "";
  const right = Math.round(el.getBoundingClientRect().right);
  found.push(el.tagName.toLowerCase() + id + cls + " (" + right + " px)");
  if (found.length === 4) break;
}
return found.join(", ");
"""


def look(browser: Browser, base_url: str, name: str, path: str, tour: Tour) -> None:
    """``path`` at each of ``LOOKS``: no sideways scroll at any width, no serious or critical
    axe violation, a screenshot ``dashboard-<name>-<width>-<scheme>.png``; problems collected."""
    for width, scheme in LOOKS:
        where = f"{name} ({path}) at {width} px {scheme}"
        try:
            browser.open(base_url + path, width=width, scheme=scheme, mobile=width < 600)
        except AssertionError:
            pass  # a phone widened its layout viewport to fit what overflows: _inspect says so
        browser.wait_for_element("main")
        landed = urlsplit(browser.driver.current_url).path
        if landed != urlsplit(path).path:
            tour.problems.append(f"{where}: landed on {landed}")
        _inspect(browser, name, where, width, scheme, tour)


def look_here(browser: Browser, name: str, tour: Tour) -> None:
    """The page the browser shows (one a form's post answered: no address to open again) at
    each of ``LOOKS``, as ``look`` does: the viewport and scheme change, the document stays."""
    where = f"{name} ({path_of(browser)})"
    for width, scheme in LOOKS:
        browser.driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": 800, "deviceScaleFactor": 1, "mobile": width < 600},
        )
        browser.driver.execute_cdp_cmd(
            "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]}
        )
        _inspect(browser, name, f"{where} at {width} px {scheme}", width, scheme, tour)


def _inspect(browser: Browser, name: str, where: str, width: int, scheme: Scheme, tour: Tour) -> None:
    scroll_width, inner_width = browser.script(SCROLL)
    if inner_width != width:  # a phone widens its layout viewport to fit what overflows
        what = browser.script(OVERFLOWING, width)
        tour.problems.append(f"{where}: lays out {inner_width} px wide; reaching past {width} px: {what}")
    elif scroll_width > inner_width:
        what = browser.script(OVERFLOWING, inner_width)
        tour.problems.append(f"{where}: scrolls sideways ({scroll_width} px in {inner_width}): {what}")
    found = axe.run(browser)
    tour.problems += [f"{where}: axe {v.describe()}" for v in axe.serious(found)]
    shot = browser.screenshot(SCREENSHOTS, f"dashboard-{name}-{width}-{scheme}.png")
    minor = [f"{v.id} ({v.impact})" for v in found if v.impact not in axe.FAILING]
    tour.shots.append(Shot(name, width, scheme, shot, minor))
