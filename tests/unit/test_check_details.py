"""Each check type's ``details``: declared by a model in its module, and the API's document built
from those models (real http, tcp and tls results: ``tests/integration/test_check_details.py``)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
import trustme
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding
from pydantic import BaseModel, ValidationError

from monitor.api import openapi
from monitor.checks import REGISTRY
from monitor.checks.base import ResultDetails
from monitor.checks.heartbeat import Schedule, missed, ping_result
from monitor.checks.ping import Echoes
from monitor.checks.ping import details as ping_details
from monitor.checks.tls import chain_details
from monitor.net.chain import read_cert

NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


def details_of(kind: str) -> type[BaseModel]:
    model = REGISTRY.get(kind).Details
    assert model is not None and issubclass(model, ResultDetails), kind
    return model


@pytest.mark.parametrize("kind", REGISTRY.kinds)
def test_every_type_declares_its_details(kind: str) -> None:
    assert details_of(kind).__module__ == type(REGISTRY.get(kind)).__module__  # in the type's own module


@pytest.mark.parametrize("kind", REGISTRY.kinds)
def test_an_undeclared_key_is_refused(kind: str) -> None:
    with pytest.raises(ValidationError, match="extra"):
        details_of(kind).model_validate({"undeclared": 1})


def test_the_document_describes_details_from_the_types() -> None:
    schemas = openapi.document(openapi.Limits(30))["components"]["schemas"]
    described = schemas["Check"]["properties"]["details"]["description"]
    for kind in REGISTRY.kinds:
        assert f"{kind}" in described
        for key in details_of(kind).model_fields:
            assert f'"{key}"' in described, (kind, key)
    # Still free-form JSON in the schema itself: only its description comes from the types.
    assert schemas["Check"]["properties"]["details"]["anyOf"] == [
        {"additionalProperties": True, "type": "object"},
        {"type": "null"},
    ]


def _chain() -> list[Any]:
    root = trustme.CA(organization_name="Root Org")
    leaf = root.issue_cert("svc.example.com", common_name="svc.example.com")
    ders = [
        x509.load_pem_x509_certificate(pem).public_bytes(Encoding.DER)
        for pem in (leaf.cert_chain_pems[0].bytes(), root.cert_pem.bytes())
    ]
    return [read_cert(der) for der in ders]


HOURLY = Schedule(interval=dt.timedelta(hours=1), grace=dt.timedelta(minutes=5))
PURE = [
    ("heartbeat", "ok ping", ping_result(1, NOW, "ok", "done\n", False, NOW - dt.timedelta(seconds=3))
     .details),
    ("heartbeat", "fail ping cut", ping_result(1, NOW, "fail", "x" * 10, True, None).details),
    ("heartbeat", "missed", missed(1, NOW, NOW - dt.timedelta(hours=2), HOURLY).details),
    ("heartbeat", "missed, never pinged", missed(1, NOW, None, HOURLY).details),
    ("ping", "replies", ping_details(Echoes("192.0.2.7", 3, sent=3, rtts=[11.2, 12.6]))),
    ("ping", "no reply", ping_details(Echoes("192.0.2.7", 3, sent=3))),
    # As docs/check-types.md shows them (the check's own run: tests/unit/test_check_dns.py).
    ("dns", "answers", {"record_type": "A", "nameserver": "192.0.2.53", "answers": ["192.0.2.10"]}),
    ("dns", "a change", {"record_type": "A", "nameserver": "system", "answers": ["203.0.113.66"],
                         "baseline": ["192.0.2.10"], "answers_total": 51}),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "details"), [(c[0], c[2]) for c in PURE], ids=[c[1] for c in PURE])
def test_the_pure_parts_write_what_their_type_declares(kind: str, details: dict[str, Any] | None) -> None:
    assert details is not None
    details_of(kind).model_validate(details)


def test_a_tls_chain_is_what_the_tls_type_declares() -> None:
    chain = _chain()
    got = chain_details([c for c in chain if c is not None], NOW)
    details_of("tls").model_validate({**got, "verified": True, "tls_version": "TLSv1.3"})
