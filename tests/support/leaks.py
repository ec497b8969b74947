"""The whole run's log scan: no password, session id, TOTP secret or token in any log.

Tests used to read their own process's log for the secrets they had made; a secret logged by
another process of the run (a scheduler, the module's shared api) or by a test that forgot to
look went unseen. Here every helper that hands out a secret registers it with :func:`secret`
(the kind it is, never printed), every process of ``ProcessFactory`` registers its log file
with :func:`log_file`, and the ``pytest_sessionfinish`` hook of ``tests/conftest.py`` reads each
log once at the end of the run and fails the run on any secret found, naming the file and the
kind. One pass over the files: each is read once and searched for every secret (a few hundred
short strings in a few megabytes of logs: well under a second).

One line is skipped: the api's ``dashboard.setup_token`` (``DELIBERATE``), which shows the first
run's setup link on purpose (monitor/logging.py); a setup token anywhere else is a leak.

Secrets shorter than :data:`MIN_LENGTH` are not registered: a short value ("short", a six-digit
TOTP code) could be anywhere in a log without having leaked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

MIN_LENGTH = 8
# The events of the lines that show a secret on purpose (monitor/logging.py's SETUP_EVENT).
DELIBERATE = ("dashboard.setup_token",)

_secrets: dict[str, str] = {}  # the secret -> its kind ("password", "session id", ...)
_logs: dict[Path, None] = {}  # every log file a process of the run wrote, in order


def secret(kind: str, value: str | None) -> None:
    """Register a secret handed out during the run (a password given to a user, a key, a
    session id, a TOTP secret, an invitation or reset token)."""
    if value and len(value) >= MIN_LENGTH:
        _secrets.setdefault(value, kind)


def log_file(path: Path) -> None:
    """Register a log file that a process of the run writes."""
    _logs[path] = None


def findings(logs: Iterable[Path], secrets: Mapping[str, str]) -> list[str]:
    """Where a secret is: "<file>: a <kind>" once per file and kind; the secret is never named."""
    found: list[str] = []
    for path in logs:
        try:
            text = path.read_text(errors="replace")
        except FileNotFoundError:
            continue
        if any(event in text for event in DELIBERATE):
            text = "\n".join(line for line in text.splitlines() if not _deliberate(line))
        kinds = sorted({kind for value, kind in secrets.items() if value in text})
        found.extend(f"{path}: a {kind}" for kind in kinds)
    return found


def _deliberate(line: str) -> bool:
    return any(f'"event": "{event}"' in line or f" {event} " in line for event in DELIBERATE)


def scan() -> list[str]:
    """:func:`findings` for every log and secret registered so far in this run."""
    return findings(list(_logs), dict(_secrets))
