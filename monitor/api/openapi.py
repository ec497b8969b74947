"""``/api/v1/openapi.json``: the OpenAPI 3.1 description of the API.

Schemas come from pydantic: the request models that validate input and the response models
that describe each answer (``monitor/domain/schemas/``; the API's own, its error and probes, in
``responses.py``); only the paths are written here. The document is built once per set of the
limits that depend on configuration (the minimum interval, the largest body cap, whether
tls_verify may be false) and served from that cache.
"""

from __future__ import annotations

import functools
import json
from typing import Any, NamedTuple

from aiohttp import web
from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from monitor import __version__
from monitor.api import openapi_config, openapi_posts, openapi_setup, openapi_signin, openapi_sso
from monitor.api import responses as out
from monitor.api.context import SETTINGS
from monitor.api.params import MAX_ID
from monitor.checks import REGISTRY as CHECKS
from monitor.checks.heartbeat import MAX_BODY_BYTES as MAX_PING_BODY_BYTES
from monitor.checks.http_settings import DEFAULT_HTTP_MAX_BODY_BYTES
from monitor.config import Settings
from monitor.domain.history import BUCKETS
from monitor.domain.monitor_lists import INCLUDES, MAX_QUERY, SORTS
from monitor.domain.monitors import STATUSES
from monitor.domain.schemas import channels as chan
from monitor.domain.schemas import history as past
from monitor.domain.schemas import incidents as incident_models
from monitor.domain.schemas import keys as key_models
from monitor.domain.schemas import maintenance as maint
from monitor.domain.schemas import members as people
from monitor.domain.schemas import monitor_answers as shown
from monitor.domain.schemas import monitors as schemas
from monitor.domain.schemas import posts as post_models
from monitor.domain.schemas import screenshots as shots
from monitor.domain.schemas import status_pages as pages
from monitor.domain.schemas import summary as glance
from monitor.domain.schemas import trials
from monitor.domain.schemas.locations import LOCATION as LOCATION_NAME

REF = "#/components/schemas/{model}"
JSON = "application/json"

# -- schemas -------------------------------------------------------------------------------

_PATCHES: list[type[BaseModel]] = list(schemas.PATCH_BODIES.values())
_REQUESTS: list[type[BaseModel]] = [
    schemas.MonitorCreate, schemas.MonitorUpdate, *_PATCHES, chan.ChannelCreate, chan.ChannelPatch,
    key_models.KeyCreate, people.MemberAdd, people.MemberPatch, incident_models.IncidentAcknowledge,
]  # fmt: skip
MODELS: list[tuple[type[BaseModel], JsonSchemaMode]] = [
    *((m, "validation") for m in _REQUESTS),
    *((m, "serialization") for m in (out.Error, out.Health, shown.Monitor, shown.MonitorList,
                                     past.CheckList, past.Incident, past.IncidentList, past.Uptime,
                                     past.UptimeWindows, past.Stats, glance.Summary, chan.Channel,
                                     chan.ChannelList, chan.Accepted, key_models.Key, key_models.NewKey,
                                     key_models.KeyList, trials.TrialResult)),
    (maint.MaintenanceCreate, "validation"), (maint.MaintenancePatch, "validation"),
    (maint.MaintenancePreview, "validation"), (maint.MaintenancePreviewAnswer, "serialization"),
    (maint.MaintenanceWindow, "serialization"), (maint.MaintenanceWindowList, "serialization"),
    (pages.StatusPageCreate, "validation"), (pages.StatusPagePatch, "validation"),
    (pages.StatusPage, "serialization"), (pages.StatusPageList, "serialization"),
    (pages.BadgeToken, "serialization"),
    (people.Member, "serialization"), (people.MemberList, "serialization"),
    (people.AuditList, "serialization"),
    *openapi_signin.MODELS,
    *openapi_setup.MODELS,
    *openapi_config.MODELS,
    *openapi_posts.MODELS,
    (shots.MaskList, "validation"), (shots.Screenshot, "serialization"),
    (shots.ScreenshotList, "serialization"),
]  # fmt: skip


def _refuse_null(schema: dict[str, Any], model: type[BaseModel]) -> None:
    """Take null out of the PATCH fields whose ``_not_null`` validator refuses it: their type
    allows None only as the "not given" default, which the schema should not offer."""
    validators = model.__pydantic_decorators__.field_validators
    found = [v for n, v in validators.items() if n.startswith("_not_null")]
    for name in (f for v in found for f in v.info.fields):
        field = schema["properties"][name]
        field.pop("default", None)
        branches = [s for s in field.pop("anyOf") if s != {"type": "null"}]
        if len(branches) == 1:
            field.update(branches[0])
        else:
            field["anyOf"] = branches


def _allows_null(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind) or schema.get("const", 0) is None:
        return True
    return any(_allows_null(branch) for branch in [*schema.get("anyOf", ()), *schema.get("oneOf", ())])


def _drop_null_defaults(schemas_by_name: dict[str, Any]) -> None:
    """An answer's field left out when it has no value (``SkipJsonSchema[None]``) gets pydantic's
    ``default: null`` though its type has no null: validators (openapi-spec-validator, Spectral)
    refuse a default the schema itself does not allow."""
    for schema in schemas_by_name.values():
        for field in schema.get("properties", {}).values():
            if "default" in field and field["default"] is None and not _allows_null(field):
                del field["default"]


def _components(limits: Limits) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """(the JSON schemas by name, a ``$ref`` by model name)."""
    refs, top = models_json_schema(MODELS, ref_template=REF)
    found = top["$defs"]
    patches: list[type[BaseModel]] = [
        *_PATCHES,
        chan.ChannelPatch,
        maint.MaintenancePatch,
        pages.StatusPagePatch,
        post_models.PostPatch,
    ]
    for model in patches:
        _refuse_null(found[model.__name__], model)
    _drop_null_defaults(found)
    # These limits are settings (a validation context), so pydantic cannot know them.
    bodies = [*schemas.CREATE_BODIES.values(), *schemas.PATCH_BODIES.values()]
    for model in bodies:
        found[model.__name__]["properties"]["interval_seconds"].update(
            minimum=limits.min_interval_seconds, maximum=schemas.MAX_INTERVAL_SECONDS
        )
    for model in bodies:  # http's
        cap = found[model.__name__]["properties"].get("max_body_bytes")
        if cap is not None:
            cap["maximum"] = limits.http_max_body_bytes
    for model in bodies:  # http's and every type's with a tls_verify (tcp)
        verify = found[model.__name__]["properties"].get("tls_verify")
        if verify is not None and not limits.allow_insecure_tls:
            verify.pop("anyOf", None)
            verify.update(type="boolean", const=True)
            verify["description"] = (
                verify.get("description", "")
                + "; this server does not allow false (MONITOR_ALLOW_INSECURE_TLS)"
            )
    for kind in (k for k, check in schemas.TYPED.items() if not check.scheduled):  # a heartbeat
        for model in (schemas.CREATE_BODIES[kind], schemas.PATCH_BODIES[kind]):
            found[model.__name__]["properties"]["locations"].update(
                maxItems=0,
                description=f"a {kind} monitor is not checked from locations: its pings come to the api",
            )
    return found, {model.__name__: ref for (model, _), ref in refs.items()}


# -- operations ------------------------------------------------------------------------------

ERRORS = {
    400: "A malformed request: the body is not a JSON object (`invalid_json`), a query parameter "
    "is out of range (`invalid`), a single sign-on refused (`state_unknown`, `state_expired`, "
    "`state_mismatch`, `sso_refused`, `code_refused`, `id_token_*` naming the check), or a "
    "monitor's target or a channel's URL or host is an address the "
    "SSRF policy denies (`target_blocked`; the message names the `MONITOR_ALLOW_CIDRS` entry that "
    "would admit it).",
    401: "No API key, a malformed `Authorization` header, or an unknown or revoked key; or no "
    "session, or one that ended; on signing in, a wrong e-mail, password or one-time code "
    "(`wrong_credentials`, `code_required`, `wrong_code`).",
    403: "The caller's role may not do this (`forbidden`; the message names the role needed), or a role "
    "given is higher than the caller's own (`field` is `role`); a write with the session cookie from "
    "another site or without its CSRF token (`csrf`); a wrong current password (`wrong_password`); "
    "an account the user is not a member of; on the first run, a setup token that is wrong, expired or "
    "used (`bad_setup_token`).",
    404: "No such object in the caller's account; another account's object answers the same.",
    409: "The account already has its quota of monitors or status pages (`quota_exceeded`), another "
    "status page has this slug or domain, the user is a member already, or the change would leave the "
    "account without an owner (`conflict`); on the first run, a user exists already (`already_set_up`); "
    "an incident that has ended (`not_open`) or was acknowledged already (`already_acknowledged`) cannot "
    "be acknowledged.",
    412: "`If-Match` does not match the monitor's current `ETag` (`precondition_failed`).",
    413: "The request body is larger than the API accepts (`too_large`; the message says the limit).",
    415: "The body is not declared JSON: send `Content-Type: application/json` (`unsupported_media_type`).",
    422: "The body breaks the schema (`invalid`); `field` names the field at fault.",
    429: "Too many requests with this key (`rate_limited`), too many failed sign-ins "
    "or wrong setup tokens (`too_many_attempts`); retry after `Retry-After` seconds.",
    502: "The identity provider is unreachable or answered wrongly (`provider_unreachable`, "
    "`provider_answer`, `provider_document`, `provider_keys`, `provider_token`).",
    503: "The database is unreachable (`database_unavailable`), or, for a trial check, Redis "
    "(`redis_unavailable`) or every scheduler (`no_scheduler`); retry after `Retry-After` seconds.",
}
RETRY_AFTER = {"Retry-After": {"required": True, "schema": {"type": "integer", "minimum": 1}}}
# Every authenticated operation can answer these, whatever it does (403: a role that may not).
ALWAYS = (401, 403, 429, 503)
WITH_BODY = (400, 413, 415, 422)


def _json(ref: dict[str, Any], description: str, headers: dict[str, Any] | None = None) -> dict[str, Any]:
    response: dict[str, Any] = {"description": description, "content": {JSON: {"schema": ref}}}
    if headers:
        response["headers"] = headers
    return response


def _query(name: str, schema: dict[str, Any], description: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description,
            **extra}  # fmt: skip


LIMIT = _query("limit", {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}, "page size")
CURSOR = _query("cursor", {"type": "string"}, "the `next_cursor` of the previous page")
TIME = {"type": "string", "format": "date-time"}
FROM = _query("from", TIME, "start of the range (RFC 3339, inclusive), from 1970-01-01 to 9999-01-01")
TO = _query("to", TIME, "end of the range (RFC 3339, exclusive), from 1970-01-01 to 9999-01-01")
WINDOW = _query(
    "window",
    {"type": "string", "pattern": r"^\d{1,4}[hd](,\d{1,4}[hd]){0,7}$", "examples": ["24h", "24h,7d,30d,90d"]},
    "one window (answered flat) or up to 8, comma-separated (answered by window), each at most "
    "3650d; instead of `from`/`to`. Default 24h.",
)
AT = _query(
    "checked_from",
    {"type": "string", "pattern": LOCATION_NAME.pattern},
    "only the checks made from this location (a monitor with locations)",
)
BUCKET = _query("bucket", {"type": "string", "enum": list(BUCKETS), "default": "1h"}, "bucket size")
TAG = _query(
    "tag",
    {"type": "array", "items": {"type": "string", "pattern": schemas.TAG.pattern}},
    "only monitors with every tag given",
    style="form",
    explode=True,
)
Q = _query(
    "q",
    {"type": "string", "maxLength": MAX_QUERY, "pattern": "^[^\\x00]*$"},
    "only monitors whose name or target (URL, host) contains this, ignoring case",
)
TYPE = _query("type", {"type": "string", "enum": list(CHECKS.kinds)}, "only monitors of this type")
IN_LOCATION = _query(
    "location",
    {"type": "string", "pattern": LOCATION_NAME.pattern},
    "only monitors checked from this location",
)
SORT = _query(
    "sort",
    {"type": "string", "enum": list(SORTS), "default": "id"},
    "order: `id` (oldest first), `name`, `state` (the worst first: down, degraded, waiting, up, paused), "
    "`last_check` (the most recent first); each pages by keyset",
)
STATUS = _query("status", {"type": "string", "enum": list(STATUSES)}, "only this status")
INCLUDE = _query(
    "include",
    {"type": "array", "items": {"type": "string", "enum": list(INCLUDES)}},
    "add each monitor's uptime over these windows, or its mean response time of each of the last 24 hours "
    "(`response_24h`)",
    style="form",
    explode=False,
)
IF_MATCH = {
    "name": "If-Match",
    "in": "header",
    "required": False,
    "schema": {"type": "string"},
    "description": "the `ETag` of the monitor as read; the update is refused (412) if it changed",
}
ETAG = {"ETag": {"required": True, "schema": {"type": "string"}, "description": "the monitor's version"}}
LOCATION = {"Location": {"required": True, "schema": {"type": "string"}, "description": "the new object"}}


def _id(what: str) -> dict[str, Any]:
    return {"name": "id", "in": "path", "required": True, "description": f"the {what}'s id",
            "schema": {"type": "integer", "format": "int64", "minimum": 1, "maximum": MAX_ID}}  # fmt: skip


def _links(*operation_ids: str) -> dict[str, Any]:
    """Links from a created object's ``id`` to the operations on it (for clients and fuzzers)."""
    return {op: {"operationId": op, "parameters": {"id": "$response.body#/id"}} for op in operation_ids}


class _Builder:
    def __init__(self, refs: dict[str, dict[str, Any]]) -> None:
        self.refs = refs
        self.paths: dict[str, dict[str, Any]] = {}

    def add(
        self,
        method: str,
        path: str,
        operation_id: str,
        summary: str,
        ok: dict[int, dict[str, Any]],
        *,
        errors: tuple[int, ...] = (),
        parameters: tuple[dict[str, Any], ...] = (),
        body: tuple[str, dict[str, Any]] | None = None,
        public: bool = False,
        tag: str,
    ) -> None:
        statuses = set(errors) | set(() if public else ALWAYS) | set(WITH_BODY if body else ())
        responses: dict[str, Any] = {str(status): response for status, response in ok.items()}
        for status in sorted(statuses):
            retry = RETRY_AFTER if status in (429, 503) else None
            responses[str(status)] = _json(self.refs["Error"], ERRORS[status], retry)
        operation: dict[str, Any] = {"operationId": operation_id, "summary": summary, "tags": [tag],
                                     "responses": responses}  # fmt: skip
        if parameters:
            operation["parameters"] = list(parameters)
        if body is not None:
            model, example = body
            operation["requestBody"] = {
                "required": True,
                "content": {JSON: {"schema": self.refs[model], "example": example}},
            }
        if public:
            operation["security"] = []
        self.paths.setdefault(path, {})[method] = operation


MONITOR_EXAMPLE = {"name": "Home page", "url": "https://example.com/", "interval_seconds": 60,
                   "expected_status": ["200-399"], "tags": ["prod"],
                   "assertions": [{"type": "keyword", "keyword": "Welcome"}]}  # fmt: skip
TAGS = ("monitors", "history", "channels", "maintenance", "status-pages", "keys", "members", "audit",
        "account", "reports", "config", "heartbeats", "session", "public", "meta")  # fmt: skip
MAINTENANCE_EXAMPLE = {"name": "Sunday patching", "tags": ["prod"], "notify": True,
                       "recurring": {"rrule": "FREQ=WEEKLY;BYDAY=SU;BYHOUR=2", "duration_minutes": 60,
                                     "timezone": "Europe/Berlin"}}  # fmt: skip
MONITOR_OPS = ("getMonitor", "updateMonitor", "deleteMonitor", "listChecks", "listIncidents", "getUptime",
               "getStats")  # fmt: skip


def _paths(refs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    b = _Builder(refs)
    r = refs
    # fmt: off
    monitor_id, channel_id, key_id = _id("monitor"), _id("channel"), _id("key")
    b.add("post", "/api/v1/monitors", "createMonitor", "Create a monitor", tag="monitors",
          ok={201: {**_json(r["Monitor"], "The monitor, as created.", {**LOCATION, **ETAG}),
                    "links": _links(*MONITOR_OPS)}},
          errors=(409,), body=("MonitorCreate", MONITOR_EXAMPLE))
    b.add("post", "/api/v1/monitors/test", "testMonitor",
          "Check a monitor's body once through a scheduler, saving nothing (editor and up; 503 "
          "`no_scheduler` when no scheduler answers within the check's timeout and a few seconds)",
          tag="monitors", ok={200: _json(r["TrialResult"], "The check's result.")},
          body=("MonitorCreate", MONITOR_EXAMPLE))
    b.add("get", "/api/v1/monitors", "listMonitors", "List monitors (searched, filtered, sorted; keyset)",
          tag="monitors", ok={200: _json(r["MonitorList"], "One page of monitors.")}, errors=(400,),
          parameters=(LIMIT, CURSOR, Q, TAG, STATUS, TYPE, IN_LOCATION, SORT, INCLUDE))
    b.add("get", "/api/v1/monitors/{id}", "getMonitor", "Read a monitor", tag="monitors",
          ok={200: _json(r["Monitor"], "The monitor.", ETAG)}, errors=(404,), parameters=(monitor_id,))
    b.add("patch", "/api/v1/monitors/{id}", "updateMonitor",
          "Change a monitor (only the fields given; pause and resume with `paused`)", tag="monitors",
          ok={200: _json(r["Monitor"], "The monitor, as changed.", ETAG)}, errors=(404, 412),
          parameters=(monitor_id, IF_MATCH), body=("MonitorUpdate", {"paused": True}))
    b.add("delete", "/api/v1/monitors/{id}", "deleteMonitor", "Delete a monitor and its history",
          tag="monitors", ok={204: {"description": "Deleted."}}, errors=(404,), parameters=(monitor_id,))
    b.add("get", "/api/v1/monitors/{id}/checks", "listChecks", "A monitor's checks, newest first",
          tag="history", ok={200: _json(r["CheckList"], "One page of checks.")}, errors=(400, 404),
          parameters=(monitor_id, FROM, TO, LIMIT, CURSOR, AT))
    b.add("get", "/api/v1/monitors/{id}/incidents", "listIncidents",
          "A monitor's incidents (overlapping from/to), newest first", tag="history",
          ok={200: _json(r["IncidentList"], "One page of incidents.")}, errors=(400, 404),
          parameters=(monitor_id, FROM, TO, LIMIT, CURSOR))
    from monitor.api.openapi_exports import add_streams  # it builds on this module's parts
    from monitor.api.openapi_incidents import add_incidents  # it builds on this module's parts

    add_streams(b)

    add_incidents(b)
    from monitor.api.openapi_screenshots import add_screenshots  # it builds on this module's parts

    add_screenshots(b)
    b.add("get", "/api/v1/monitors/{id}/uptime", "getUptime",
          "Uptime over one window, several windows, or from/to (paused time excluded)", tag="history",
          ok={200: _json({"anyOf": [r["Uptime"], r["UptimeWindows"]]},
                         "`Uptime` for one window or a range; `UptimeWindows` for several.")},
          errors=(400, 404), parameters=(monitor_id, WINDOW, FROM, TO))
    b.add("get", "/api/v1/monitors/{id}/stats", "getStats",
          "Response-time statistics per hour or day (at most 2400 buckets)", tag="history",
          ok={200: _json(r["Stats"], "Buckets with checks, oldest first.")}, errors=(400, 404),
          parameters=(monitor_id, BUCKET, FROM, TO))
    b.add("get", "/api/v1/summary", "getSummary", "The account at a glance", tag="account",
          ok={200: _json(r["Summary"], "Monitors by status, and those down.")})
    b.add("post", "/api/v1/channels", "createChannel", "Create an alert channel", tag="channels",
          ok={201: {**_json(r["Channel"], "The channel, as created.", LOCATION),
                    "links": _links("getChannel", "updateChannel", "deleteChannel", "testChannel")}},
          body=("ChannelCreate", {"kind": "telegram", "name": "On call", "config": {"chat_id": "-100123"}}))
    b.add("get", "/api/v1/channels", "listChannels", "List alert channels", tag="channels",
          ok={200: _json(r["ChannelList"], "One page of channels.")}, errors=(400,),
          parameters=(LIMIT, CURSOR))
    b.add("get", "/api/v1/channels/{id}", "getChannel", "Read a channel", tag="channels",
          ok={200: _json(r["Channel"], "The channel.")}, errors=(404,), parameters=(channel_id,))
    b.add("patch", "/api/v1/channels/{id}", "updateChannel", "Rename a channel or change its settings",
          tag="channels", ok={200: _json(r["Channel"], "The channel, as changed.")}, errors=(404,),
          parameters=(channel_id,), body=("ChannelPatch", {"name": "Night shift"}))
    b.add("delete", "/api/v1/channels/{id}", "deleteChannel", "Delete a channel (detaching it)",
          tag="channels", ok={204: {"description": "Deleted."}}, errors=(404,), parameters=(channel_id,))
    b.add("post", "/api/v1/channels/{id}/test", "testChannel",
          "Send a test message through the alerter", tag="channels",
          ok={202: _json(r["Accepted"], "Queued for the alerter.")}, errors=(404,), parameters=(channel_id,))
    window_id = _id("maintenance window")
    b.add("post", "/api/v1/maintenance", "createMaintenance", "Create a maintenance window",
          tag="maintenance", ok={201: {**_json(r["MaintenanceWindow"], "The window, as created.", LOCATION),
                    "links": _links("getMaintenance", "updateMaintenance", "deleteMaintenance")}},
          body=("MaintenanceCreate", MAINTENANCE_EXAMPLE))
    b.add("get", "/api/v1/maintenance", "listMaintenance", "List maintenance windows", tag="maintenance",
          ok={200: _json(r["MaintenanceWindowList"], "One page of windows.")}, errors=(400,),
          parameters=(LIMIT, CURSOR))
    b.add("post", "/api/v1/maintenance-preview", "previewMaintenance",
          "The next occurrences of a schedule, before saving it (nothing is stored)", tag="maintenance",
          ok={200: _json(r["MaintenancePreviewAnswer"], "The spans still to end, soonest first.")},
          body=("MaintenancePreview", {"recurring": MAINTENANCE_EXAMPLE["recurring"], "count": 3}))
    b.add("get", "/api/v1/maintenance/{id}", "getMaintenance", "Read a maintenance window", tag="maintenance",
          ok={200: _json(r["MaintenanceWindow"], "The window.")}, errors=(404,), parameters=(window_id,))
    b.add("patch", "/api/v1/maintenance/{id}", "updateMaintenance",
          "Change a maintenance window (only the fields given; a schedule replaces the schedule)",
          tag="maintenance", ok={200: _json(r["MaintenanceWindow"], "The window, as changed.")},
          errors=(404,), parameters=(window_id,), body=("MaintenancePatch", {"notify": True}))
    b.add("delete", "/api/v1/maintenance/{id}", "deleteMaintenance", "Delete a maintenance window",
          tag="maintenance", ok={204: {"description": "Deleted."}}, errors=(404,), parameters=(window_id,))
    from monitor.api.openapi_status import add_status_pages  # it builds on this module's parts

    add_status_pages(b)
    openapi_posts.add_posts(b)
    b.add("post", "/api/v1/keys", "createKey", "Create an API key of the caller's account", tag="keys",
          ok={201: {**_json(r["NewKey"], "The key; its secret `key` is shown only here."),
                    "links": _links("revokeKey")}},
          body=("KeyCreate", {"name": "deploy script"}))
    b.add("get", "/api/v1/keys", "listKeys", "List the account's keys (never their secrets)", tag="keys",
          ok={200: _json(r["KeyList"], "One page of keys.")}, errors=(400,), parameters=(LIMIT, CURSOR))
    b.add("delete", "/api/v1/keys/{id}", "revokeKey", "Revoke a key (at once; revoking again is a no-op)",
          tag="keys", ok={204: {"description": "Revoked."}}, errors=(404,), parameters=(key_id,))
    from monitor.api.openapi_people import add_people  # it builds on this module's parts
    from monitor.api.openapi_reports import add_reports  # it builds on this module's parts

    add_people(b)
    add_reports(b)
    openapi_config.add_config(b)
    _pings(b)
    openapi_signin.add_signin(b)
    openapi_setup.add_setup(b)
    openapi_sso.add_sso(b)
    b.add("get", "/api/v1/openapi.json", "getOpenApi", "This document", tag="meta", public=True,
          ok={200: _json({"type": "object"}, "The OpenAPI 3.1 document.")})
    b.add("get", "/healthz", "healthz", "Liveness: the process answers", tag="meta", public=True,
          ok={200: _json(r["Health"], "Alive.")})
    b.add("get", "/metrics", "metrics", "Prometheus metrics (requests by route and status)", tag="meta",
          public=True, ok={200: {"description": "The text exposition format.",
                                 "content": {"text/plain": {"schema": {"type": "string"}}}}})
    b.add("get", "/readyz", "readyz", "Readiness: the database answers", tag="meta", public=True,
          ok={200: _json(r["Health"], "Ready."), 503: _json(r["Health"], "The database is down.")})
    # fmt: on
    return b.paths


PING_TOKEN = {"name": "token", "in": "path", "required": True, "description": "the monitor's ping token",
              "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{32}$"}}  # fmt: skip
PING_KIND = {"name": "kind", "in": "path", "required": True, "schema": {"enum": ["start", "fail"]},
             "description": "start: the job began (the next ping reports its run time); "
                            "fail: it failed"}  # fmt: skip
PING_BODY = {"required": False,
             "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
             "description": f"anything (a log tail): its first {MAX_PING_BODY_BYTES} bytes are kept "
                            "with the result"}  # fmt: skip


def _pings(b: _Builder) -> None:
    ok = {200: {"description": "Recorded.", "content": {"text/plain": {"schema": {"const": "OK\n"}}}}}
    for path, suffix, parameters in (("/ping/{token}", "", (PING_TOKEN,)),
                                     ("/ping/{token}/{kind}", "Kind", (PING_TOKEN, PING_KIND))):  # fmt: skip
        for method in ("get", "post"):
            b.add(method, path, f"{method}Ping{suffix}", "A heartbeat monitor's job reports in (no API key: "
                  "the token is the secret; an unknown token is a 404)", tag="heartbeats", public=True,
                  ok=ok, errors=(404, 429, 503), parameters=parameters)  # fmt: skip
            if method == "post":
                b.paths[path][method]["requestBody"] = PING_BODY


class Limits(NamedTuple):
    """The limits of the request schemas that are settings."""

    min_interval_seconds: float
    http_max_body_bytes: int = DEFAULT_HTTP_MAX_BODY_BYTES
    allow_insecure_tls: bool = False

    @classmethod
    def of(cls, settings: Settings) -> Limits:
        return cls(settings.min_interval_seconds, settings.http_max_body_bytes, settings.allow_insecure_tls)


@functools.cache
def document_bytes(limits: Limits) -> bytes:
    """The document, serialised once per set of limits."""
    return json.dumps(document(limits), separators=(",", ":")).encode()


def document(limits: Limits) -> dict[str, Any]:
    found, refs = _components(limits)
    made = {
        "openapi": "3.1.0",
        "info": {
            "title": "monitor",
            "version": __version__,
            "description": "A self-hosted uptime monitor. Authenticate with `Authorization: Bearer <key>`; "
            'every error answers `{"error": {"code", "message", "field"?}}`, and every answer carries an '
            "`X-Request-ID` (the request's own, if it sent a valid one).",
        },
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}],
        "tags": [{"name": n} for n in TAGS],
        "paths": _paths(refs),
        "components": {
            "schemas": found,
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "description": "an API key (mk_...)"},
            },
        },
    }
    openapi_signin.extra(made)
    return made


async def openapi(request: web.Request) -> web.Response:
    body = document_bytes(Limits.of(request.app[SETTINGS]))
    return web.Response(body=body, content_type=JSON)


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/api/v1/openapi.json", openapi)
