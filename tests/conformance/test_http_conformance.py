"""The HTTP check against real-world server behaviours: one table, one row per behaviour.

Each row names a behaviour, the URL of a local server showing it (a template over ``lab``'s
servers: Debian's nginx, Python's http.server, raw asyncio servers writing exact bytes, TLS
servers from a test CA), the monitor's options, the verdict a visitor would agree with, and
for a down the error the check must give (a regular expression, searched). ``why`` says why a
visitor agrees; ``curl`` is there only where ``curl -sS -o /dev/null -w '%{http_code}'`` (curl
7.88, Debian 12) concludes otherwise, and says why we differ from it.

The check runs exactly as the scheduler runs it: ``HttpCheck().run(spec, ctx, started)`` with the
options built from the stored settings and secrets (``HttpCheck.options``). docs/checks.md lists
every row; ``test_docs_list_every_case`` keeps the two in step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import pytest

from monitor.checks.http import HttpCheck
from monitor.models import CheckResult, MonitorSpec

from .conftest import Client, Lab
from .nginx import BASIC_PASSWORD, BASIC_USER, BIG_HEAD_MARK, BIG_TAIL_MARK
from .servers import BEARER_TOKEN, SLOW_DELAY, TTFB_DELAY

# -- the adapter: one check, as the scheduler runs it -------------------------------------


async def check(
    client: Client,
    url: str,
    *,
    timeout: float = 1.0,  # noqa: ASYNC109 - the monitor's own timeout setting
    follow_redirects: bool = False,
    expected_status: tuple[tuple[int, int], ...] = ((200, 399),),
    settings: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> CheckResult:
    """One check of a monitor with these settings (``monitors.settings``, where its expected
    statuses and redirects are kept too) and secrets (``monitor_secrets.secrets``), in their
    stored form."""
    http = HttpCheck()
    stored = {**(settings or {}), "expected_status": [list(r) for r in expected_status],
              "follow_redirects": follow_redirects}  # fmt: skip
    spec = MonitorSpec(
        id=1,
        name="conformance",
        type="http",
        url=url,
        interval_seconds=60.0,
        timeout_seconds=timeout,
        confirm_after=1,
        paused=False,
        options=http.options(stored, secrets),
    )
    return await http.run(spec, client.ctx, datetime.now(UTC))


# -- assertions, in their stored form -----------------------------------------------------


def keyword(text: str, *, absent: bool = False, case_sensitive: bool = True) -> dict[str, Any]:
    return {"type": "keyword", "keyword": text, "absent": absent, "case_sensitive": case_sensitive}


def regex(pattern: str) -> dict[str, Any]:
    return {"type": "regex", "pattern": pattern}


def json_at(path: str, op: str, *value: Any) -> dict[str, Any]:
    return {"type": "json", "path": path, "op": op, **({"value": value[0]} if value else {})}


def header(name: str, op: str, *value: str) -> dict[str, Any]:
    return {"type": "header", "name": name, "op": op, **({"value": value[0]} if value else {})}


def below_ms(ms: float) -> dict[str, Any]:
    return {"type": "response_time", "below_ms": float(ms)}


BASIC = {"type": "basic", "username": BASIC_USER, "password": BASIC_PASSWORD}
BEARER = {"type": "bearer", "token": BEARER_TOKEN}
WELCOME = keyword("Welcome home")  # the raw servers' page
CURL_NO_ASSERTIONS = "curl judges no assertions: 200, up."

# -- the table ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    url: str  # a template over Lab.bases
    verdict: Literal["up", "down"]
    error: str | None  # for a down: a regular expression the error must contain
    why: str
    curl: str | None = None  # only where curl's verdict differs: what it says, and why we differ
    method: str = "GET"
    follow: bool = False
    expected: tuple[tuple[int, int], ...] = ((200, 399),)
    asserts: tuple[dict[str, Any], ...] = ()
    body: str | None = None
    content_type: str | None = None
    auth: dict[str, str] | None = None
    secret_headers: tuple[tuple[str, str], ...] = ()
    max_body_bytes: int | None = None
    tls_verify: bool = True
    timeout: float = 1.0
    status: int | None = None  # the status the result must report, where it matters
    details: dict[str, Any] = field(default_factory=dict)  # must be a subset of the result's details
    min_ttfb_ms: float | None = None
    http_version: str | None = None  # the protocol the check must have spoken ("1.1", "2")

    def settings(self) -> dict[str, Any]:
        stored: dict[str, Any] = {}
        if self.method != "GET":
            stored["method"] = self.method
        if self.body is not None:
            stored["body"] = self.body
        if self.content_type is not None:
            stored["content_type"] = self.content_type
        if self.max_body_bytes is not None:
            stored["max_body_bytes"] = self.max_body_bytes
        if not self.tls_verify:
            stored["tls_verify"] = False
        if self.asserts:
            stored["assertions"] = list(self.asserts)
        return stored

    def secrets(self) -> dict[str, Any]:
        stored: dict[str, Any] = {}
        if self.auth is not None:
            stored["auth"] = self.auth
        if self.secret_headers:
            stored["headers"] = [list(pair) for pair in self.secret_headers]
        return stored


def up(name: str, url: str, why: str, **options: Any) -> Case:
    return Case(name, url, "up", None, why, **options)


def down(name: str, url: str, error: str, why: str, **options: Any) -> Case:
    return Case(name, url, "down", error, why, **options)


CASES: list[Case] = [
    # -- nginx: an ordinary site ----------------------------------------------------------
    up("nginx-page", "{nginx}/", "nginx's welcome page, 200."),
    up("nginx-keyword", "{nginx}/", "The page holds the keyword.", asserts=(keyword("Welcome to nginx!"),)),
    down(
        "nginx-keyword-missing",
        "{nginx}/",
        r'keyword "Goodbye" not found in the body',
        "The page is whole and does not hold the keyword; the message says the whole body was read.",
        asserts=(keyword("Goodbye"),),
        curl=CURL_NO_ASSERTIONS,
    ),
    up(
        "nginx-keyword-absent",
        "{nginx}/",
        "An error text the page must not show is not there.",
        asserts=(keyword("Fatal error", absent=True),),
    ),
    down(
        "nginx-keyword-present-but-must-be-absent",
        "{nginx}/",
        r'keyword "nginx"',
        "The text that must be absent is on the page.",
        asserts=(keyword("nginx", absent=True),),
        curl=CURL_NO_ASSERTIONS,
    ),
    up(
        "nginx-keyword-any-case",
        "{nginx}/",
        "A case-insensitive keyword matches text in another case.",
        asserts=(keyword("WELCOME TO NGINX", case_sensitive=False),),
    ),
    up("nginx-regex", "{nginx}/", "The body matches the pattern.", asserts=(regex(r"Welcome to \w+!"),)),
    down("nginx-500", "{nginx}/status/500", r"^unexpected status 500$", "A server error is down."),
    down("nginx-404", "{nginx}/missing.html", r"^unexpected status 404$", "Not found is down by default."),
    up(
        "nginx-404-expected",
        "{nginx}/missing.html",
        "A monitor may expect 404 (a page that must stay gone).",
        expected=((404, 404),),
        status=404,
    ),
    up(
        "nginx-404-in-4xx-range",
        "{nginx}/missing.html",
        "Expected statuses are ranges: 2xx and 4xx.",
        expected=((200, 299), (400, 499)),
        status=404,
    ),
    up(
        "nginx-2mib-download",
        "{nginx}/big.bin",
        "A 2 MiB download with a status-only check: the head says 200, the body is never read "
        "(the check before issue 10 said 'response body exceeds 1048576 bytes').",
        status=200,
    ),
    up(
        "nginx-2mib-keyword-in-first-mib",
        "{nginx}/big.bin",
        "The keyword is in the first 1 MiB read; the rest is not read, and the result says the body was cut.",
        asserts=(keyword(BIG_HEAD_MARK.decode()),),
        details={"body_truncated": True},
    ),
    down(
        "nginx-2mib-keyword-past-cap",
        "{nginx}/big.bin",
        r'keyword "END-MARKER" not found in the first 1 MiB',
        "The keyword lies past the 1 MiB cap: the check judges what it read, and says how much.",
        curl="curl judges no assertions: 200, up; and `curl | grep` finds the keyword, since curl reads "
        "all 2 MiB. A check reads at most its cap (max_body_bytes, up to MONITOR_HTTP_MAX_BODY_BYTES) "
        "to bound its cost.",
        asserts=(keyword(BIG_TAIL_MARK.decode()),),
        details={"body_truncated": True},
    ),
    down(
        "nginx-2mib-keyword-small-cap",
        "{nginx}/big.bin",
        r"not found in the first 64 KiB",
        "A monitor's own max_body_bytes (64 KiB) sets how far it reads.",
        asserts=(keyword(BIG_TAIL_MARK.decode()),),
        max_body_bytes=64 * 1024,
        details={"body_truncated": True},
        curl=CURL_NO_ASSERTIONS,
    ),
    up(
        "nginx-gzip-static-always",
        "{nginx}/gzip-always/page.html",
        "gzip_static always: gzip sent though the request did not ask for it; a status check never decodes.",
    ),
    up(
        "nginx-gzip-static-always-keyword",
        "{nginx}/gzip-always/page.html",
        "The keyword check decodes the gzip body, as a browser does.",
        asserts=(keyword("Compressed welcome"),),
    ),
    up("nginx-204", "{nginx}/no-content", "204 No Content, no body.", status=204),
    up("nginx-304", "{nginx}/not-modified", "304 is in the default 200-399.", status=304),
    up("nginx-head", "{nginx}/big.bin", "HEAD: the head states 2 MiB, no body follows.", method="HEAD"),
    down(
        "nginx-post-to-static-file",
        "{nginx}/",
        r"^unexpected status 405$",
        "nginx answers POST to a static file with 405 Not Allowed.",
        method="POST",
        body="x=1",
        content_type="application/x-www-form-urlencoded",
    ),
    up("nginx-40kb-set-cookie", "{nginx}/big-cookie", "A 40 KB Set-Cookie: browsers accept it."),
    up("nginx-200-fields", "{nginx}/many-headers", "200 header fields: browsers accept them."),
    up(
        "nginx-json-equals",
        "{nginx}/json/ok",
        "The health document says ok.",
        asserts=(json_at("$.status", "==", "ok"),),
    ),
    down(
        "nginx-json-degraded",
        "{nginx}/json/degraded",
        r'\$\.status is "degraded", expected "ok"',
        "The health document says degraded; the message quotes what was found.",
        asserts=(json_at("$.status", "==", "ok"),),
        curl=CURL_NO_ASSERTIONS,
    ),
    up(
        "nginx-json-greater-than",
        "{nginx}/json/ok",
        "A number compared.",
        asserts=(json_at("$.count", ">", 2),),
    ),
    up(
        "nginx-json-contains",
        "{nginx}/json/ok",
        "An array holds a value.",
        asserts=(json_at("$.items", "contains", "cache"),),
    ),
    down(
        "nginx-json-path-missing",
        "{nginx}/json/ok",
        r"\$\.version",
        "A path that selects nothing fails, naming the path.",
        asserts=(json_at("$.version", "exists"),),
        curl=CURL_NO_ASSERTIONS,
    ),
    down(
        "nginx-json-on-html",
        "{nginx}/",
        r"(?i)json",
        "A JSON assertion on an HTML page fails, saying the body is not JSON.",
        asserts=(json_at("$.status", "==", "ok"),),
        curl=CURL_NO_ASSERTIONS,
    ),
    up(
        "nginx-header-matches",
        "{nginx}/",
        "A response header matches a pattern.",
        asserts=(header("Content-Type", "matches", "^text/html"),),
    ),
    up(
        "nginx-header-contains",
        "{nginx}/",
        "A response header contains a text.",
        asserts=(header("Server", "contains", "nginx"),),
    ),
    down(
        "nginx-header-missing",
        "{nginx}/",
        r"(?i)strict-transport-security",
        "A header the site must send is missing; the message names it.",
        asserts=(header("Strict-Transport-Security", "exists"),),
        curl=CURL_NO_ASSERTIONS,
    ),
    up("nginx-response-time", "{nginx}/", "Answered well within 2 s.", asserts=(below_ms(2000),)),
    up("nginx-ipv6", "{nginx6}/", "nginx on ::1.", asserts=(keyword("Welcome to nginx!"),)),
    down(
        "nginx-h2c-only",
        "{nginx_h2c}/",
        r"the server answered in HTTP/2 only",
        "`listen ... http2` without TLS: nginx speaks only HTTP/2 (prior knowledge) on that port.",
    ),
    up(
        "nginx-tls-alpn-h2-and-http11",
        "{nginx_tls}/",
        "nginx over TLS offers ALPN h2 and http/1.1; the check asks for http/1.1 and gets it (had it "
        "offered both, nginx would choose h2: it goes by its own order).",
        asserts=(keyword("Welcome to nginx!"),),
        http_version="1.1",
    ),
    down(
        "nginx-http-to-tls-port",
        "http://127.0.0.1:{nginx_tls_port}/",
        r"^unexpected status 400$",
        "Plain HTTP to nginx's TLS port: nginx answers 400 'The plain HTTP request was sent to HTTPS port'.",
    ),
    down(
        "nginx-https-to-plain-port",
        "https://127.0.0.1:{nginx_port}/",
        r"(?i)did not answer in TLS",
        "TLS to a plain HTTP port: the handshake gets an HTTP answer; the message suggests http://.",
    ),
    # -- redirects --------------------------------------------------------------------------
    up(
        "redirect-relative",
        "{nginx}/redirect/relative",
        "Location: / (relative), followed.",
        follow=True,
        status=200,
        asserts=(keyword("Welcome to nginx!"),),
    ),
    up(
        "redirect-absolute",
        "{nginx}/redirect/absolute",
        "Location: http://127.0.0.1:port/ (absolute), followed.",
        follow=True,
        status=200,
    ),
    up(
        "redirect-not-followed",
        "{nginx}/redirect/absolute",
        "Not following redirects, a 301 is in 200-399.",
        status=301,
    ),
    down(
        "redirect-loop",
        "{nginx}/redirect/loop",
        r"too many redirects",
        "A redirect to itself: browsers stop with ERR_TOO_MANY_REDIRECTS.",
        follow=True,
    ),
    up(
        "redirect-to-https",
        "{nginx}/redirect/https",
        "http to https on nginx's TLS port, certificate from the trusted CA.",
        follow=True,
        asserts=(keyword("Welcome to nginx!"),),
    ),
    up(
        "redirect-303-after-post",
        "{py}/see-other",
        "303 after a POST: the next request is a GET without a body.",
        method="POST",
        body="ping=1",
        content_type="application/x-www-form-urlencoded",
        follow=True,
        asserts=(json_at("$.method", "==", "GET"), json_at("$.body", "==", "")),
    ),
    up(
        "redirect-307-keeps-post",
        "{py}/temporary-redirect",
        "307 keeps the method and the body.",
        method="POST",
        body="ping=1",
        content_type="application/x-www-form-urlencoded",
        follow=True,
        asserts=(json_at("$.method", "==", "POST"), json_at("$.body", "==", "ping=1")),
    ),
    # -- credentials ----------------------------------------------------------------------
    up("basic-auth", "{nginx}/private/", "nginx auth_basic accepts the credentials.", auth=BASIC),
    down(
        "basic-auth-wrong-password",
        "{nginx}/private/",
        r"^unexpected status 401$",
        "Wrong password: 401.",
        auth={**BASIC, "password": "wrong"},
    ),
    down("basic-auth-missing", "{nginx}/private/", r"^unexpected status 401$", "No credentials: 401."),
    up("bearer-token", "{py}/bearer", "The token reaches the server.", auth=BEARER),
    down(
        "bearer-token-wrong",
        "{py}/bearer",
        r"^unexpected status 401$",
        "A wrong token: 401.",
        auth={"type": "bearer", "token": "nope"},
    ),
    up(
        "basic-auth-same-origin-redirect",
        "{nginx}/redirect/private",
        "A redirect within the origin keeps the credentials (the target needs them).",
        follow=True,
        auth=BASIC,
    ),
    up(
        "basic-auth-not-sent-cross-origin",
        "{nginx}/redirect/other-origin",
        "A redirect to another origin (another port): the credentials stay behind; that server "
        "answers 400 if any arrive.",
        follow=True,
        auth=BASIC,
        asserts=(keyword("no credentials here"),),
    ),
    up(
        "secret-header-not-sent-cross-origin",
        "{nginx}/redirect/other-origin",
        "A secret header (X-Api-Key) stays behind too.",
        follow=True,
        secret_headers=(("X-Api-Key", "k-123"),),
        curl="curl -L sends -H headers to every host it is redirected to: X-Api-Key reaches the other "
        "origin, which answers 400 (curl drops only -u credentials and cookies).",
    ),
    # -- Python's http.server ----------------------------------------------------------------
    up(
        "python-http-server",
        "{py}/",
        "python -m http.server: an HTTP/1.0 answer.",
        asserts=(keyword("Served by Python"),),
    ),
    up(
        "python-close-delimited",
        "{py}/close-delimited",
        "HTTP/1.0 without Content-Length: the close ends the body.",
        asserts=(keyword("Served by Python"),),
    ),
    up(
        "python-post-json",
        "{py}/echo",
        "POST with a body and its Content-Type; the server echoes both.",
        method="POST",
        body='{"ping": 1}',
        content_type="application/json",
        asserts=(
            json_at("$.method", "==", "POST"),
            json_at("$.content_type", "==", "application/json"),
            json_at("$.body", "==", '{"ping": 1}'),
        ),
    ),
    up(
        "python-put-keyword",
        "{py}/echo",
        "PUT with a body; the keyword check sees the echo.",
        method="PUT",
        body="hello=world",
        content_type="text/plain",
        asserts=(keyword("hello=world"),),
    ),
    down("python-404", "{py}/nope.html", r"^unexpected status 404$", "http.server's 404 page."),
    up("python-ipv6", "{py6}/", "http.server on ::1.", asserts=(keyword("Served by Python"),)),
    # -- framing --------------------------------------------------------------------------
    up(
        "content-length-and-chunked",
        "{raw[both-lengths]}/",
        "Both Content-Length and chunked: chunked wins (RFC 9112 6.3), as in browsers.",
        asserts=(WELCOME,),
    ),
    up(
        "content-length-and-chunked-status-only",
        "{raw[both-lengths]}/",
        "The same, status only.",
    ),
    up(
        "content-length-twice-same",
        "{raw[same-length-twice]}/",
        "Two identical Content-Length fields are one (RFC 9110 8.6).",
        asserts=(WELCOME,),
    ),
    up(
        "content-length-list-same",
        "{raw[length-list]}/",
        "Content-Length: N, N (a proxy merged duplicates) is N.",
        asserts=(WELCOME,),
    ),
    down(
        "content-length-conflicting",
        "{raw[conflicting-lengths]}/",
        r"conflicting Content-Length",
        "Two different Content-Length values: the body's end is unknown; browsers refuse it "
        "(ERR_RESPONSE_HEADERS_MULTIPLE_CONTENT_LENGTH).",
        curl="curl takes one of the values and says 200, up; browsers refuse the response, and "
        "guessing where the body ends is how responses get smuggled.",
    ),
    up(
        "close-delimited-http11",
        "{raw[close-delimited]}/",
        "HTTP/1.1 without Content-Length or chunked: the close ends the body.",
        asserts=(WELCOME,),
    ),
    up("http10", "{raw[http10]}/", "An HTTP/1.0 status line.", asserts=(WELCOME,)),
    up("no-reason-phrase", "{raw[no-reason-phrase]}/", "'HTTP/1.1 200' without a reason phrase."),
    up(
        "lf-only-line-ends", "{raw[lf-only]}/", "Bare LF line ends: browsers accept them.", asserts=(WELCOME,)
    ),
    up(
        "folded-header",
        "{raw[folded-header]}/",
        "An obsolete folded header line: browsers join it.",
        asserts=(WELCOME,),
    ),
    up(
        "chunked-with-trailers",
        "{raw[chunked-trailers]}/",
        "Chunked with a trailer field.",
        asserts=(WELCOME,),
    ),
    up(
        "chunk-extensions",
        "{raw[chunk-extensions]}/",
        "A chunk size with an extension (;name=value) is ignored.",
        asserts=(WELCOME,),
    ),
    up(
        "204-connection-kept-open",
        "{raw[no-content-kept-open]}/",
        "204 has no body by definition: no waiting for one, though the server keeps the connection.",
        asserts=(keyword("error", absent=True),),
        status=204,
    ),
    up(
        "304-with-length-kept-open",
        "{raw[not-modified-kept-open]}/",
        "304 has no body, whatever its Content-Length says.",
        asserts=(keyword("error", absent=True),),
        status=304,
    ),
    up(
        "head-with-length-kept-open",
        "{raw[head-kept-open]}/",
        "A HEAD answer declares 5000 bytes and sends none.",
        method="HEAD",
        asserts=(keyword("error", absent=True),),
    ),
    # -- what is not HTTP/1.x -----------------------------------------------------------------
    down(
        "rtsp-status-line",
        "{raw[rtsp]}/",
        r"RTSP/1\.0",
        "'RTSP/1.0 200 OK' is not an HTTP answer; browsers refuse it.",
    ),
    down(
        "h2c-preface",
        "{raw[h2c-only]}/",
        r"the server answered in HTTP/2 only",
        "An HTTP/2-only cleartext server answers with a SETTINGS frame.",
    ),
    down(
        "ssh-banner",
        "{raw[ssh-banner]}/",
        r"not HTTP.*SSH-2\.0",
        "An SSH server: the error says it is not HTTP and quotes the banner.",
    ),
    down("smtp-banner", "{raw[smtp-banner]}/", r"not HTTP.*220", "An SMTP server's greeting."),
    down(
        "http09-body-only",
        "{raw[http09]}/",
        r"not HTTP",
        "A body without a status line (HTTP/0.9): browsers refuse it on other ports than 80.",
    ),
    down(
        "tls-alert-to-plain-http",
        "{raw[tls-alert]}/",
        r"answered with TLS: use an https:// URL",
        "http:// to a TLS port whose server answers a plain request with a TLS alert (Java's JSSE "
        "does): the error says to use https://.",
    ),
    # -- interim responses -----------------------------------------------------------------
    up(
        "100-continue-then-200",
        "{raw[continue-then-ok]}/",
        "100 Continue, then the answer.",
        asserts=(WELCOME,),
    ),
    up(
        "103-early-hints-then-200",
        "{raw[early-hints]}/",
        "103 Early Hints, then the answer.",
        asserts=(WELCOME,),
    ),
    down(
        "103-then-800kb-final-head",
        "{raw[early-hints-huge-final]}/",
        r"head exceeds 262144 bytes",
        "A 103 and an 800 KB final head in one write: the head limit holds for the final head too.",
    ),
    up(
        "ttfb-is-the-final-response",
        "{raw[early-hints-then-delay]}/",
        "A 103 at once, the final head 300 ms later: time to first byte is the final head's, the "
        "origin's latency that a CDN's 103 would hide.",
        min_ttfb_ms=TTFB_DELAY * 1000,
    ),
    # -- head sizes ------------------------------------------------------------------------
    down(
        "head-over-256kib",
        "{raw[head-over-256k]}/",
        r"head exceeds 262144 bytes",
        "A 300 KiB head: over Chrome's 256 KiB.",
    ),
    up("500-fields", "{raw[500-fields]}/", "500 header fields: within a browser's limits."),
    down(
        "1001-fields",
        "{raw[1001-fields]}/",
        r"more than 1000 header fields",
        "1001 header fields, over MONITOR_HTTP_MAX_HEADERS (1000).",
        curl="curl counts no fields (it caps the head at 300 KiB): 200, up. The check bounds the "
        "fields it parses, at twice the 500 the issue asks to accept.",
    ),
    up("40kb-set-cookie-line", "{raw[big-set-cookie]}/", "One 40 KB Set-Cookie line.", asserts=(WELCOME,)),
    # -- encodings -------------------------------------------------------------------------
    up(
        "gzip-unasked",
        "{raw[gzip-unasked]}/",
        "gzip sent though not asked for; a status check does not decode.",
    ),
    up(
        "gzip-unasked-keyword",
        "{raw[gzip-unasked]}/",
        "The keyword check decodes gzip.",
        asserts=(WELCOME,),
    ),
    up(
        "br-unasked",
        "{raw[br-unasked]}/",
        "Brotli from a misconfigured cache; a status check does not decode.",
    ),
    up(
        "br-unasked-keyword",
        "{raw[br-unasked]}/",
        "The keyword check decodes brotli, as browsers do.",
        asserts=(WELCOME,),
    ),
    up(
        "raw-deflate-keyword",
        "{raw[raw-deflate]}/",
        "deflate without its zlib wrapper: browsers accept both.",
        asserts=(WELCOME,),
    ),
    up(
        "content-encoding-utf8",
        "{raw[content-encoding-utf8]}/",
        "Content-Encoding: UTF-8 (a PHP mistake); a status check never decodes.",
    ),
    down(
        "content-encoding-utf8-keyword",
        "{raw[content-encoding-utf8]}/",
        r"cannot decode the body: unsupported Content-Encoding 'UTF-8'",
        "A keyword check cannot decode it, and says so.",
        asserts=(WELCOME,),
        curl="curl judges no assertions: 200, up (it ignores Content-Encoding unless given "
        "--compressed, which then fails: '(61) Unrecognized content encoding type').",
    ),
    up("broken-gzip", "{raw[broken-gzip]}/", "'gzip' that is not gzip; the status check does not decode."),
    down(
        "broken-gzip-keyword",
        "{raw[broken-gzip]}/",
        r"cannot decode the body",
        "The keyword check cannot decode it.",
        asserts=(WELCOME,),
        curl="curl judges no assertions: 200, up (with --compressed: '(61) Error while processing "
        "content unencoding').",
    ),
    # -- connections that break ------------------------------------------------------------
    down(
        "empty-reply",
        "{raw[empty-reply]}/",
        r"closed the connection without a response",
        "Closed after the request, nothing sent (browsers: ERR_EMPTY_RESPONSE).",
    ),
    down(
        "reset-before-head",
        "{raw[reset-before-head]}/",
        r"(?i)reset",
        "Reset after the request, nothing sent.",
    ),
    up(
        "reset-after-head-status-only",
        "{raw[reset-after-head]}/",
        "Reset in the body; the head was whole and a status check reads no more.",
        curl="curl reads the body: '(56) Recv failure: Connection reset by peer', exit 56.",
    ),
    down(
        "reset-after-head-keyword",
        "{raw[reset-after-head]}/",
        r"(?i)reset|body was complete",
        "A keyword check needs the body, which broke off.",
        asserts=(WELCOME,),
    ),
    up(
        "truncated-body-status-only",
        "{raw[truncated-body]}/",
        "Content-Length larger than what was sent; the head was whole.",
        curl="curl reads the body: '(18) transfer closed with N bytes remaining to read', exit 18.",
    ),
    down(
        "truncated-body-keyword",
        "{raw[truncated-body]}/",
        r"connection closed before the body was complete",
        "A keyword check needs the body, which is short of its Content-Length.",
        asserts=(WELCOME,),
    ),
    down(
        "connection-refused",
        "{refused}/",
        r"^connection failed: refused by 127\.0\.0\.1 port \d+$",
        "Nothing listens on the port.",
    ),
    up("ipv6-raw", "{raw[ok-v6]}/", "A server on ::1.", asserts=(WELCOME,)),
    # -- time ------------------------------------------------------------------------------
    down(
        "timeout-resolving",
        "http://dns-stall.test/",
        r"timed out after 1s resolving dns-stall\.test",
        "The DNS server never answers.",
    ),
    down(
        "timeout-connecting",
        "{connect_stall}/",
        r"timed out after 1s connecting",
        "A listener whose accept queue is full drops the SYN: the connection never opens.",
    ),
    down(
        "timeout-tls-handshake",
        "https://127.0.0.1:{raw_port[silent]}/",
        r"timed out after 1s in the TLS handshake",
        "The server accepts and never answers the ClientHello.",
    ),
    down(
        "timeout-waiting-for-head",
        "{raw[silent]}/",
        r"timed out after 1s waiting for the response head",
        "Connected, request sent, nothing answers.",
    ),
    down(
        "timeout-head-stalls-midway",
        "{raw[head-stalls-midway]}/",
        r"timed out after 1s waiting for the rest of the response head",
        "The status line and one field, then silence.",
    ),
    down(
        "timeout-after-103",
        "{raw[early-hints-then-silence]}/",
        r"timed out after 1s waiting for the response head",
        "A CDN sends 103 Early Hints at once; the origin never answers.",
    ),
    up(
        "body-stalls-status-only",
        "{raw[body-stalls]}/",
        "200 and part of the body, then silence: a status check has its answer at the head.",
        curl="curl waits for the rest of the body: '(28) Operation timed out', exit 28.",
    ),
    down(
        "timeout-reading-body",
        "{raw[body-stalls]}/",
        r"timed out after 1s reading the body",
        "200 and part of the body, then silence, with a keyword check: the error says the body stalled.",
        asserts=(WELCOME,),
    ),
    up(
        "response-time-within-bound",
        "{raw[slow]}/",
        "Answers after 250 ms, bound 2 s.",
        asserts=(below_ms(2000),),
    ),
    down(
        "response-time-over-bound",
        "{raw[slow]}/",
        r"response time \d+ ms > 100 ms",
        f"Answers after {SLOW_DELAY * 1000:g} ms, bound 100 ms: the message gives both.",
        asserts=(below_ms(100),),
        curl=CURL_NO_ASSERTIONS,
    ),
    # -- TLS -------------------------------------------------------------------------------
    up(
        "tls-valid-chain",
        "{raw[tls-valid]}/",
        "A leaf from an intermediate, sent with it.",
        asserts=(WELCOME,),
    ),
    up(
        "tls-valid-chain-by-name",
        "https://tls.localhost:{raw_port[tls-valid]}/",
        "The same by name: SNI and the certificate check use the name.",
    ),
    down(
        "tls-expired",
        "{raw[tls-expired]}/",
        r"TLS certificate error: certificate has expired",
        "An expired certificate (browsers: NET::ERR_CERT_DATE_INVALID).",
    ),
    down(
        "tls-wrong-name",
        "https://tls.localhost:{raw_port[tls-wrong-name]}/",
        r"TLS certificate error: (?i:hostname|IP address) mismatch",
        "A certificate for www.example.org only.",
    ),
    down(
        "tls-self-signed",
        "{raw[tls-self-signed]}/",
        r"TLS certificate error: self.signed certificate",
        "A self-signed certificate.",
    ),
    down(
        "tls-missing-intermediate",
        "{raw[tls-missing-intermediate]}/",
        r"TLS certificate error: unable to get local issuer certificate",
        "The server sends its leaf without the intermediate. Chrome (AIA fetching) and Firefox "
        "(preloaded intermediates) often still show the page, but API clients, apps and curl fail: "
        "down, with the cause.",
    ),
    up("tls12-only", "{raw[tls-tls12-only]}/", "A server that speaks TLS 1.2 at most."),
    up("tls13-only", "{raw[tls-tls13-only]}/", "A server that speaks TLS 1.3 only."),
    up(
        "tls-sni-first-name",
        "https://a.localhost:{raw_port[tls-sni]}/",
        "One listener, a certificate per name: SNI a.localhost gets a.localhost's.",
    ),
    up(
        "tls-sni-second-name",
        "https://b.localhost:{raw_port[tls-sni]}/",
        "SNI b.localhost gets b.localhost's.",
    ),
    down(
        "tls-sni-absent-gets-default",
        "{raw[tls-sni]}/",
        r"TLS certificate error: (?i:hostname|IP address) mismatch",
        "An IP literal sends no SNI; the default certificate is not valid for the address.",
    ),
    down(
        "tls-client-certificate-required",
        "{raw[tls-client-cert]}/",
        r"(?i)requires a client certificate",
        "The server requires a client certificate; the check has none.",
    ),
    down(
        "nginx-client-certificate-required",
        "{nginx_mtls}/",
        r"^unexpected status 400$",
        "nginx with ssl_verify_client on completes the handshake and answers 400 'No required SSL "
        "certificate was sent': what a browser without a certificate shows.",
    ),
    up(
        "tls-verify-off-self-signed",
        "{raw[tls-self-signed]}/",
        "tls_verify false (where the operator allows it): encrypted, not verified, and the result says so.",
        tls_verify=False,
        details={"tls_verified": False},
    ),
    # -- HTTP/2: servers that speak nothing else (ALPN h2 only) ---------------------------
    up(
        "h2-only",
        "{h2}/",
        "TLS with ALPN h2 only, a real HTTP/2 server (the h2 library's): browsers and curl load the "
        "page in HTTP/2, and so does the check, after the server refuses HTTP/1.1.",
        asserts=(WELCOME,),
        http_version="2",
    ),
    up(
        "h2-only-by-name",
        "https://tls.localhost:{h2_port}/",
        "The same by name: SNI and the certificate check use the name on the HTTP/2 connection too.",
        http_version="2",
    ),
    down("h2-only-500", "{h2}/status/500", r"^unexpected status 500$", "A server error in HTTP/2 is down."),
    up(
        "h2-only-redirect-followed",
        "{h2}/redirect",
        "A 302 in HTTP/2, followed: the next hop is vetted and dialled afresh, in HTTP/2 again.",
        follow=True,
        asserts=(WELCOME,),
        http_version="2",
    ),
    up(
        "h2-only-post-json",
        "{h2}/echo",
        "A POST with a body in HTTP/2: the server sees the method, the type and the body.",
        method="POST",
        body='{"ping": 1}',
        content_type="application/json",
        asserts=(json_at("$.method", "==", "POST"), json_at("$.body", "==", '{"ping": 1}')),
    ),
    up(
        "h2-only-gzip-unasked",
        "{h2}/gzip",
        "A gzip body sent unasked over HTTP/2 is decoded for the keyword, as over HTTP/1.1.",
        asserts=(WELCOME,),
    ),
    up(
        "h2-only-early-hints",
        "{h2}/early-hints",
        "103 Early Hints, then the 200, in HTTP/2: the interim head is skipped.",
        asserts=(WELCOME,),
        status=200,
    ),
    down(
        "h2-only-keyword-past-cap",
        "{h2}/big",
        r'keyword "END-OF-BIG-BODY" not found in the first 64 KiB',
        "A 2 MiB body in HTTP/2, read up to the monitor's cap (64 KiB) and no further.",
        asserts=(keyword("END-OF-BIG-BODY"),),
        max_body_bytes=64 * 1024,
        details={"body_truncated": True, "body_bytes": 64 * 1024},
        curl=CURL_NO_ASSERTIONS,
    ),
    down(
        "h2-only-head-over-256k",
        "{h2}/huge-head",
        r"^invalid response: the response head exceeds 262144 bytes$",
        "300 KiB of header fields in HTTP/2: the same bound as HTTP/1.1 (and Chrome).",
    ),
    down(
        "h2-only-1001-fields",
        "{h2}/1001-fields",
        r"^invalid response: more than 1000 header fields$",
        "1001 header fields in HTTP/2: the same bound as HTTP/1.1.",
        curl="curl accepts them, as over HTTP/1.1.",
    ),
    down(
        "h2-bad-frame",
        "{h2}/bad-frame",
        r"^invalid response: HTTP/2 protocol error \(",
        "A DATA frame on stream 0, which HTTP/2 forbids (RFC 9113 6.1): browsers fail the page "
        "(ERR_HTTP2_PROTOCOL_ERROR), and the check says it was a protocol error.",
    ),
    down(
        "h2-goaway-before-response",
        "{h2}/goaway",
        r"^the server closed the HTTP/2 connection before answering "
        r"\(GOAWAY ENHANCE_YOUR_CALM: too many requests\)$",
        "GOAWAY (ENHANCE_YOUR_CALM, last stream 0) instead of an answer: the request was not "
        "processed, and a server that does so to every fresh connection serves no visitor.",
    ),
    up(
        "h2-goaway-after-response",
        "{h2}/goaway-after-response",
        "The whole page, then GOAWAY NO_ERROR (a server closing the connection politely): the "
        "visitor has the page.",
        asserts=(WELCOME,),
    ),
    down(
        "h2-reset-stream",
        "{h2}/reset",
        r"^the server reset the request \(HTTP/2 RST_STREAM REFUSED_STREAM\)$",
        "RST_STREAM instead of an answer.",
    ),
    up(
        "h2-truncated-body-status-only",
        "{h2}/short-body",
        "Content-Length 4096, 56 bytes, then the end of the stream: the head was whole, and a "
        "status check reads no more.",
        curl="curl reads the body and fails: '(92) HTTP/2 stream 1 was not closed cleanly'.",
    ),
    down(
        "h2-truncated-body-keyword",
        "{h2}/short-body",
        r"^invalid response body: HTTP/2 protocol error \(InvalidBodyLengthError",
        "A keyword check needs the body, which is short of its Content-Length.",
        asserts=(WELCOME,),
    ),
    up(
        "h2-body-stalls-status-only",
        "{h2}/body-stalls",
        "200 and part of the body in HTTP/2, then silence: a status check has its answer at the head.",
        curl="curl waits for the rest of the body: '(28) Operation timed out', exit 28.",
    ),
    down(
        "h2-timeout-reading-body",
        "{h2}/body-stalls",
        r"^timed out after 1s reading the body \(after a 200 response head, \d+ bytes read\)$",
        "The same with a keyword check: the error says the body stalled, as over HTTP/1.1.",
        asserts=(WELCOME,),
    ),
    down(
        "h2-timeout-waiting-for-head",
        "{h2}/silent",
        r"^timed out after 1s waiting for the response head \(nothing received\)$",
        "Connected in HTTP/2, request sent, no answer.",
    ),
    down(
        "h2-settings-then-goaway",
        "{raw[tls-alpn-h2-only]}/",
        r"^the server closed the HTTP/2 connection before answering "
        r"\(GOAWAY PROTOCOL_ERROR: invalid preface\)$",
        "ALPN h2 only, then a SETTINGS frame and a GOAWAY for any request: asked again in HTTP/2, "
        "it answers that too with a GOAWAY, and the check names it.",
    ),
    up(
        "h2-and-http11-offered",
        "{h2_both}/",
        "A server offering ALPN h2 and http/1.1 is checked in HTTP/1.1: the check offers http/1.1 "
        "only, so the server's preference for h2 does not apply.",
        asserts=(keyword("Served in HTTP/1.1"),),
        http_version="1.1",
        curl="curl offers h2 first and gets HTTP/2; both are up.",
    ),
]


def _ids() -> list[str]:
    return [case.name for case in CASES]


@pytest.mark.parametrize("case", CASES, ids=_ids())
async def test_conformance(case: Case, client: Client, lab: Lab) -> None:
    result = await check(
        client,
        lab.url(case.url),
        timeout=case.timeout,
        follow_redirects=case.follow,
        expected_status=case.expected,
        settings=case.settings(),
        secrets=case.secrets(),
    )
    seen = f"ok={result.ok} status={result.status_code} error={result.error!r} details={result.details!r}"
    if case.verdict == "up":
        assert result.ok and result.error is None, f"expected up; {seen}"
    else:
        assert not result.ok, f"expected down; {seen}"
        assert case.error is not None and result.error is not None
        assert re.search(case.error, result.error), f"error does not match {case.error!r}; {seen}"
    if case.status is not None:
        assert result.status_code == case.status, seen
    for key, value in case.details.items():
        assert (result.details or {}).get(key) == value, f"details[{key!r}] != {value!r}; {seen}"
    if case.http_version is not None:
        spoken = (result.details or {}).get("http_version", "1.1")
        assert spoken == case.http_version, f"spoke HTTP/{spoken}; {seen}"
    if case.min_ttfb_ms is not None:
        ttfb = result.timings.get("ttfb_ms")
        assert ttfb is not None and ttfb >= case.min_ttfb_ms, f"ttfb_ms={ttfb}; {seen}"


def test_table_is_well_formed() -> None:
    names = _ids()
    assert len(names) == len(set(names)), "duplicate case names"
    assert len(CASES) >= 60
    for case in CASES:
        assert (case.verdict == "down") == (case.error is not None), case.name
        if case.error is not None:
            re.compile(case.error)


def test_docs_list_every_case() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "checks.md").read_text()
    listed = set(re.findall(r"^\| `([a-z0-9-]+)` \|", doc, flags=re.MULTILINE))
    assert listed == set(_ids()), {
        "missing from docs/checks.md": sorted(set(_ids()) - listed),
        "in docs/checks.md but not in the table": sorted(listed - set(_ids())),
    }


async def test_tls_verify_off_is_not_honoured_unless_the_operator_allows_it(client: Client, lab: Lab) -> None:
    """A monitor stored with tls_verify false while MONITOR_ALLOW_INSECURE_TLS was on: once the
    operator turns it off, the scheduler checks the certificate again (and the check says why
    it fails), rather than keep an exception the operator no longer grants."""
    strict = Client(replace(client.ctx, allow_insecure_tls=False), client.resolver)
    result = await check(strict, lab.url("{raw[tls-self-signed]}/"), settings={"tls_verify": False})
    assert not result.ok and (result.error or "").startswith("TLS certificate error"), result


async def test_the_operators_body_cap_bounds_every_monitor(client: Client, lab: Lab) -> None:
    """A monitor stored with a larger max_body_bytes than MONITOR_HTTP_MAX_BODY_BYTES now allows
    reads no more than the operator's cap."""
    capped = Client(replace(client.ctx, http_max_body_bytes=64 * 1024), client.resolver)
    result = await check(
        capped,
        lab.url("{nginx}/big.bin"),
        settings={
            "max_body_bytes": 2 * 1024 * 1024,
            "assertions": [{"type": "keyword", "keyword": BIG_TAIL_MARK.decode()}],
        },
    )
    assert not result.ok and "not found in the first 64 KiB" in (result.error or ""), result
    assert (result.details or {}).get("body_bytes") == 64 * 1024, result


async def test_an_h2_only_server_is_asked_for_h2_at_once_after_its_first_check(
    client: Client, lab: Lab
) -> None:
    """The first check learns the server is h2-only (an HTTP/1.1 handshake it answers with
    HTTP/2 frames, then one in h2); the next checks of the URL ask for h2 at once: one
    handshake a check, as for HTTP/1.1."""
    url = lab.url("{h2}/")
    before = dict(lab.h2.alpn)
    for _ in range(3):
        result = await check(client, url)
        assert result.ok and (result.details or {}).get("http_version") == "2", result
    seen = {alpn: lab.h2.alpn[alpn] - before.get(alpn, 0) for alpn in (None, "h2")}
    assert seen == {None: 1, "h2": 3}, seen


async def test_a_server_that_stops_choosing_h2_is_checked_in_http11_again(client: Client, lab: Lab) -> None:
    """A URL remembered as h2-only whose server now chooses no h2 (it speaks HTTP/1.1 only):
    the check falls back to HTTP/1.1 at once, and forgets."""
    url = lab.url("{raw[tls-valid]}/")
    target = client.ctx.session.target(url)
    target.h2_only = True
    result = await check(client, url)
    assert result.ok and "http_version" not in (result.details or {}), result
    assert not target.h2_only
