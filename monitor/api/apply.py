"""``POST /api/v1/apply`` and ``GET /api/v1/config/schema``: configuration as code over HTTP, what
``monitor apply`` and ``monitor config schema`` do on the command line (docs/config-as-code.md,
"Over the API"); ``monitor.ascode`` does the work, as the caller (their role, their audit).

The request carries the files and the value of each ``${NAME}`` they refer to: the server never
reads its own environment or files for a request (``Secrets(read_file=None)`` refuses
``file:``). Its body may be larger than other requests' (``MAX_BODY_BYTES``, read by the handler
against that cap; ``app.LARGE_BODIES``). Files that cannot be applied answer 422 with every
problem at its place (``error.problems``), and nothing is applied.

Nothing sent as a secret comes back: the plan masks the fields that hold secrets, and any other
string of an answer that holds one of the values sent (a reference used in a plain field, a
message quoting a value) has it masked too. Neither the files nor the secrets are logged.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from aiohttp import web

from monitor import logging as mlog
from monitor.api.context import DEPS
from monitor.api.errors import error_response
from monitor.api.guard import actor
from monitor.api.params import json_object
from monitor.ascode import applying
from monitor.ascode.reading import Invalid, Secrets
from monitor.ascode.schema import document_schema
from monitor.domain.errors import validated
from monitor.domain.roles import authorize
from monitor.domain.schemas.config import ApplyRequest
from monitor.secrets import MASK

log = mlog.get(__name__)

PATH = "/api/v1/apply"
SCHEMA_PATH = "/api/v1/config/schema"
MAX_BODY_BYTES = 5 * 1024 * 1024
# A value sent as a secret is masked wherever it appears within a string from this length up;
# a shorter one only where it is the whole string (a "1" is not masked out of every number).
_WITHIN_FROM = 4


def masked(value: Any, secrets: frozenset[str]) -> Any:
    """``value`` (an answer's JSON) with every secret value given as ``MASK``."""
    if isinstance(value, str):
        if value in secrets:
            return MASK
        for secret in secrets:
            if len(secret) >= _WITHIN_FROM and secret in value:
                value = value.replace(secret, MASK)
        return value
    if isinstance(value, dict):
        return {k: masked(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [masked(v, secrets) for v in value]
    return value


async def apply_config(request: web.Request) -> web.Response:
    body = validated(ApplyRequest, await json_object(request, limit=MAX_BODY_BYTES))
    secrets = frozenset(v for v in body.secrets.values() if v)
    try:
        plan = await applying.apply_texts(
            request.app[DEPS],
            actor(request),
            sorted(body.files.items()),  # name order, as `monitor apply -f DIR` reads a directory
            Secrets(body.secrets, read_file=None),
            prune=body.prune,
            dry_run=body.dry_run,
        )
    except Invalid as exc:
        problems = [masked(p.as_json(), secrets) for p in exc.problems]
        first = masked(str(exc.problems[0]), secrets) if exc.problems else ""
        log.info("api.apply_refused", problems=len(problems), dry_run=body.dry_run)
        return error_response(
            422,
            "invalid",
            f"{len(problems)} problem(s) in the files, nothing applied; the first: {first}",
            problems=problems,
        )
    answer = plan.as_json()
    log.info("api.apply_done", applied=plan.applied, dry_run=body.dry_run, prune=body.prune,
             **answer["counts"])  # fmt: skip
    return web.json_response(masked(answer, secrets))


@functools.cache
def _schema_bytes() -> bytes:
    return json.dumps(document_schema(), separators=(",", ":")).encode()


async def config_schema(request: web.Request) -> web.Response:
    authorize(actor(request), applying.RESOURCE, "read")
    return web.Response(body=_schema_bytes(), content_type="application/json")


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_post(PATH, apply_config)
    router.add_get(SCHEMA_PATH, config_schema)
