"""The tls check's pure parts: keys named and rated, chains summarised, the verdict.

Chains are minted with ``trustme`` (an RSA root, an EC intermediate, leaves of either kind);
single keys are generated with ``cryptography``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
import trustme
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, ed25519, rsa
from cryptography.hazmat.primitives.serialization import Encoding
from pydantic import ValidationError

from monitor.checks.tls import TlsCheck, TlsOptions, TlsSettings, chain_details, judge
from monitor.net.certificate import PeerCertificate
from monitor.net.chain import ChainCert, ChainMemo, key_strength, read_cert, weakest

NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("make", "name", "bits"),
    [
        pytest.param(lambda: rsa.generate_private_key(65537, 1024), "RSA 1024", 80, id="rsa-1024"),
        pytest.param(lambda: rsa.generate_private_key(65537, 2048), "RSA 2048", 112, id="rsa-2048"),
        pytest.param(lambda: rsa.generate_private_key(65537, 3072), "RSA 3072", 128, id="rsa-3072"),
        pytest.param(lambda: dsa.generate_private_key(2048), "DSA 2048", 112, id="dsa-2048"),
        pytest.param(lambda: ec.generate_private_key(ec.SECP256R1()), "EC P-256", 128, id="p-256"),
        pytest.param(lambda: ec.generate_private_key(ec.SECP384R1()), "EC P-384", 192, id="p-384"),
        pytest.param(lambda: ec.generate_private_key(ec.SECP521R1()), "EC P-521", 260, id="p-521"),
        pytest.param(lambda: ec.generate_private_key(ec.SECP256K1()), "EC secp256k1", 128, id="other-curve"),
        pytest.param(ed25519.Ed25519PrivateKey.generate, "Ed25519", 128, id="ed25519"),
        pytest.param(ed448.Ed448PrivateKey.generate, "Ed448", 224, id="ed448"),
    ],
)
def test_key_strength(make: Any, name: str, bits: int) -> None:
    assert key_strength(make().public_key()) == (name, bits)


def _der(pem: bytes) -> bytes:
    return x509.load_pem_x509_certificate(pem).public_bytes(Encoding.DER)


def _chain(leaf_key: trustme.KeyType) -> tuple[list[bytes], dt.datetime]:
    """Leaf, EC intermediate, RSA root (as a verified chain reads), and the leaf's expiry."""
    root = trustme.CA(key_type=trustme.KeyType.RSA, organization_name="Root Org")
    intermediate = root.create_child_ca(key_type=trustme.KeyType.ECDSA)
    not_after = dt.datetime(2026, 3, 4, 12, 0, tzinfo=dt.UTC)
    leaf = intermediate.issue_cert(
        "svc.example.com", "192.0.2.7", common_name="svc.example.com", not_after=not_after, key_type=leaf_key
    )
    ders = [_der(blob.bytes()) for blob in leaf.cert_chain_pems] + [_der(root.cert_pem.bytes())]
    return ders, not_after


@pytest.mark.parametrize(
    ("leaf_key", "keys", "weakest_key"),
    [
        pytest.param(trustme.KeyType.ECDSA, ["EC P-256", "EC P-256", "RSA 2048"], "RSA 2048", id="ec-leaf"),
        # RSA 2048 and the root's tie at 112 bits: the one nearest the leaf is named.
        pytest.param(trustme.KeyType.RSA, ["RSA 2048", "EC P-256", "RSA 2048"], "RSA 2048", id="rsa-leaf"),
    ],
)
def test_chain_details(leaf_key: trustme.KeyType, keys: list[str], weakest_key: str) -> None:
    ders, not_after = _chain(leaf_key)
    chain = [read_cert(der) for der in ders]
    assert all(c is not None for c in chain)
    got = chain_details([c for c in chain if c is not None], NOW)
    cert = got["certificate"]
    assert cert["not_after"] == not_after.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert cert["days_left"] == 3.0
    assert cert["subject"] == "svc.example.com"
    assert cert["sans"] == ["svc.example.com", "192.0.2.7"]
    assert cert["key"] == keys[0]
    assert len(cert["serial"]) % 2 == 0 and int(cert["serial"], 16) > 0
    assert [c["key"] for c in got["chain"]] == keys
    assert got["chain"][0]["issuer"] == got["chain"][1]["subject"]
    assert got["chain"][2]["subject"] == got["chain"][2]["issuer"] == "Root Org"  # self-signed
    assert got["weakest_key"] == weakest_key
    assert set(got["chain"][0]) == {"subject", "issuer", "key", "not_after"}


def _cert(key: str, bits: int, not_after: dt.datetime = NOW) -> ChainCert:
    text = not_after.strftime("%Y-%m-%dT%H:%M:%SZ")
    names = PeerCertificate(not_after, text, "svc.example.com", "CA")
    return ChainCert(names, names.subject, key, bits, (), "01")


@pytest.mark.parametrize(
    ("chain", "want"),
    [
        pytest.param([], None, id="empty"),
        pytest.param(
            [_cert("EC P-256", 128), _cert("RSA 2048", 112), _cert("RSA 4096", 128)], "RSA 2048", id="middle"
        ),
        pytest.param([_cert("RSA 1024", 80), _cert("RSA 2048", 112)], "RSA 1024", id="leaf"),
        pytest.param(
            [_cert("EC P-384", 192), _cert("EC P-256", 128), _cert("Ed25519", 128)], "EC P-256", id="tie"
        ),
    ],
)
def test_weakest(chain: list[ChainCert], want: str | None) -> None:
    got = weakest(chain)
    assert (got.key if got is not None else None) == want


@pytest.mark.parametrize(
    ("leaf", "error", "cause"),
    [
        pytest.param(_cert("EC P-256", 128, NOW + dt.timedelta(days=3)), None, None, id="valid"),
        pytest.param(
            _cert("EC P-256", 128, NOW - dt.timedelta(seconds=1)),
            None,
            "certificate expired on 2026-03-01T11:59:59Z (svc.example.com)",
            id="expired",
        ),
        pytest.param(
            _cert("EC P-256", 128, NOW),
            None,
            "certificate expired on 2026-03-01T12:00:00Z (svc.example.com)",
            id="expires-now",
        ),
        pytest.param(
            _cert("EC P-256", 128, NOW - dt.timedelta(days=1)),
            "TLS certificate error: certificate has expired",
            "TLS certificate error: certificate has expired",
            id="handshake-said-it",
        ),
        pytest.param(None, "connection failed: refused by 192.0.2.7 port 443", None, id="no-connection"),
        pytest.param(None, None, None, id="unreadable-leaf"),
    ],
)
def test_judge(leaf: ChainCert | None, error: str | None, cause: str | None) -> None:
    assert judge(leaf, error, NOW) == (cause or error)


def test_memo_reads_each_certificate_once() -> None:
    ders, _ = _chain(trustme.KeyType.ECDSA)
    memo = ChainMemo(max_entries=2)
    first = memo.get(ders[0])
    assert first is not None and memo.get(ders[0]) is first
    for der in ders:
        memo.get(der)
    assert len(memo) == 2
    assert memo.get(b"not a certificate") is None


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        pytest.param({"server_name": "192.0.2.7"}, "not an IP address", id="ip-as-sni"),
        pytest.param({"server_name": "-bad.example.com"}, "invalid host name", id="bad-sni"),
        pytest.param({"port": 0}, "greater than or equal to 1", id="port-0"),
        pytest.param({"host": "https://example.com/"}, "not a URL", id="url-for-host"),
        pytest.param({"cert_warn_days": 3}, "Extra inputs", id="common-field-not-here"),
    ],
)
def test_settings_refused(changes: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        TlsSettings.model_validate({"host": "example.com", **changes})


def test_settings_target_and_options() -> None:
    check = TlsCheck()
    settings = TlsSettings.model_validate({"host": "192.0.2.7", "server_name": "WWW.Example.com"})
    assert (settings.port, settings.server_name) == (443, "www.example.com")
    assert check.target(settings) == "tls://192.0.2.7:443"
    assert check.target(TlsSettings.model_validate({"host": "::1", "port": 8443})) == "tls://[::1]:8443"
    assert check.hosts(settings) == ("192.0.2.7",)
    assert check.options(settings.model_dump(mode="json"), None) == TlsOptions(
        "192.0.2.7", 443, "www.example.com"
    )
