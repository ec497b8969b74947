"""Check types are one seam: what differs by type is asked of the type, never branched on by name.

A type is a module under ``monitor/checks/`` and its line in the registry; nothing else in the
package names one. An AST walk finds every string constant that is a registered type's name
outside ``monitor/checks/``: each is either in ``ELSEWHERE`` (the same word meaning something
else) or a branch on a type, which fails here.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from monitor.checks import REGISTRY
from monitor.checks.base import Check, Registry

ROOT = Path(__file__).resolve().parents[2] / "monitor"
# (module, word): the word is no check type there.
ELSEWHERE = frozenset(
    {
        ("monitor/api/openapi.py", "http"),  # the OpenAPI security scheme's type
        ("monitor/config.py", "http"),  # a URL scheme
        ("monitor/net/policy.py", "http"),  # a URL scheme
        ("monitor/net/proxy_wire.py", "http"),  # a URL scheme (an absolute-form request)
        ("monitor/net/target.py", "tls"),  # a URL scheme's transport
        ("monitor/channels/email.py", "tls"),  # an SMTP server's security setting
        ("monitor/channels/smtp.py", "tls"),
        ("monitor/config.py", "tls"),  # MONITOR_SMTP_SECURITY
        ("monitor/mailer.py", "tls"),  # the same, and its default port
        ("monitor/domain/csrf.py", "http"),  # a URL scheme (its default port)
    }
)


def type_names() -> list[tuple[str, int, str]]:
    kinds = set(REGISTRY.kinds)
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        module = str(path.relative_to(ROOT.parent))
        # Importers translate a peer's types into ours by name: that table is their job.
        if module.startswith(("monitor/checks/", "monitor/ascode/importers/")):
            continue
        for node in ast.walk(ast.parse(path.read_text(), module)):
            if isinstance(node, ast.Constant) and node.value in kinds:
                found.append((module, node.lineno, node.value))
    return found


def test_no_module_outside_the_checks_names_a_check_type() -> None:
    branches = [f"{m}:{line}: {word!r}" for m, line, word in type_names() if (m, word) not in ELSEWHERE]
    assert not branches, "ask the type (monitor/checks/base.py) instead of naming it:\n" + "\n".join(branches)
    stale = ELSEWHERE - {(m, word) for m, _, word in type_names()}
    assert not stale, f"no longer there, take it out of ELSEWHERE: {sorted(stale)}"


# -- the registry -------------------------------------------------------------------------


class _Settings(BaseModel):
    host: str


def _type(kind: str, default: bool = False) -> type[Check]:
    attributes: dict[str, Any] = {"kind": kind, "Settings": _Settings, "default": default}
    return type(f"{kind.title()}Check", (Check,), attributes)


def test_the_default_type_is_http() -> None:
    assert REGISTRY.default == "http"
    assert [kind for kind in REGISTRY.kinds if REGISTRY.get(kind).default] == ["http"]


def test_the_registry_refuses_a_second_default_and_a_second_name() -> None:
    registry = Registry()
    registry.register(_type("first", default=True))
    registry.register(_type("other"))
    with pytest.raises(ValueError, match="'second' is a second default type"):
        registry.register(_type("second", default=True))
    with pytest.raises(ValueError, match="registered twice"):
        registry.register(_type("other"))
    assert (registry.default, registry.kinds) == ("first", ["first", "other"])


def test_every_type_has_settings_and_declares_its_secrets_among_them() -> None:
    for kind in REGISTRY.kinds:
        check = REGISTRY.get(kind)
        assert issubclass(check.Settings, BaseModel), kind
        assert check.secrets <= set(check.Settings.model_fields), kind
    assert REGISTRY.get("http").secrets == {"auth", "headers"}


class _Plain(Check):
    kind: ClassVar[str] = "plain"
    Settings: ClassVar[type[BaseModel]] = _Settings


def test_a_type_without_secrets_stores_and_shows_its_settings_as_they_are() -> None:
    check = _Plain()
    settings = _Settings(host="db.example.com")
    assert check.to_stored(settings) == ({"host": "db.example.com"}, None)
    assert check.whole("plain://db", {"host": "db.example.com"}, None) == {"host": "db.example.com"}
    assert check.unmask({"host": "x"}, {"host": "db.example.com"}) == {"host": "x"}
    assert check.shown("plain://db", {"host": "db.example.com"}, None) == {
        "url": "plain://db",
        "host": "db.example.com",
    }
    assert check.legacy_columns({"host": "db.example.com"}) == {}


# -- a new type: one module and its line in the registry --------------------------------------

NEW_TYPE = '''
from datetime import datetime
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from monitor.checks import REGISTRY
from monitor.checks.base import Check, Host, ResultDetails
from monitor.models import CheckResult


class EchoSettings(BaseModel):
    """A monitor of an echo service."""

    model_config = ConfigDict(extra="forbid")
    host: Host
    port: int = Field(7, ge=1, le=65535)


class EchoDetails(ResultDetails):
    echoed: bool | None = None


class EchoCheck(Check):
    kind: ClassVar[str] = "echo"
    Settings: ClassVar[type[BaseModel]] = EchoSettings
    Details: ClassVar[type[ResultDetails] | None] = EchoDetails

    def target(self, settings: Any) -> str:
        return f"echo://{settings.host}:{settings.port}"

    def hosts(self, settings: Any) -> tuple[str, ...]:
        return (settings.host,)

    async def run(self, monitor: Any, ctx: Any, started: datetime) -> CheckResult:
        return CheckResult(monitor.id, started, ok=True, details={"echoed": True})


REGISTRY.register(EchoCheck)  # the registration line

# Nothing else is edited: the api has its bodies, answers and document.
from monitor.api import openapi
from monitor.domain.schemas import monitors as schemas
from monitor.domain.monitor_types import type_fields

check = REGISTRY.get("echo")
given = {"type": "echo", "name": "e", "host": "Echo.Example.COM"}
body = schemas.validate_create(given, {"min_interval_seconds": 30})
assert type(body).__name__ == "EchoMonitorCreate"
assert schemas.PATCH_BODIES["echo"].__name__ == "EchoMonitorPatch"
assert check.to_stored(body) == ({"host": "echo.example.com", "port": 7}, None)
assert check.target(body) == "echo://echo.example.com:7"
settings = {"host": "echo.example.com", "port": 7}
row = {"type": "echo", "url": "echo://echo.example.com:7", "settings": settings,
       "secret_view": None, "ping_token": None}
assert type_fields(row, "") == {"url": "echo://echo.example.com:7", "host": "echo.example.com", "port": 7}
found = openapi.document(openapi.Limits(30))["components"]["schemas"]
assert {"EchoMonitorCreate", "EchoMonitorPatch"} <= set(found)
assert "port" in found["Monitor"]["properties"]
assert '"echoed"' in found["Check"]["properties"]["details"]["description"]
print("ok")
'''


def test_a_new_type_is_one_module_and_its_registration_line() -> None:
    done = subprocess.run([sys.executable, "-c", NEW_TYPE], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.strip()) == (0, "ok"), done.stderr[-3000:]
