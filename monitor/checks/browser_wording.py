"""What a journey's failures say: Playwright's and Chromium's messages reduced to what a person
needs, the failing step in the cause, the document's refusal named, secrets kept out.

Playwright's errors are long (``Locator.click: Timeout 5000ms exceeded.\\nCall log:\\n  -
waiting for locator("#buy")\\n  - locator resolved to <button ...>\\n  - attempting click
action\\n  - element is not visible\\n  - retrying ...``, several KiB after a few retries); a
cause keeps one clause of them (``the element is not visible``), and Chromium's network
errors read as words (``net::ERR_CONNECTION_REFUSED`` is ``connection refused``). A cause is
``step 3 click '#buy': no element matches within 5 s``: the step's number from 1 (its place in
``steps``), its name, what went wrong; the start page's load reads ``open 'https://...':
answered 503``. Everything is clipped (``CAUSE_CHARS``) and made printable, and every secret
fill value (and its URL-encoded form) is masked wherever it would appear: a form sent with
GET puts a password in the URL the next step reports.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import quote, quote_plus

from yarl import URL

from monitor.net.client import clip_error
from monitor.secrets import MASK

CAUSE_CHARS = 500  # of a cause (a result's error)
STEP_ERROR_CHARS = 200  # of one step's error in details
REFUSALS_KEPT = 20  # of the run's refusals in details
LINE_CHARS = 120  # of a Playwright message's first line, when no clause of ours fits

# Chromium's net errors that a person reads better as words; others keep their code.
NET_ERRORS = {
    "ERR_CONNECTION_REFUSED": "connection refused",
    "ERR_CONNECTION_RESET": "connection reset",
    "ERR_CONNECTION_CLOSED": "connection closed without an answer",
    "ERR_CONNECTION_TIMED_OUT": "connection timed out",
    "ERR_TIMED_OUT": "timed out",
    "ERR_NAME_NOT_RESOLVED": "name not resolved",
    "ERR_ADDRESS_UNREACHABLE": "address unreachable",
    "ERR_INTERNET_DISCONNECTED": "no network",
    "ERR_TUNNEL_CONNECTION_FAILED": "the connection was refused by the vetting proxy",
    "ERR_PROXY_CONNECTION_FAILED": "the vetting proxy could not be reached",
    "ERR_EMPTY_RESPONSE": "empty answer",
    "ERR_TOO_MANY_REDIRECTS": "too many redirects",
    "ERR_CERT_AUTHORITY_INVALID": "TLS certificate error: not issued by a trusted authority",
    "ERR_CERT_COMMON_NAME_INVALID": "TLS certificate error: not valid for this name",
    "ERR_CERT_DATE_INVALID": "TLS certificate error: expired or not yet valid",
    "ERR_SSL_PROTOCOL_ERROR": "TLS error",
    "ERR_BLOCKED_BY_CLIENT": "blocked",
    "ERR_UNSAFE_PORT": "port not allowed by the browser",
    "ERR_ABORTED": "navigation aborted",
    "ERR_INVALID_RESPONSE": "invalid answer",
    "ERR_HTTP2_PROTOCOL_ERROR": "HTTP/2 protocol error",
}
_NET = re.compile(r"net::(ERR_[A-Z0-9_]+)")
# What kept an action from happening, as Playwright's call log says it (the last one counts).
_BLOCKING = re.compile(
    r"^\s*-\s*(element is not (?:visible|enabled|stable|editable|attached)"
    r"|element is outside of the viewport"
    r"|<[^>]{1,80}> (?:from <[^>]{1,80}> subtree )?intercepts pointer events"
    r"|element is not an <input>, <textarea>, <select> or \[contenteditable\].*)",
    re.MULTILINE,
)
_API_PREFIX = re.compile(r"^[A-Za-z]+\.[A-Za-z_]+: ")
_CLOSED = ("has been closed", "Target closed", "Browser closed", "browser has disconnected")


def seconds(value: float) -> str:
    """A timeout as a cause says it: ``5 s``, ``2.5 s``."""
    return f"{value:.1f}".removesuffix(".0") + " s"


def first_line(message: str) -> str:
    """A Playwright message's first line without its API prefix (``Locator.click: ``)."""
    line = message.strip().split("\n", 1)[0]
    return clip_error(_API_PREFIX.sub("", line), LINE_CHARS)


def net_error(message: str) -> str | None:
    """Chromium's network error in a message, in words (``connection refused``), or None."""
    found = _NET.search(message)
    if found is None:
        return None
    return NET_ERRORS.get(found.group(1), found.group(1))


def blocking(message: str) -> str | None:
    """The last reason Playwright's call log gives for not acting on an element, or None."""
    found = _BLOCKING.findall(message)
    return clip_error(found[-1], LINE_CHARS) if found else None


def closed(message: str) -> bool:
    """Whether a Playwright error says the page or the browser went away."""
    return any(part in message for part in _CLOSED)


def reduced(message: str) -> str:
    """Any other Playwright error as a cause says it."""
    if closed(message):
        return "the browser ended (the run's time limit or memory cap)"
    return net_error(message) or blocking(message) or first_line(message)


def cause(number: int, name: str, error: str) -> str:
    """The cause of a failed journey: ``step 3 click '#buy': ...``; number 0 is the start page."""
    said = f"{name}: {error}" if number == 0 else f"step {number} {name}: {error}"
    return clip_error(said, CAUSE_CHARS)


def document_refusal(url: str, refusals: Iterable[str]) -> str | None:
    """The vetting proxy's refusal of the page ``url`` itself (its host named in one), or None."""
    host = URL(url).raw_host or ""
    if not host:
        return None
    bracketed = f"[{host}]"
    for refusal in refusals:
        if host in refusal or bracketed in refusal:
            return clip_error(refusal, STEP_ERROR_CHARS)
    return None


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret (as typed, and URL-encoded as a form sends it) masked."""
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        for form in {secret, quote_plus(secret), quote(secret, safe="")}:
            text = text.replace(form, MASK)
    return text
