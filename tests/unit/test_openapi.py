"""The OpenAPI document, without a server: valid OpenAPI 3.1, one operation per route of the
app, every status an operation can answer documented, and schemas taken from the models.

Whether the live answers match the document is ``tests/integration/test_schemathesis.py``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import schemathesis
from openapi_spec_validator import OpenAPIV31SpecValidator

from monitor.api import openapi
from monitor.api.app import create_app
from monitor.config import Settings
from monitor.domain.schemas import channels as channel_schemas
from monitor.domain.schemas import config as config_schemas
from monitor.domain.schemas import incidents as schemas_incidents
from monitor.domain.schemas import maintenance as schemas_maintenance
from monitor.domain.schemas import members as schemas_members
from monitor.domain.schemas import monitors as schemas
from monitor.domain.schemas import screenshots as schemas_screenshots
from monitor.domain.schemas import signin as signin_schemas
from monitor.domain.schemas import status_pages as schemas_status
from monitor.domain.schemas.first_run import FirstOwner
from monitor.domain.schemas.keys import KeyCreate
from monitor.secrets import MASK

MIN_INTERVAL = 30.0
LIMITS = openapi.Limits(MIN_INTERVAL)
DOCUMENT = openapi.document(LIMITS)
OPERATIONS = {
    (method.upper(), path): operation
    for path, item in DOCUMENT["paths"].items()
    for method, operation in item.items()
}
PUBLIC = {("GET", p) for p in ("/api/v1/openapi.json", "/healthz", "/readyz", "/metrics")} | {
    (m, p) for m in ("GET", "POST") for p in ("/ping/{token}", "/ping/{token}/{kind}")
} | {("GET", p) for p in ("/", "/static/status.css", "/static/favicon.svg", "/favicon.ico", "/robots.txt",
                          "/status/{slug}", "/status/{slug}.json",
                          "/status/{slug}/feed.atom", "/badge/{token}/status.svg",
                          "/badge/{token}/{kind}/{window}.svg")} | {
    ("POST", p) for p in ("/api/v1/session", "/api/v1/invitations/accept", "/api/v1/password-resets",
                          "/api/v1/password-resets/confirm", "/api/v1/setup")} | {
    ("GET", f"/api/v1/sso/{p}") for p in ("login", "callback", "proxy")} | {
    ("GET", "/api/v1/setup")}  # fmt: skip
# The signed-in person's own routes: a session, never a key.
SESSION_ONLY = {("DELETE", "/api/v1/session"), ("DELETE", "/api/v1/sessions"), ("GET", "/api/v1/me")} | {
    ("POST", f"/api/v1/me/{p}") for p in ("totp", "totp/confirm", "totp/disable", "password")
}
BODIES = {"MonitorCreate": schemas.MonitorCreate, "MonitorUpdate": schemas.MonitorUpdate,
          **{m.__name__: m for m in (*schemas.CREATE_BODIES.values(), *schemas.PATCH_BODIES.values())},
          "ChannelCreate": channel_schemas.ChannelCreate, "ChannelPatch": channel_schemas.ChannelPatch,
          "KeyCreate": KeyCreate, "MaintenanceCreate": schemas_maintenance.MaintenanceCreate,
          "MaintenancePatch": schemas_maintenance.MaintenancePatch,
          "MaintenancePreview": schemas_maintenance.MaintenancePreview,
          "StatusPageCreate": schemas_status.StatusPageCreate,
          "StatusPagePatch": schemas_status.StatusPagePatch,
          "MemberAdd": schemas_members.MemberAdd, "MemberPatch": schemas_members.MemberPatch,
          "IncidentAcknowledge": schemas_incidents.IncidentAcknowledge,
          "MaskList": schemas_screenshots.MaskList,
          **{m.__name__: m for m in (signin_schemas.SignIn, signin_schemas.TotpConfirm,
                                     signin_schemas.TotpDisable, signin_schemas.PasswordChange,
                                     signin_schemas.InvitationCreate, signin_schemas.InvitationAccept,
                                     signin_schemas.ResetRequest, signin_schemas.ResetConfirm)},
          "FirstOwner": FirstOwner, "ApplyRequest": config_schemas.ApplyRequest}  # fmt: skip


def responses(key: tuple[str, str]) -> set[str]:
    return set(OPERATIONS[key]["responses"])


def test_the_document_is_valid_openapi_3_1() -> None:
    assert DOCUMENT["openapi"] == "3.1.0"
    schema = schemathesis.openapi.from_dict(DOCUMENT)
    schema.validate()
    assert sum(1 for _ in schema.get_all_operations()) == len(OPERATIONS)


def test_every_route_is_documented_and_nothing_else() -> None:
    app = create_app(Settings())
    # The dashboard's pages are HTML for people (monitor/dashboard/), not the API.
    routes = {
        (r.method, r.resource.canonical)
        for r in app.router.routes()
        if r.resource is not None and not r.handler.__module__.startswith("monitor.dashboard.")
    }
    # "*": a path's catch-all that answers 405 (/api/v1/monitors/test), not an operation.
    assert {route for route in routes if route[0] not in ("HEAD", "*")} == set(OPERATIONS)


def test_the_document_is_built_once_per_set_of_limits() -> None:
    assert openapi.document_bytes(LIMITS) is openapi.document_bytes(openapi.Limits(MIN_INTERVAL))
    assert json.loads(openapi.document_bytes(LIMITS)) == DOCUMENT


@pytest.mark.parametrize("key", sorted(OPERATIONS), ids=" ".join)
def test_each_operation_documents_what_it_can_answer(key: tuple[str, str]) -> None:
    operation = OPERATIONS[key]
    found = responses(key)
    if key in PUBLIC:
        assert operation["security"] == []
        return
    if key in SESSION_ONLY:
        assert operation["security"] == [{"session": []}]
    else:
        assert "security" not in operation  # the document's default: the bearer key (or a session)
    assert {"401", "429", "503"} <= found
    if "{id}" in key[1]:
        assert "404" in found
    if "requestBody" in operation:
        assert {"400", "413", "422"} <= found
    if any(p["in"] == "query" for p in operation.get("parameters", [])):
        assert "400" in found
    for status, response in operation["responses"].items():
        if status.startswith(("4", "5")):
            assert response["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}
        if status in ("429", "503"):
            assert response["headers"]["Retry-After"]["required"] is True


def test_security_is_the_bearer_scheme_or_a_session() -> None:
    assert DOCUMENT["security"] == [{"bearer": []}]
    assert DOCUMENT["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    cookie = DOCUMENT["components"]["securitySchemes"]["session"]
    assert (cookie["in"], cookie["name"]) == ("cookie", "__Host-monitor_session")


@pytest.mark.parametrize("name", sorted(BODIES))
def test_request_bodies_are_the_validating_models(name: str) -> None:
    documented = DOCUMENT["components"]["schemas"][name]
    generated = BODIES[name].model_json_schema(ref_template=openapi.REF)
    if "oneOf" in generated and "discriminator" in generated:  # ChannelCreate: one body per kind
        assert documented["oneOf"] == generated["oneOf"]
        assert documented["discriminator"]["propertyName"] == generated["discriminator"]["propertyName"]
        for ref in documented["discriminator"]["mapping"].values():
            body = DOCUMENT["components"]["schemas"][ref.rsplit("/", 1)[1]]
            assert body["additionalProperties"] is False and "kind" in body["required"]
        return
    if (
        "oneOf" in generated or "anyOf" in generated
    ):  # MonitorCreate (by type; http when absent), MonitorUpdate
        branches = generated.get("oneOf") or generated["anyOf"]
        assert (documented.get("oneOf") or documented["anyOf"]) == branches
        for ref in branches:
            body = DOCUMENT["components"]["schemas"][ref["$ref"].rsplit("/", 1)[1]]
            assert body["additionalProperties"] is False and "type" in body["properties"]
            if "oneOf" in generated and body["title"] != "HttpMonitorCreate":
                assert "type" in body["required"]  # so that exactly one branch matches
        return
    assert set(documented["properties"]) == set(generated["properties"])
    assert documented["additionalProperties"] is False
    assert documented.get("required", []) == generated.get("required", [])


def _examples() -> list[tuple[str, Any]]:
    found = []
    for _key, operation in sorted(OPERATIONS.items()):
        if "application/json" in operation.get("requestBody", {}).get("content", {}):
            content = operation["requestBody"]["content"]["application/json"]
            found.append((content["schema"]["$ref"].rsplit("/", 1)[1], content["example"]))
    return found


@pytest.mark.parametrize(("name", "example"), _examples(), ids=[n for n, _ in _examples()])
def test_request_examples_pass_validation(name: str, example: dict[str, Any]) -> None:
    BODIES[name].model_validate(example, context={"min_interval_seconds": MIN_INTERVAL})


def test_the_limits_come_from_the_settings() -> None:
    settings = Settings(min_interval_seconds=5, http_max_body_bytes=2048, allow_insecure_tls=True)
    document = openapi.document(openapi.Limits.of(settings))
    for name in ("HttpMonitorCreate", "MonitorPatch"):
        fields = document["components"]["schemas"][name]["properties"]
        assert (fields["interval_seconds"]["minimum"], fields["interval_seconds"]["maximum"]) == (
            5.0,
            schemas.MAX_INTERVAL_SECONDS,
        )
        assert fields["max_body_bytes"]["maximum"] == 2048
        assert "const" not in fields["tls_verify"]
        # By default tls_verify may only be true, and the body cap is 10 MiB at most.
        default = DOCUMENT["components"]["schemas"][name]["properties"]
        assert default["tls_verify"]["const"] is True
        assert default["max_body_bytes"]["maximum"] == 10 * 1024 * 1024


def test_patch_fields_that_refuse_null_do_not_offer_it() -> None:
    patch = DOCUMENT["components"]["schemas"]["MonitorPatch"]["properties"]
    assert patch["name"]["type"] == "string" and "default" not in patch["name"]
    assert {"type": "null"} in patch["telegram_chat_id"]["anyOf"]  # null detaches Telegram
    with pytest.raises(ValueError, match="may not be null"):
        schemas.MonitorPatch.model_validate({"name": None})


KINDS = {
    "keyword": "Keyword",
    "regex": "Regex",
    "json": "Json",
    "header": "Header",
    "response_time": "ResponseTime",
    "security_headers": "SecurityHeaders",
    "seo": "Seo",
}


@pytest.mark.parametrize("model", ["HttpMonitorCreate", "MonitorPatch", "Monitor"])
def test_assertions_are_documented_kind_by_kind(model: str) -> None:
    found = DOCUMENT["components"]["schemas"]
    field = found[model]["properties"]["assertions"]
    items = field["items"] if "items" in field else field["anyOf"][0]["items"]
    assert items["discriminator"] == {
        "propertyName": "type",
        "mapping": {tag: openapi.REF.format(model=name) for tag, name in KINDS.items()},
    }
    for name in KINDS.values():
        assert found[name]["additionalProperties"] is False
        assert "type" in found[name]["required"] and found[name]["description"]


def test_credentials_are_documented_as_masked() -> None:
    found = DOCUMENT["components"]["schemas"]
    assert found["BasicAuthShown"]["properties"]["password"]["const"] == MASK
    assert found["BearerAuthShown"]["properties"]["token"]["const"] == MASK
    assert MASK in found["Monitor"]["properties"]["headers"]["description"]
    patch = found["MonitorPatch"]["properties"]
    assert {"type": "null"} in patch["auth"]["anyOf"] and {"type": "null"} in patch["body"]["anyOf"]
    assert "anyOf" not in patch["headers"] and "anyOf" not in patch["assertions"]  # null refused


@pytest.mark.parametrize("insecure", [False, True])
def test_real_tools_accept_the_document(insecure: bool) -> None:
    """What real tools check (openapi-spec-validator; Spectral's oas ruleset refuses the same
    things): e.g. no ``default: null`` on a field whose type has no null."""
    settings = Settings(allow_insecure_tls=insecure)
    doc = json.loads(openapi.document_bytes(openapi.Limits.of(settings)))
    errors = [str(e).splitlines()[0] for e in OpenAPIV31SpecValidator(doc).iter_errors()]
    assert errors == []
