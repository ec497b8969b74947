"""TCP port check: connect to host:port through the SSRF guard, optionally say a line and expect an answer.

Up means the port accepted the connection (and, with ``tls``, the TLS handshake completed with
a certificate that verifies for the host). With ``expect``, the answer must also contain that
text: the check sends ``send`` if given (a line such as ``"PING\\r\\n"``: JSON's escapes are the
only ones), then reads until the text is found, the server closes, ``MAX_ANSWER_BYTES`` (64
KiB) have arrived or the timeout ends, whichever comes first. That covers banner checks (SMTP
``220``, SSH ``SSH-2.0``, FTP ``220``) and one-line protocols (Redis ``PING`` / ``PONG``).
The text is matched exactly (case matters), as bytes of its UTF-8.

The cause of a down says what failed: ``connection failed: refused by 192.0.2.7 port 25``,
``timed out after 10s connecting to 192.0.2.7 port 25``, ``expected "220" not found in the
answer ("554 5.7.1 no thanks\\r\\n")``. A refusal by the guard is ``blocked: ...`` as for http.

``latency_ms`` is the connect time plus the TLS handshake's, as the issue asks (DNS is apart,
in ``timings.dns_ms``; a failed connect reports how long the check tried); ``timings.ttfb_ms``
is the answer's first byte. ``details`` holds the start of the answer when one was read
(``answer``, escaped, ``ANSWER_CHARS`` characters), and with TLS the protocol version,
whether the certificate was checked (``tls``) and the leaf certificate (``certificate``, the
shape of ``checks/certificate.py``, so ``cert_warn_days`` makes the monitor degraded as for
https). STARTTLS (SMTP on 587) is not spoken: ``tls`` is TLS from the first byte (465, 993).

A check with ``expect`` of a banner cost 0.26 ms of CPU against a local server (client and
server in one process): a connect, a read and a close on the event loop, no thread.

The target is ``tcp://host:port``, ``tcp+tls://host:port`` with TLS.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StringConstraints,
    ValidationInfo,
    field_validator,
)

from monitor.checks.base import Check, CheckContext, Host, ResultDetails, dial_failure
from monitor.checks.certificate import KEY as CERTIFICATE
from monitor.checks.certificate import Certificate, certificate_details
from monitor.models import CheckResult, Failure, MonitorSpec
from monitor.net.client import HttpSession, clip_error
from monitor.net.dial import DialError, Progress, Wire, bounded, dial

KIND = "tcp"
MAX_ANSWER_BYTES = 64 * 1024
ANSWER_CHARS = 200  # of the answer, in details
CAUSE_CHARS = 100  # of the answer, in a cause
_ESCAPES = {"\r": "\\r", "\n": "\\n", "\t": "\\t"}

# Sent and matched as written: the api strips its bodies' strings, but "PING\r\n" needs its CRLF.
Verbatim = Annotated[str, StringConstraints(strip_whitespace=False)]
# How a wait for the expected text ended.
Ended = Literal["found", "closed", "full", "timeout"]


class TcpSettings(BaseModel):
    """A TCP port monitor: up when ``host``:``port`` accepts a connection (with ``tls``, and
    completes a TLS handshake) and, with ``expect``, answers with that text (after ``send``,
    if given)."""

    model_config = ConfigDict(extra="forbid")

    host: Host = Field(
        description="host name or IP address (v4 or v6); a name is resolved at each check",
    )
    port: StrictInt = Field(ge=1, le=65535, description="TCP port")
    send: Verbatim | None = Field(
        None,
        min_length=1,
        max_length=1024,
        description='sent once connected, as UTF-8 ("PING\\r\\n" in JSON is PING, CR, LF)',
    )
    expect: Verbatim | None = Field(
        None,
        min_length=1,
        max_length=256,
        description="up only if the answer contains this text (case matters); read until found, "
        "the server closes, 64 KiB or the timeout",
    )
    tls: StrictBool = Field(
        False, description="TLS from the first byte (SMTPS, IMAPS...), certificate checked"
    )
    tls_verify: StrictBool = Field(
        True, description="false: do not check the certificate (if the operator allows)"
    )

    @field_validator("send", "expect")
    @classmethod
    def _no_nul(cls, value: str | None) -> str | None:
        if value is not None and "\x00" in value:
            raise ValueError("may not contain NUL characters")
        return value

    @field_validator("tls_verify")
    @classmethod
    def _insecure_allowed(cls, value: bool, info: ValidationInfo) -> bool:
        # The api passes the operator's choice; the scheduler's options() allows what was stored
        # and decides at each check (CheckContext.allow_insecure_tls).
        if value is False and not (info.context or {}).get("allow_insecure_tls", False):
            raise ValueError("may be false only where the operator sets MONITOR_ALLOW_INSECURE_TLS=true")
        return value


@dataclass(frozen=True, slots=True)
class TcpOptions:
    """A tcp monitor's runtime options (``TcpCheck.options``)."""

    host: str
    port: int
    send: bytes | None = None
    expect: bytes | None = None
    tls: bool = False
    tls_verify: bool = True

    @property
    def expect_text(self) -> str:
        return (self.expect or b"").decode()


# -- the pure part ------------------------------------------------------------------------


def shown(data: bytes, limit: int) -> str:
    """``data`` as a person reads it in a cause or the details: UTF-8 (other bytes as ``\\xNN``),
    CR, LF and tab as ``\\r``, ``\\n``, ``\\t``, other control characters escaped, at most
    ``limit`` characters (then ``...``)."""
    text = bytes(data[: limit * 4]).decode("utf-8", "backslashreplace")  # enough for limit characters
    out: list[str] = []
    size = 0
    for ch in text:
        piece = ch if ch.isprintable() else _escape(ch)
        if size + len(piece) > limit:
            return "".join(out) + "..."
        out.append(piece)
        size += len(piece)
    return "".join(out) + ("..." if len(data) > limit * 4 else "")


def _escape(ch: str) -> str:
    code = ord(ch)
    known = _ESCAPES.get(ch)
    if known is not None:
        return known
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def judge_answer(answer: bytes, expect: str, ended: Ended, timeout: float) -> str | None:
    """The cause of a failed wait for ``expect`` in ``answer`` (None: found), given how the
    wait ``ended`` and the monitor's ``timeout`` (seconds)."""
    if expect.encode() in answer:
        return None
    wanted = f'expected "{shown(expect.encode(), CAUSE_CHARS)}"'
    if not answer:
        if ended == "timeout":
            return f"timed out after {timeout:g}s waiting for the answer (nothing received)"
        return f"{wanted} but the server closed the connection without answering"
    quoted = f'("{shown(answer, CAUSE_CHARS)}")'
    if ended == "full":
        return f"{wanted} not found in the first {MAX_ANSWER_BYTES // 1024} KiB of the answer {quoted}"
    if ended == "timeout":
        return f"{wanted} not found in the answer {quoted} within {timeout:g}s"
    return f"{wanted} not found in the answer {quoted}"


def target_of(scheme: str, host: str, port: int) -> str:
    return f"{scheme}://[{host}]:{port}" if ":" in host else f"{scheme}://{host}:{port}"


async def read_until(wire: Wire, expect: bytes) -> Ended:
    """Read until ``expect`` arrives (searching only the new bytes and the seam), the peer
    closes or the wire is full."""
    searched = 0
    while True:
        if wire.received.find(expect, max(0, searched - len(expect) + 1)) >= 0:
            return "found"
        if wire.full:
            return "full"
        if wire.closed:
            return "closed"
        searched = len(wire.received)
        await wire.more()


# -- the check ----------------------------------------------------------------------------


class TcpTls(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: str | None
    verified: bool


class TcpDetails(ResultDetails):
    answer: str | None = Field(None, description=f"the answer's first {ANSWER_CHARS} characters, escaped")
    tls: TcpTls | None = None
    certificate: Certificate | None = None


class TcpCheck(Check):
    kind: ClassVar[str] = KIND
    Settings: ClassVar[type[BaseModel]] = TcpSettings
    Details: ClassVar[type[ResultDetails] | None] = TcpDetails

    def target(self, settings: TcpSettings) -> str:
        return target_of("tcp+tls" if settings.tls else "tcp", settings.host, settings.port)

    def hosts(self, settings: TcpSettings) -> tuple[str, ...]:
        return (settings.host,)

    def options(self, settings: dict[str, Any] | None, secrets: dict[str, Any] | None) -> TcpOptions:
        valid: TcpSettings = self.stored(settings)
        return TcpOptions(
            host=valid.host,
            port=valid.port,
            send=valid.send.encode() if valid.send else None,
            expect=valid.expect.encode() if valid.expect else None,
            tls=valid.tls,
            tls_verify=valid.tls_verify,
        )

    async def run(self, monitor: MonitorSpec, ctx: CheckContext, started: datetime) -> CheckResult:
        options: TcpOptions = monitor.options
        session = ctx.session
        verify = options.tls_verify or not ctx.allow_insecure_tls
        context = (session.ssl_context if verify else session.insecure_ssl_context) if options.tls else None
        progress = Progress()
        reading = _Reading()
        details: dict[str, Any] = {}

        async def work() -> None:
            wire = await dial(
                session, options.host, options.port, progress, context=context, max_bytes=MAX_ANSWER_BYTES
            )
            if progress.tls is not None:
                details.update(_tls_details(session, progress, verify, started))
            if options.send:
                assert wire.transport is not None
                wire.transport.write(options.send)
            if options.expect:
                progress.phase = "waiting for the answer"
                reading.ended = "timeout"  # unless read_until returns
                reading.ended = await read_until(wire, options.expect)

        error: str | None = None
        failure: Failure | None = None
        try:
            await bounded(session, monitor.timeout_seconds, progress, work)
        except DialError as exc:
            error, failure = exc.message, dial_failure(exc)
        finally:
            if progress.wire is not None:
                progress.wire.close(polite=error is None)
        wire = progress.wire
        if reading.ended is not None and wire is not None:
            # The wait for the answer is judged whether or not the timeout cut it.
            answer = bytes(wire.received)
            error = judge_answer(answer, options.expect_text, reading.ended, monitor.timeout_seconds)
            if error is not None:
                waited = not answer and reading.ended == "timeout"
                failure = Failure.TIMEOUT if waited else Failure.ASSERTION
            if answer:
                details["answer"] = shown(answer, ANSWER_CHARS)
            if wire.first_byte is not None:
                progress.timings["ttfb_ms"] = (wire.first_byte - progress.started) * 1000
        return CheckResult(
            monitor_id=monitor.id,
            time=started,
            ok=error is None,
            latency_ms=progress.latency_ms,
            error=clip_error(error, 500) if error is not None else None,
            timings=progress.timings,
            details=details or None,
            answered=progress.handshake_ms is not None,
            failure=None if error is None else failure,
        )


@dataclass(slots=True)
class _Reading:
    ended: Ended | None = None  # set once the wait for the answer began


def _tls_details(session: HttpSession, progress: Progress, verified: bool, at: datetime) -> dict[str, Any]:
    tls = progress.tls
    assert tls is not None
    got: dict[str, Any] = {"tls": {"version": tls.version(), "verified": verified}}
    der = tls.getpeercert(binary_form=True)
    cert = session.certificates.get(der) if der else None
    if cert is not None:
        got[CERTIFICATE] = certificate_details(cert, at)
    return got
