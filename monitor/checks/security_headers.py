"""Grade a response's security headers, A+ to F, with one finding per header: the
``security_headers`` assertion (issue 14, point 6) for web agencies that promise their
clients a grade and want to know the day a deploy loses it.

Pure: response headers in (lower-case name -> every value received, the final response's),
a :class:`Report` out. Modelled in spirit on securityheaders.com (which headers) and Mozilla
Observatory (points, weak variants). What is graded is what a browser enforces, so:

- Strict-Transport-Security counts over https only: browsers ignore it on plain http, which
  is a finding, not points (RFC 6797 8.1). Only the first field counts (same section); a
  directive given twice, or no valid ``max-age``, makes browsers ignore the header.
- Frame protection is CSP ``frame-ancestors`` (which makes browsers ignore X-Frame-Options),
  else X-Frame-Options DENY or SAMEORIGIN. Conflicting X-Frame-Options values (``DENY,
  SAMEORIGIN``, a proxy adding its own) make browsers fall back to DENY (HTML standard, "the
  X-Frame-Options header"); ALLOW-FROM and other values are ignored.
- Content-Security-Policy: every field and every comma-separated policy is enforced, so a
  script is allowed only when every policy allows it; a weakness counts when all policies have
  it. Weak: ``'unsafe-inline'`` (without a nonce or hash, which disable it), ``'unsafe-eval'``,
  or a wildcard source (``*``, ``http:``, ``https:``, ``data:``, ``blob:``, a ``*`` host;
  ignored beside ``'strict-dynamic'``) in script-src (else default-src), or no script-src nor
  default-src at all. ``'unsafe-inline'`` in style-src is no weakness (Observatory's rule
  too). Content-Security-Policy-Report-Only enforces nothing and earns nothing.
- X-Content-Type-Options: browsers read its first value only (Fetch, "determine nosniff").
- Referrer-Policy: browsers apply the last value they know (a list is a fallback chain).
- Permissions-Policy: a structured-field dictionary (RFC 8941); one that does not parse
  (Feature-Policy's ``camera 'none'`` syntax, ``('self')``) is ignored by browsers.

Header names are case-insensitive (the caller gives them lower case), and so are values, but
for Permissions-Policy's feature names: RFC 8941 keys are lower case, and browsers ignore a
header with ``Camera=()``.

Points (100 in all) and what earns them:

=========================  ====  ==============================================================
finding                    max   partial
=========================  ====  ==============================================================
Content-Security-Policy    30    10 weak (see above); 0 missing or report-only
Strict-Transport-Security  20    10 max-age under 6 months (15768000 s, Observatory's bar);
                                 0 missing, max-age 0, invalid, or plain http
Frame protection           15    0 missing, ALLOW-FROM, unknown values, frame-ancestors ``*``
Referrer-Policy            15    5 unsafe-url or no-referrer-when-downgrade; 0 missing, unknown
X-Content-Type-Options     10    0 missing, or a first value other than nosniff
Permissions-Policy         10    0 missing, or not parseable
=========================  ====  ==============================================================

Grades: A+ 100 (every finding ok), A >= 90, B >= 75, C >= 60, D >= 40, F below. So a site with
everything but a CSP is a C (70), a plain http site can reach B at best (80), and a bare
nginx default is an F (0).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from monitor.checks.wording import clip, printable, quote

GRADES = ("A+", "A", "B", "C", "D", "F")
Grade = Literal["A+", "A", "B", "C", "D", "F"]
BANDS: tuple[tuple[int, Grade], ...] = ((100, "A+"), (90, "A"), (75, "B"), (60, "C"), (40, "D"))
Status = Literal["ok", "weak", "missing"]

HSTS_MIN_AGE = 15_768_000  # six months, in seconds

CSP = "content-security-policy"
CSP_REPORT_ONLY = "content-security-policy-report-only"
HSTS = "strict-transport-security"
XFO = "x-frame-options"
REFERRER = "referrer-policy"
XCTO = "x-content-type-options"
PERMISSIONS = "permissions-policy"
# What the check must keep of the response (the fetch keeps only the fields asked for).
HEADER_NAMES = frozenset({CSP, CSP_REPORT_ONLY, HSTS, XFO, REFERRER, XCTO, PERMISSIONS})

_REFERRER_POLICIES = frozenset(
    {
        "no-referrer",
        "no-referrer-when-downgrade",
        "same-origin",
        "origin",
        "strict-origin",
        "origin-when-cross-origin",
        "strict-origin-when-cross-origin",
        "unsafe-url",
    }
)
_REFERRER_WEAK = {
    "unsafe-url": "sends the full URL to every site, over http too",
    "no-referrer-when-downgrade": "sends the full URL to every https site",
}
_WILDCARDS = frozenset({"*", "http:", "https:", "data:", "blob:"})
_HASH_OR_NONCE = re.compile(r"^'(nonce-|sha256-|sha384-|sha512-)", re.IGNORECASE)
_SF_KEY = re.compile(r"[a-z*][a-z0-9_.*-]*")
_SF_ITEM = re.compile(r'[A-Za-z*][!#$%&\'*+.^_`|~0-9A-Za-z:/-]*|"(?:[^"\\]|\\[\\"])*"|-?\d+(?:\.\d+)?|\?[01]')
_SF_PARAMS = re.compile(rf"(?:\s*;\s*{_SF_KEY.pattern}(?:=(?:{_SF_ITEM.pattern}))?)*")
# An inner list: items apart by at least one space (RFC 8941 3.1.1). With the space optional,
# "(aaaa...)" followed by a stray quote could be split into items in exponentially many ways
# (a 40-character Permissions-Policy froze the scheduler).
_SF_INNER_ITEM = rf"(?:{_SF_ITEM.pattern}){_SF_PARAMS.pattern}"
_SF_VALUE = re.compile(rf"(?:\(\s*(?:{_SF_INNER_ITEM}(?:\s+{_SF_INNER_ITEM})*)?\s*\)|{_SF_ITEM.pattern})")
_SF_MEMBER = re.compile(rf"\s*({_SF_KEY.pattern})(?:=({_SF_VALUE.pattern}))?{_SF_PARAMS.pattern}\s*")


@dataclass(frozen=True, slots=True)
class Finding:
    name: str  # a header's name, or "Frame protection"
    status: Status
    points: int
    max_points: int
    message: str  # what was found, in words an operator can act on

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "points": self.points,
            "max_points": self.max_points,
            "message": self.message,
        }


@dataclass(frozen=True, slots=True)
class Report:
    grade: Grade
    score: int
    findings: tuple[Finding, ...]

    def problems(self) -> list[str]:
        """The messages of every finding that is not ok, most points lost first."""
        lost = sorted((f for f in self.findings if f.status != "ok"), key=lambda f: f.points - f.max_points)
        return [f.message for f in lost]

    def as_json(self) -> dict[str, Any]:
        return {"grade": self.grade, "score": self.score, "findings": [f.as_json() for f in self.findings]}


def at_least(grade: Grade, minimum: Grade) -> bool:
    """Whether ``grade`` is ``minimum`` or better."""
    return GRADES.index(grade) <= GRADES.index(minimum)


def grade_for(score: int) -> Grade:
    return next((grade for bound, grade in BANDS if score >= bound), "F")


# A rating: status, points, message.
Rating = tuple[Status, int, str]


def grade(headers: Mapping[str, Sequence[str]], *, https: bool) -> Report:
    """The report on ``headers`` (lower-case names, every value of each) of a response that
    came over https (``https``) or plain http."""
    policies = _csp_policies(headers.get(CSP, ()))
    rated = (
        ("Content-Security-Policy", 30, _csp(policies, bool(headers.get(CSP_REPORT_ONLY)))),
        ("Strict-Transport-Security", 20, _hsts(headers.get(HSTS, ()), https)),
        ("Frame protection", 15, _frame(policies, headers.get(XFO, ()))),
        ("Referrer-Policy", 15, _referrer(headers.get(REFERRER, ()))),
        ("X-Content-Type-Options", 10, _nosniff(headers.get(XCTO, ()))),
        ("Permissions-Policy", 10, _permissions(headers.get(PERMISSIONS, ()))),
    )
    findings = tuple(
        Finding(name, status, points, most, message) for name, most, (status, points, message) in rated
    )
    score = sum(f.points for f in findings)
    return Report(grade_for(score), score, findings)


def _split(values: Sequence[str]) -> list[str]:
    """A header's values as browsers list them: every field, split at commas, trimmed."""
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def _twice(values: Sequence[str]) -> str:
    return f" (sent {len(values)} times)" if len(values) > 1 else ""


def _shown(text: str) -> str:
    """Text of the target, unquoted: short and printable."""
    return printable(clip(text), quotes=False)


# -- Content-Security-Policy ----------------------------------------------------------------

Policy = dict[str, list[str]]  # directive name (lower case) -> its sources (lower case)


def _csp_policies(values: Sequence[str]) -> list[Policy]:
    """Every policy of the fields: a directive given twice counts the first time (CSP3)."""
    policies = []
    for text in _split(values):
        policy: Policy = {}
        for directive in text.split(";"):
            words = directive.lower().split()
            if words:
                policy.setdefault(words[0], words[1:])
        if policy:
            policies.append(policy)
    return policies


def _wildcard(source: str) -> bool:
    return source in _WILDCARDS or source.endswith("://*")


def _script_weaknesses(policy: Policy) -> dict[str, str] | None:
    """What lets a script run under ``policy`` (kind -> message); None: it restricts none."""
    directive = "script-src" if "script-src" in policy else "default-src"
    sources = policy.get(directive)
    if sources is None:
        return None
    found = {}
    if "'unsafe-inline'" in sources and not any(_HASH_OR_NONCE.match(s) for s in sources):
        found["inline"] = f"CSP allows 'unsafe-inline' in {directive}"
    if "'unsafe-eval'" in sources:
        found["eval"] = f"CSP allows 'unsafe-eval' in {directive}"
    wild = next((s for s in sources if _wildcard(s)), None)
    if wild is not None and "'strict-dynamic'" not in sources:
        found["wildcard"] = f"CSP allows any source ({_shown(wild)}) in {directive}"
    return found


def _csp(policies: list[Policy], report_only: bool) -> Rating:
    if not policies:
        only = " (Report-Only enforces nothing)" if report_only else ""
        return "missing", 0, f"missing Content-Security-Policy{only}"
    # A script runs only if every policy that restricts scripts allows it.
    each = [w for w in map(_script_weaknesses, policies) if w is not None]
    if not each:
        return "weak", 10, "CSP has no script-src or default-src: scripts are not restricted"
    shared = [kind for kind in each[0] if all(kind in w for w in each[1:])]
    if shared:
        return "weak", 10, "; ".join(each[0][kind] for kind in shared)
    several = f" ({len(policies)} policies, all enforced)" if len(policies) > 1 else ""
    return "ok", 30, f"CSP restricts scripts{several}"


# -- Strict-Transport-Security --------------------------------------------------------------


def _hsts(values: Sequence[str], https: bool) -> Rating:
    if not https:
        if values:
            return "weak", 0, "HSTS sent over plain http, where browsers ignore it"
        return "missing", 0, "plain http: no HSTS (browsers honour it over https only)"
    if not values:
        return "missing", 0, "missing Strict-Transport-Security"
    extra = " (sent with different values; browsers use the first)" if len(set(values)) > 1 else ""
    directives: dict[str, str] = {}
    for part in values[0].split(";"):
        key, _, value = part.partition("=")
        key = key.strip().lower()
        if not key:
            continue
        if key in directives:
            return "weak", 0, f"HSTS repeats {_shown(key)}, so browsers ignore it{extra}"
        directives[key] = value.strip().strip('"')
    age = directives.get("max-age")
    if age is None:
        return "weak", 0, f"HSTS has no max-age, so browsers ignore it{extra}"
    if not age.isascii() or not age.isdigit():
        return "weak", 0, f"HSTS max-age {quote(age)} is not a number, so browsers ignore it{extra}"
    seconds = int(age)
    if seconds == 0:
        return "weak", 0, f"HSTS max-age 0 tells browsers to forget HSTS{extra}"
    if seconds < HSTS_MIN_AGE:
        return "weak", 10, f"HSTS max-age {seconds} is under 6 months ({HSTS_MIN_AGE} s){extra}"
    flags = "".join(f", {flag}" for flag in ("includeSubDomains", "preload") if flag.lower() in directives)
    return "ok", 20, f"HSTS max-age {seconds} ({seconds // 86400} days){flags}{extra}"


# -- frame protection -----------------------------------------------------------------------


def _frame(policies: list[Policy], values: Sequence[str]) -> Rating:
    ancestors = [p["frame-ancestors"] for p in policies if "frame-ancestors" in p]
    if ancestors:
        # Every policy is enforced: one without a wildcard protects.
        tight = next((a for a in ancestors if not any(map(_wildcard, a))), None)
        if tight is None:
            return "weak", 0, "CSP frame-ancestors allows any site to frame the page"
        return "ok", 15, f"CSP frame-ancestors {_shown(' '.join(tight) or repr('none'))}"
    options = {v.lower() for v in _split(values)}
    shown = quote(", ".join(_split(values)))
    if not options:
        return "missing", 0, "X-Frame-Options missing and CSP has no frame-ancestors"
    if len(options) > 1:
        if options & {"deny", "sameorigin", "allowall"}:
            return "ok", 15, f"X-Frame-Options has conflicting values {shown}: browsers fall back to DENY"
        return "weak", 0, f"X-Frame-Options {shown} names no option browsers know, so they ignore it"
    [option] = options
    if option in ("deny", "sameorigin"):
        return "ok", 15, f"X-Frame-Options {option.upper()}{_twice(values)}"
    if option.startswith("allow-from"):
        return "weak", 0, "X-Frame-Options ALLOW-FROM is obsolete and ignored (use CSP frame-ancestors)"
    return "weak", 0, f"X-Frame-Options {shown} is not DENY or SAMEORIGIN: no protection"


# -- Referrer-Policy, X-Content-Type-Options, Permissions-Policy ----------------------------


def _referrer(values: Sequence[str]) -> Rating:
    if not values:
        return "missing", 0, "missing Referrer-Policy"
    known = [t for t in (t.lower() for t in _split(values)) if t in _REFERRER_POLICIES]
    if not known:
        return "weak", 0, f"Referrer-Policy {quote(', '.join(values))} names no policy browsers know"
    policy = known[-1]
    chain = f" (the last of {len(known)} policies given)" if len(known) > 1 else ""
    if policy in _REFERRER_WEAK:
        return "weak", 5, f"Referrer-Policy {policy}{chain} {_REFERRER_WEAK[policy]}"
    return "ok", 15, f"Referrer-Policy {policy}{chain}"


def _nosniff(values: Sequence[str]) -> Rating:
    if not values:
        return "missing", 0, "missing X-Content-Type-Options"
    tokens = _split(values)
    if tokens and tokens[0].lower() == "nosniff":
        return "ok", 10, f"X-Content-Type-Options nosniff{_twice(values)}"
    shown = quote(", ".join(values))
    return "weak", 0, f"X-Content-Type-Options is {shown}, not nosniff (browsers read the first value)"


def _permissions(values: Sequence[str]) -> Rating:
    if not values:
        return "missing", 0, "missing Permissions-Policy"
    features = _sf_keys(", ".join(values))
    if features is None:
        shown = quote(", ".join(values), 40)
        return "weak", 0, f"Permissions-Policy {shown} does not parse, so browsers ignore it"
    count = len(features)
    return "ok", 10, f"Permissions-Policy sets {count} feature{'s' if count != 1 else ''}"


def _sf_keys(text: str) -> set[str] | None:
    """The keys of an RFC 8941 dictionary, or None if ``text`` is not one or is empty."""
    keys: set[str] = set()
    at = 0
    while True:
        member = _SF_MEMBER.match(text, at)
        if member is None:
            return None
        keys.add(member.group(1))
        at = member.end()
        if at == len(text):
            return keys or None
        if text[at] != ",":
            return None
        at += 1
