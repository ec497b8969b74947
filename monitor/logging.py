"""Logging: one schema for every line a process writes, secrets masked on the way out.

structlog's loggers and the standard library's (aiohttp, asyncpg, asyncio, ``warnings``)
go through one handler on stdout, so with ``MONITOR_LOG_FORMAT=json`` every line is one
JSON object with the same base fields (``event``, ``level``, ``timestamp``, ``process``,
``logger``), and every line, whoever wrote it, passes :func:`redact` last. docs/logging.md
describes the schema.

Ids (``monitor_id``, ``event_id``, ``request_id``) are bound with contextvars so every line
of one check, event or request carries them (library lines logged inside it too).
"""

from __future__ import annotations

import functools
import logging
import re
import sys
import threading
from collections.abc import Mapping
from types import TracebackType
from typing import Any, TextIO

import structlog
from aiohttp.http_exceptions import HttpProcessingError
from structlog.typing import EventDict, Processor, WrappedLogger

REDACTED = "[redacted]"

# What a secret looks like in free text, and what is left of it.
_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    # An Authorization (or Proxy-Authorization) header's value, however it is quoted:
    # `Authorization: x`, `'Authorization': 'x'`, `authorization=x`.
    (
        re.compile(r"(?i)(\b(?:proxy-)?authorization['\"]?\s*[:=]\s*['\"]?)[^'\"\r\n}]+"),
        r"\1" + REDACTED,
    ),
    # Credentials of the Bearer and Basic schemes wherever they appear (a header value on its
    # own, e.g. aiohttp's quote of a line too long). At least 8 characters: "basic auth" stays.
    (re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/-]{8,}=*"), r"\1\2" + REDACTED),
    # An API key (monitor/domain/keys.py: mk_<8 hex prefix>_<secret>): the prefix stays, as in a
    # key listing, so a line still says which key it was.
    (re.compile(r"\bmk_([0-9a-f]{8})_[A-Za-z0-9_-]+"), r"mk_\1_" + REDACTED),
    # A Telegram bot token (<bot id>:<35 characters>), also inside a Bot API URL (/bot<token>/).
    # The bot id, which is public, stays.
    (re.compile(r"(?<!\d)(\d{3,})(:|%3[Aa])[A-Za-z0-9_-]{30,}"), r"\1\2" + REDACTED),
    # A password in a URL's user info: postgresql://user:pass@host, redis://:pass@host. Up to
    # the last @ of the authority, so a password holding an unescaped @ goes whole.
    (re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*):[^\s/]*@"), r"\1:" + REDACTED + "@"),
    # A heartbeat's ping token (monitor/api/pings.py): the path /ping/<token> is the secret
    # (any path under /ping/, matched by a route or not: HEAD, a trailing slash, a 404).
    (re.compile(r"/ping/[^/\s?#\"']+"), "/ping/" + REDACTED),
    # A badge token (monitor/api/public.py): /badge/<token> reads a monitor's figures.
    (re.compile(r"/badge/[^/\s?#\"']+"), "/badge/" + REDACTED),
    # A dashboard session's cookie (monitor/domain/session_ids.py), or a single sign-on login's
    # state cookie (monitor/domain/sso.py), as a Cookie or Set-Cookie header carries it: the
    # name stays.
    (re.compile(r"(__Host-monitor_(?:session|sso)=)[^;\s'\"]+"), r"\1" + REDACTED),
    # The query of the single sign-on callback (monitor/api/sso.py): an authorization code and
    # the login's state.
    (re.compile(r"(/api/v1/sso/callback\?)[^\s'\"]+"), r"\1" + REDACTED),
    # The token of an invitation's or a reset's link (monitor/mailer.py), in its fragment.
    (re.compile(r"(/(?:invitation|reset-password)#)[A-Za-z0-9_-]+"), r"\1" + REDACTED),
    # The token of the first run's setup link (monitor/domain/first_run.py), in its query: but in
    # the one line that shows it on purpose (SETUP_EVENT).
    (re.compile(r"(/setup\?(?:[^\s#'\"]*&)?token=)[A-Za-z0-9_-]+"), r"\1" + REDACTED),
    # A password given as a key=value pair (a libpq connection string, a query string).
    (
        re.compile(r"(?i)(\b(?:password|passwd|pwd)\s*=\s*)('[^']*'|\"[^\"]*\"|[^\s&;,'\"]+)"),
        r"\1" + REDACTED,
    ),
)
# One cheap scan that every rule above needs to match: most strings (event names, statuses,
# messages) hold none of it and skip the rules.
_MAYBE = re.compile(
    r"(?i)authorization|bearer|basic|mk_|\d{3}(?::|%3a)[\w-]{30}|://[^\s/]*@|passw|pwd|/ping/|/badge/"
    r"|monitor_session=|monitor_sso=|/sso/callback\?|/invitation#|/reset-password#|/setup\?"
)

# The one deliberate exception to "no secret in a log": the api's line at start with the first
# run's setup link (monitor/api/first_run.py), for the operator of a fresh installation to open.
# Its token works only until the first owner exists (monitor/domain/first_run.py), and only its
# ``url`` field is left as it is.
SETUP_EVENT = "dashboard.setup_token"
_DELIBERATE = {SETUP_EVENT: "url"}

# Field names whose value is a secret whatever it looks like.
_SECRET_KEY = re.compile(r"(?i)(^|_)(password|passwd|secret|token|authorization|api_key|cookie)$")


def redact(text: str) -> str:
    """``text`` with every secret it holds masked: API keys, bot tokens, URL and DSN
    passwords, Authorization values, ping and badge tokens. Pure; what is not a secret is left as it was."""
    if len(text) < 8 or not _MAYBE.search(text):
        return text
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text


def redact_value(value: Any) -> Any:
    """A log field's value with its secrets masked. JSON's own types keep their type; any
    other object is rendered as JSON rendering would (``repr``), then masked."""
    if isinstance(value, str):
        return redact(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, Mapping):
        return {str(k): _masked_field(str(k), v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [redact_value(item) for item in value]
    return redact(repr(value))


@functools.lru_cache(maxsize=1024)
def _secret_key(key: str) -> bool:
    return _SECRET_KEY.search(key) is not None


def _masked_field(key: str, value: Any) -> Any:
    if value is not None and value != "" and _secret_key(key):
        return REDACTED
    return redact_value(value)


def redact_event(logger: WrappedLogger, method: str, event_dict: EventDict) -> EventDict:
    """structlog processor: :func:`redact_value` on every field of the line. It runs after
    exceptions are formatted, so a traceback's text is masked too. The field of a deliberate
    line (``_DELIBERATE``) stays as it is."""
    event = event_dict.get("event")
    kept = _DELIBERATE.get(event) if isinstance(event, str) else None
    return {key: value if key == kept else _masked_field(key, value) for key, value in event_dict.items()}


# The fields every line has, first on the line in this order.
BASE_FIELDS = ("timestamp", "level", "process", "logger", "event")


def _base_first(logger: WrappedLogger, method: str, event_dict: EventDict) -> EventDict:
    ordered = {key: event_dict.pop(key) for key in BASE_FIELDS if key in event_dict}
    ordered.update(event_dict)
    return ordered


def _static(**fields: str) -> Processor:
    def add(logger: WrappedLogger, method: str, event_dict: EventDict) -> EventDict:
        for key, value in fields.items():
            event_dict.setdefault(key, value)
        return event_dict

    return add


class _ParserRefusals(logging.Filter):
    """aiohttp's servers log a request their parser refused (a header over 8,190 bytes, a
    malformed request line) as an ERROR with a traceback whose message quotes the request's
    first bytes. It is a client's mistake, not the server's: one INFO line naming the error's
    class, without the bytes. (The api answers these itself, monitor/api/server.py; this
    covers the scheduler's and alerter's probe ports.)"""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and isinstance(exc, HttpProcessingError):
            record.msg, record.args = "http.request_refused", None
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.refused = type(exc).__name__
        return True


def configure(
    fmt: str = "json", level: str = "info", process: str | None = None, stream: TextIO | None = None
) -> None:
    """Route structlog and the standard library's logging to one handler on stdout (or
    ``stream``: the admin commands log to stderr, so their stdout is only what they print).

    ``fmt`` is ``json`` (one object per line) or ``console`` (readable, for ``make run``);
    ``level`` applies to every logger; ``process`` names the process on every line.
    """
    numeric = logging.getLevelNamesMapping()[level.upper()]
    # Fields every line gets, whether structlog or a library wrote it.
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        _static(process=process or "monitor"),
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: Processor
    if fmt == "console":
        renderer = structlog.dev.ConsoleRenderer(colors=(stream or sys.stdout).isatty())
    else:
        renderer = structlog.processors.JSONRenderer()
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*shared, structlog.stdlib.ExtraAdder(allow=("refused",))],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            redact_event,
            _base_first,
            renderer,
        ],
    )
    handler = logging.StreamHandler(stream or sys.stdout)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in root.handlers[:]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(numeric)
    server_log = logging.getLogger("aiohttp.server")
    if not any(isinstance(f, _ParserRefusals) for f in server_log.filters):
        server_log.addFilter(_ParserRefusals())
    # warnings.warn (a ResourceWarning, a DeprecationWarning) becomes a line like any other.
    logging.captureWarnings(True)

    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=True,
    )
    # A crash outside the event loop is a line of the schema too, not a bare traceback on stderr.
    sys.excepthook = _log_uncaught
    threading.excepthook = _log_uncaught_in_thread
    sys.unraisablehook = _log_unraisable


def _log_uncaught(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    if issubclass(kind, KeyboardInterrupt):
        sys.__excepthook__(kind, exc, tb)
        return
    get("monitor").critical("process.crashed", exc_info=(kind, exc, tb))


def _log_uncaught_in_thread(args: threading.ExceptHookArgs) -> None:
    if args.exc_value is None:
        return
    get("monitor").error(
        "thread.crashed",
        thread=args.thread.name if args.thread else None,
        exc_info=(args.exc_type, args.exc_value, args.exc_traceback),
    )


def _log_unraisable(unraisable: Any) -> None:
    # An exception Python could not raise (in __del__, a finalizer): "Exception ignored in ...".
    exc = unraisable.exc_value
    get("monitor").warning(
        "exception.unraisable",
        message=unraisable.err_msg or "Exception ignored in",
        object=repr(unraisable.object),
        exc_info=(type(exc), exc, unraisable.exc_traceback) if exc is not None else None,
    )


def get(name: str | None = None) -> structlog.stdlib.BoundLogger:
    return structlog.get_logger(name)


# ``with bound(monitor_id=...):`` binds ids to every log line inside the block.
bound = structlog.contextvars.bound_contextvars
