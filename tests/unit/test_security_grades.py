"""The security headers grade: real-world header sets graded as a whole, then each finding's
rules row by row, then the ``security_headers`` assertion that fails below a chosen grade.

A header set is a list of (name, value) fields as a server sends them; ``fields()`` makes it
what the check observes (lower-case names, every value in order).
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from monitor.checks import security_headers as sh
from monitor.checks.assertions import ASSERTIONS, Judge, Observed

Fields = list[tuple[str, str]]


def fields(pairs: Fields) -> dict[str, tuple[str, ...]]:
    seen: dict[str, tuple[str, ...]] = {}
    for name, value in pairs:
        seen[name.lower()] = (*seen.get(name.lower(), ()), value)
    return seen


# github.com's headers (2024), abridged: what a strong set looks like.
GITHUB: Fields = [
    ("Strict-Transport-Security", "max-age=31536000; includeSubdomains; preload"),
    ("X-Frame-Options", "deny"),
    ("X-Content-Type-Options", "nosniff"),
    ("X-XSS-Protection", "0"),
    ("Referrer-Policy", "origin-when-cross-origin, strict-origin-when-cross-origin"),
    ("Content-Security-Policy", "default-src 'none'; base-uri 'self'; connect-src 'self' api.github.com; "
     "font-src github.githubassets.com; form-action 'self' github.com; frame-ancestors 'none'; "
     "img-src 'self' data: github.githubassets.com; script-src github.githubassets.com; "
     "style-src 'unsafe-inline' github.githubassets.com; upgrade-insecure-requests"),
    ("Permissions-Policy", "interest-cohort=()"),
]  # fmt: skip
# Express with helmet 7's defaults: no Permissions-Policy.
HELMET: Fields = [
    ("Content-Security-Policy", "default-src 'self';base-uri 'self';font-src 'self' https: data:;"
     "form-action 'self';frame-ancestors 'self';img-src 'self' data:;object-src 'none';"
     "script-src 'self';script-src-attr 'none';style-src 'self' https: 'unsafe-inline';"
     "upgrade-insecure-requests"),
    ("Cross-Origin-Opener-Policy", "same-origin"),
    ("Referrer-Policy", "no-referrer"),
    ("Strict-Transport-Security", "max-age=31536000; includeSubDomains"),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "SAMEORIGIN"),
]  # fmt: skip
# nginx's welcome page: no security header at all.
NGINX: Fields = [("Server", "nginx/1.25.3"), ("Content-Type", "text/html"), ("ETag", '"6537cac7-267"')]
# A search engine's home page: CSP in report-only mode, framing limited, nothing else.
REPORT_ONLY: Fields = [
    ("Content-Security-Policy-Report-Only", "object-src 'none';base-uri 'self';script-src 'nonce-x' "
     "'strict-dynamic' 'report-sample' 'unsafe-eval' 'unsafe-inline' https: http:;report-uri /csp"),
    ("X-XSS-Protection", "0"),
    ("X-Frame-Options", "SAMEORIGIN"),
]  # fmt: skip
# A CMS with a security plugin: a short HSTS, no CSP, no Permissions-Policy.
CMS: Fields = [
    ("Strict-Transport-Security", "max-age=300"),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "SAMEORIGIN"),
    ("Referrer-Policy", "strict-origin-when-cross-origin"),
]


def without(pairs: Fields, name: str) -> Fields:
    return [(n, v) for n, v in pairs if n.lower() != name.lower()]


def replaced(pairs: Fields, name: str, value: str) -> Fields:
    return [*without(pairs, name), (name, value)]


# (id, fields, https, grade, score)
SETS = [
    ("github over https", GITHUB, True, "A+", 100),
    ("github over plain http: HSTS ignored", GITHUB, False, "B", 80),
    ("helmet 7 defaults", HELMET, True, "A", 90),
    ("bare nginx", NGINX, True, "F", 0),
    ("bare nginx over http", NGINX, False, "F", 0),
    ("report-only CSP and SAMEORIGIN", REPORT_ONLY, True, "F", 15),
    ("CMS with a short HSTS", CMS, True, "D", 50),
    ("strong but no CSP", without(GITHUB, "Content-Security-Policy"), True, "C", 70),
    ("strong but CSP with unsafe-inline", replaced(GITHUB, "Content-Security-Policy",
     "default-src 'self' 'unsafe-inline'; frame-ancestors 'none'"), True, "B", 80),
    ("strong but Referrer-Policy unsafe-url", replaced(GITHUB, "Referrer-Policy", "unsafe-url"), True,
     "A", 90),
    ("strong but HSTS max-age 300", replaced(GITHUB, "Strict-Transport-Security", "max-age=300"), True,
     "A", 90),
    ("strong but no Permissions-Policy", without(GITHUB, "Permissions-Policy"), True, "A", 90),
    ("names and values in capitals", [(n.upper(), v.upper()) for n, v in GITHUB], True, "A", 90),
]  # fmt: skip


@pytest.mark.parametrize(
    ("pairs", "https", "grade", "score"), [s[1:] for s in SETS], ids=[s[0] for s in SETS]
)
def test_real_world_sets(pairs: Fields, https: bool, grade: str, score: int) -> None:
    report = sh.grade(fields(pairs), https=https)
    assert (report.grade, report.score) == (grade, score), report.problems()
    assert [f.name for f in report.findings] == [
        "Content-Security-Policy",
        "Strict-Transport-Security",
        "Frame protection",
        "Referrer-Policy",
        "X-Content-Type-Options",
        "Permissions-Policy",
    ]
    assert sum(f.max_points for f in report.findings) == 100


def test_capitals_lose_only_the_permissions_policy() -> None:
    """Every header and value is read in any case, but a Permissions-Policy feature name,
    which RFC 8941 wants in lower case: browsers ignore ``INTEREST-COHORT=()``."""
    report = sh.grade(fields([(n.upper(), v.upper()) for n, v in GITHUB]), https=True)
    assert [(f.name, f.status) for f in report.findings if f.status != "ok"] == [
        ("Permissions-Policy", "weak")
    ]


CSP = "Content-Security-Policy"
HSTS = "Strict-Transport-Security"
FRAME = "Frame protection"
REFERRER = "Referrer-Policy"
XCTO = "X-Content-Type-Options"
PERMISSIONS = "Permissions-Policy"

# (id, fields, https, finding, status, points, message)
FINDINGS: list[tuple[str, Fields, bool, str, str, int, str]] = [
    # -- Content-Security-Policy
    ("csp self", [(CSP, "default-src 'self'")], True, CSP, "ok", 30, "CSP restricts scripts"),
    ("csp missing", [], True, CSP, "missing", 0, "missing Content-Security-Policy"),
    ("csp empty", [(CSP, "  ")], True, CSP, "missing", 0, "missing Content-Security-Policy"),
    ("csp report-only only", [(CSP + "-Report-Only", "default-src 'self'")], True, CSP, "missing", 0,
     "missing Content-Security-Policy (Report-Only enforces nothing)"),
    ("unsafe-inline in script-src", [(CSP, "default-src 'self'; script-src 'self' 'unsafe-inline'")], True,
     CSP, "weak", 10, "CSP allows 'unsafe-inline' in script-src"),
    ("unsafe-inline in default-src", [(CSP, "default-src 'self' 'unsafe-inline'")], True,
     CSP, "weak", 10, "CSP allows 'unsafe-inline' in default-src"),
    ("unsafe-inline beside a nonce is ignored", [(CSP, "script-src 'nonce-r4nd0m' 'unsafe-inline'")], True,
     CSP, "ok", 30, "CSP restricts scripts"),
    ("unsafe-inline beside a hash is ignored", [(CSP, "script-src 'sha256-AbCd=' 'unsafe-inline'")], True,
     CSP, "ok", 30, "CSP restricts scripts"),
    ("unsafe-eval", [(CSP, "script-src 'self' 'unsafe-eval'")], True,
     CSP, "weak", 10, "CSP allows 'unsafe-eval' in script-src"),
    ("unsafe-eval in capitals", [(CSP, "Script-Src 'SELF' 'UNSAFE-EVAL'")], True,
     CSP, "weak", 10, "CSP allows 'unsafe-eval' in script-src"),
    ("inline and eval", [(CSP, "script-src 'unsafe-inline' 'unsafe-eval'")], True, CSP, "weak", 10,
     "CSP allows 'unsafe-inline' in script-src; CSP allows 'unsafe-eval' in script-src"),
    ("wildcard default-src", [(CSP, "default-src *")], True, CSP, "weak", 10,
     "CSP allows any source (*) in default-src"),
    ("https: scheme", [(CSP, "default-src 'self'; script-src https:")], True, CSP, "weak", 10,
     "CSP allows any source (https:) in script-src"),
    ("data: scheme", [(CSP, "script-src 'self' data:")], True, CSP, "weak", 10,
     "CSP allows any source (data:) in script-src"),
    ("any host", [(CSP, "script-src https://*")], True, CSP, "weak", 10,
     "CSP allows any source (https://*) in script-src"),
    ("subdomains of one site", [(CSP, "script-src https://*.example.com")], True, CSP, "ok", 30,
     "CSP restricts scripts"),
    ("strict-dynamic ignores hosts and schemes", [(CSP, "object-src 'none'; script-src 'nonce-r4nd0m' "
     "'strict-dynamic' 'unsafe-inline' https: http:")], True, CSP, "ok", 30, "CSP restricts scripts"),
    ("unsafe-inline in style-src only", [(CSP, "default-src 'self'; style-src 'self' 'unsafe-inline'")], True,
     CSP, "ok", 30, "CSP restricts scripts"),
    ("no script-src nor default-src", [(CSP, "frame-ancestors 'none'; upgrade-insecure-requests")], True,
     CSP, "weak", 10, "CSP has no script-src or default-src: scripts are not restricted"),
    ("directive repeated: the first counts", [(CSP, "script-src 'self'; script-src 'unsafe-inline'")], True,
     CSP, "ok", 30, "CSP restricts scripts"),
    ("two fields: the second restricts", [(CSP, "frame-ancestors 'none'"), (CSP, "default-src 'self'")], True,
     CSP, "ok", 30, "CSP restricts scripts (2 policies, all enforced)"),
    ("two policies in one field: one forbids inline", [(CSP, "default-src 'self' 'unsafe-inline', "
     "script-src 'self'")], True, CSP, "ok", 30, "CSP restricts scripts (2 policies, all enforced)"),
    ("two policies, both inline", [(CSP, "script-src 'unsafe-inline' 'self'"),
     (CSP, "default-src * 'unsafe-inline'")], True, CSP, "weak", 10,
     "CSP allows 'unsafe-inline' in script-src"),
    # -- Strict-Transport-Security
    ("hsts a year", [(HSTS, "max-age=31536000; includeSubDomains; preload")], True, HSTS, "ok", 20,
     "HSTS max-age 31536000 (365 days), includeSubDomains, preload"),
    ("hsts six months exactly", [(HSTS, "max-age=15768000")], True, HSTS, "ok", 20,
     "HSTS max-age 15768000 (182 days)"),
    ("hsts in capitals, quoted", [(HSTS, 'MAX-AGE="31536000"; INCLUDESUBDOMAINS')], True, HSTS, "ok", 20,
     "HSTS max-age 31536000 (365 days), includeSubDomains"),
    ("hsts short", [(HSTS, "max-age=300")], True, HSTS, "weak", 10,
     "HSTS max-age 300 is under 6 months (15768000 s)"),
    ("hsts zero", [(HSTS, "max-age=0")], True, HSTS, "weak", 0,
     "HSTS max-age 0 tells browsers to forget HSTS"),
    ("hsts without max-age", [(HSTS, "includeSubDomains")], True, HSTS, "weak", 0,
     "HSTS has no max-age, so browsers ignore it"),
    ("hsts max-age not a number", [(HSTS, "max-age=1y")], True, HSTS, "weak", 0,
     'HSTS max-age "1y" is not a number, so browsers ignore it'),
    ("hsts directive twice", [(HSTS, "max-age=31536000; max-age=300")], True, HSTS, "weak", 0,
     "HSTS repeats max-age, so browsers ignore it"),
    ("hsts two fields: the first counts", [(HSTS, "max-age=300"), (HSTS, "max-age=31536000")], True,
     HSTS, "weak", 10,
     "HSTS max-age 300 is under 6 months (15768000 s) (sent with different values; browsers use the first)"),
    ("hsts two same fields", [(HSTS, "max-age=31536000"), (HSTS, "max-age=31536000")], True, HSTS, "ok", 20,
     "HSTS max-age 31536000 (365 days)"),
    ("hsts missing", [], True, HSTS, "missing", 0, "missing Strict-Transport-Security"),
    ("hsts over plain http", [(HSTS, "max-age=31536000")], False, HSTS, "weak", 0,
     "HSTS sent over plain http, where browsers ignore it"),
    ("no hsts over plain http", [], False, HSTS, "missing", 0,
     "plain http: no HSTS (browsers honour it over https only)"),
    # -- frame protection
    ("xfo deny", [("X-Frame-Options", "DENY")], True, FRAME, "ok", 15, "X-Frame-Options DENY"),
    ("xfo sameorigin lower case", [("X-Frame-Options", "sameorigin")], True, FRAME, "ok", 15,
     "X-Frame-Options SAMEORIGIN"),
    ("xfo sent twice", [("X-Frame-Options", "SAMEORIGIN"), ("X-Frame-Options", "SAMEORIGIN")], True,
     FRAME, "ok", 15, "X-Frame-Options SAMEORIGIN (sent 2 times)"),
    ("xfo conflicting", [("X-Frame-Options", "DENY"), ("X-Frame-Options", "SAMEORIGIN")], True,
     FRAME, "ok", 15,
     'X-Frame-Options has conflicting values "DENY, SAMEORIGIN": browsers fall back to DENY'),
    ("xfo allow-from", [("X-Frame-Options", "ALLOW-FROM https://partner.example")], True, FRAME, "weak", 0,
     "X-Frame-Options ALLOW-FROM is obsolete and ignored (use CSP frame-ancestors)"),
    ("xfo allowall", [("X-Frame-Options", "ALLOWALL")], True, FRAME, "weak", 0,
     'X-Frame-Options "ALLOWALL" is not DENY or SAMEORIGIN: no protection'),
    ("xfo nonsense twice", [("X-Frame-Options", "yes, please")], True, FRAME, "weak", 0,
     'X-Frame-Options "yes, please" names no option browsers know, so they ignore it'),
    ("neither", [(CSP, "default-src 'self'")], True, FRAME, "missing", 0,
     "X-Frame-Options missing and CSP has no frame-ancestors"),
    ("frame-ancestors none", [(CSP, "frame-ancestors 'none'")], True, FRAME, "ok", 15,
     "CSP frame-ancestors 'none'"),
    ("frame-ancestors empty is none", [(CSP, "default-src 'self'; frame-ancestors")], True, FRAME, "ok", 15,
     "CSP frame-ancestors 'none'"),
    ("frame-ancestors overrides ALLOWALL", [(CSP, "frame-ancestors 'self' https://partner.example"),
     ("X-Frame-Options", "ALLOWALL")], True, FRAME, "ok", 15,
     "CSP frame-ancestors 'self' https://partner.example"),
    ("frame-ancestors * overrides DENY", [(CSP, "frame-ancestors *"), ("X-Frame-Options", "DENY")], True,
     FRAME, "weak", 0, "CSP frame-ancestors allows any site to frame the page"),
    # -- Referrer-Policy
    ("referrer strict", [(REFERRER, "strict-origin-when-cross-origin")], True, REFERRER, "ok", 15,
     "Referrer-Policy strict-origin-when-cross-origin"),
    ("referrer no-referrer in capitals", [(REFERRER, "No-Referrer")], True, REFERRER, "ok", 15,
     "Referrer-Policy no-referrer"),
    ("referrer unsafe-url", [(REFERRER, "unsafe-url")], True, REFERRER, "weak", 5,
     "Referrer-Policy unsafe-url sends the full URL to every site, over http too"),
    ("referrer downgrade", [(REFERRER, "no-referrer-when-downgrade")], True, REFERRER, "weak", 5,
     "Referrer-Policy no-referrer-when-downgrade sends the full URL to every https site"),
    ("referrer: the last known counts", [(REFERRER, "no-referrer"), (REFERRER, "unsafe-url")], True,
     REFERRER, "weak", 5,
     "Referrer-Policy unsafe-url (the last of 2 policies given) sends the full URL to every site, "
     "over http too"),
    ("referrer fallback chain", [(REFERRER, "unsafe-url, strict-origin-when-cross-origin")], True, REFERRER,
     "ok", 15, "Referrer-Policy strict-origin-when-cross-origin (the last of 2 policies given)"),
    ("referrer unknown token skipped", [(REFERRER, "strict-origin, no-leaks-please")], True,
     REFERRER, "ok", 15,
     "Referrer-Policy strict-origin"),
    ("referrer unknown", [(REFERRER, "private")], True, REFERRER, "weak", 0,
     'Referrer-Policy "private" names no policy browsers know'),
    ("referrer missing", [], True, REFERRER, "missing", 0, "missing Referrer-Policy"),
    # -- X-Content-Type-Options
    ("nosniff", [(XCTO, "nosniff")], True, XCTO, "ok", 10, "X-Content-Type-Options nosniff"),
    ("nosniff capitals, twice", [(XCTO, "NoSniff"), (XCTO, "nosniff")], True, XCTO, "ok", 10,
     "X-Content-Type-Options nosniff (sent 2 times)"),
    ("sniff", [(XCTO, "sniff")], True, XCTO, "weak", 0,
     'X-Content-Type-Options is "sniff", not nosniff (browsers read the first value)'),
    ("nosniff second", [(XCTO, "none, nosniff")], True, XCTO, "weak", 0,
     'X-Content-Type-Options is "none, nosniff", not nosniff (browsers read the first value)'),
    ("xcto missing", [], True, XCTO, "missing", 0, "missing X-Content-Type-Options"),
    # -- Permissions-Policy
    ("permissions two", [(PERMISSIONS, 'geolocation=(), camera=(self "https://a.example")')], True,
     PERMISSIONS, "ok", 10, "Permissions-Policy sets 2 features"),
    ("permissions two fields", [(PERMISSIONS, "camera=()"), (PERMISSIONS, "microphone=*")], True,
     PERMISSIONS, "ok", 10, "Permissions-Policy sets 2 features"),
    ("permissions Feature-Policy syntax", [(PERMISSIONS, "camera 'none'; microphone 'none'")], True,
     PERMISSIONS, "weak", 0,
     "Permissions-Policy \"camera 'none'; microphone 'none'\" does not parse, so browsers ignore it"),
    ("permissions quoted self", [(PERMISSIONS, "camera=('self')")], True, PERMISSIONS, "weak", 0,
     "Permissions-Policy \"camera=('self')\" does not parse, so browsers ignore it"),
    ("permissions trailing comma", [(PERMISSIONS, "camera=(), ")], True, PERMISSIONS, "weak", 0,
     'Permissions-Policy "camera=(), " does not parse, so browsers ignore it'),
    ("permissions missing", [], True, PERMISSIONS, "missing", 0, "missing Permissions-Policy"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("pairs", "https", "name", "status", "points", "message"),
    [f[1:] for f in FINDINGS],
    ids=[f[0] for f in FINDINGS],
)
def test_finding(pairs: Fields, https: bool, name: str, status: str, points: int, message: str) -> None:
    [finding] = [f for f in sh.grade(fields(pairs), https=https).findings if f.name == name]
    assert (finding.status, finding.points, finding.message) == (status, points, message)


def test_target_text_is_clipped_and_printable() -> None:
    report = sh.grade(fields([("Referrer-Policy", "x\x1b[31m" + "y" * 200)]), https=True)
    [message] = [f.message for f in report.findings if f.name == "Referrer-Policy"]
    assert message.isprintable() and len(message) < 120, message


BANDS = [(100, "A+"), (99, "A"), (90, "A"), (89, "B"), (75, "B"), (74, "C"), (60, "C"), (59, "D"), (40, "D"),
         (39, "F"), (0, "F")]  # fmt: skip


@pytest.mark.parametrize(("score", "grade"), BANDS)
def test_grade_bands(score: int, grade: str) -> None:
    assert sh.grade_for(score) == grade


@pytest.mark.parametrize(
    ("grade", "minimum", "passes"),
    [("A+", "A+", True), ("A", "A+", False), ("A+", "B", True), ("B", "B", True), ("C", "B", False),
     ("F", "F", True), ("F", "D", False)],
)  # fmt: skip
def test_at_least(grade: sh.Grade, minimum: sh.Grade, passes: bool) -> None:
    assert sh.at_least(grade, minimum) is passes


# -- the assertion ---------------------------------------------------------------------------


def observed(pairs: Fields, *, https: bool = True) -> Observed:
    return Observed(
        status=200,
        headers=fields(pairs),
        body=None,
        body_truncated=False,
        body_cap=0,
        body_error=None,
        elapsed_ms=10.0,
        content_type=None,
        https=https,
    )


def judge(assertion: dict[str, Any], seen: Observed) -> tuple[bool, str | None, dict[str, Any]]:
    [outcome] = Judge(ASSERTIONS.validate_python([assertion])).judge(seen)
    assert outcome.details is not None
    return outcome.ok, outcome.message, dict(outcome.details)


# (id, min_grade, fields, https, the message: None when it holds)
VERDICTS = [
    ("strong passes B", "B", GITHUB, True, None),
    ("strong passes A+", "A+", GITHUB, True, None),
    ("no CSP is C, below B", "B", without(GITHUB, CSP), True,
     "security headers grade C is below B: missing Content-Security-Policy"),
    ("no CSP passes C", "C", without(GITHUB, CSP), True, None),
    ("plain http is B at best", "A", GITHUB, False,
     "security headers grade B is below A: HSTS sent over plain http, where browsers ignore it"),
    ("A is not A+", "A+", without(GITHUB, PERMISSIONS), True,
     "security headers grade A is below A+: missing Permissions-Policy"),
    ("bare nginx, most points lost first", "D", NGINX, True,
     "security headers grade F is below D: missing Content-Security-Policy; "
     "missing Strict-Transport-Security; X-Frame-Options missing and CSP has no frame-ancestors; "
     "missing Referrer-Policy; "
     "missing X-Content-Type-Options; missing Permissions-Policy"),
    ("weak before missing when it loses more", "A", without(replaced(GITHUB, CSP, "default-src *"), XCTO),
     True, "security headers grade C is below A: CSP allows any source (*) in default-src; "
     "missing X-Content-Type-Options"),
    ("F only reports", "F", NGINX, True, None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("minimum", "pairs", "https", "message"), [v[1:] for v in VERDICTS], ids=[v[0] for v in VERDICTS]
)
def test_verdict(minimum: str, pairs: Fields, https: bool, message: str | None) -> None:
    ok, got, details = judge({"type": "security_headers", "min_grade": minimum}, observed(pairs, https=https))
    assert (ok, got) == (message is None, message)
    # The findings go with the outcome whatever the verdict.
    report = sh.grade(fields(pairs), https=https)
    assert details == {"security_headers": report.as_json()}
    assert len(details["security_headers"]["findings"]) == 6


def test_details_shape() -> None:
    _, _, details = judge({"type": "security_headers"}, observed(CMS))
    assert details["security_headers"]["grade"] == "D"
    assert details["security_headers"]["score"] == 50
    assert details["security_headers"]["findings"][1] == {
        "name": "Strict-Transport-Security",
        "status": "weak",
        "points": 10,
        "max_points": 20,
        "message": "HSTS max-age 300 is under 6 months (15768000 s)",
    }


def test_model_defaults_describes_and_asks_for_its_headers() -> None:
    [model, header] = ASSERTIONS.validate_python(
        [{"type": "security_headers"}, {"type": "header", "name": "X-Served-By", "op": "exists"}]
    )
    assert model.model_dump() == {"type": "security_headers", "min_grade": "B"}
    assert model.describe() == "security headers grade B or better"
    judge_ = Judge([model, header])
    assert not judge_.needs_body
    assert judge_.header_names == sh.HEADER_NAMES | {"x-served-by"}
    assert "content-security-policy-report-only" in judge_.header_names


@pytest.mark.parametrize("bad", ["E", "b", "A-", "", 3, None])
def test_unknown_grade_is_refused_naming_the_field(bad: Any) -> None:
    with pytest.raises(ValidationError) as caught:
        ASSERTIONS.validate_python([{"type": "security_headers", "min_grade": bad}])
    [error] = caught.value.errors()
    assert error["loc"] == (0, "security_headers", "min_grade")


def test_unknown_field_is_refused() -> None:
    with pytest.raises(ValidationError) as caught:
        ASSERTIONS.validate_python([{"type": "security_headers", "grade": "A"}])
    assert caught.value.errors()[0]["loc"] == (0, "security_headers", "grade")


@pytest.mark.parametrize("length", [40, 20_000])
def test_a_hostile_permissions_policy_is_graded_at_once(length: int) -> None:
    # An inner list whose items were allowed to touch split "(aaa...a" in exponentially many
    # ways before failing on the quote: 40 characters held the scheduler's loop for good.
    report = sh.grade({"permissions-policy": ("a=(" + "a" * length + '"',)}, https=True)
    permissions = next(f for f in report.findings if f.name == "Permissions-Policy")
    assert permissions.points < permissions.max_points
