"""The peer's leaf certificate as a check reports it: when it expires, whom it names, who issued it.

Read after every TLS handshake (each https check dials afresh, so every one has a handshake)
from the DER the TLS object already holds (``getpeercert(binary_form=True)``: the leaf whether
or not the chain was verified, so a ``tls_verify: false`` monitor reports it too), and parsed
with ``cryptography``. Parsing costs about 25-30 µs, copying the DER out 0.5 µs: ``CertificateMemo``
keeps the parsed form per distinct certificate, so a check whose server sends the certificate it
sent last time pays a hash and a dict lookup (about 1 µs).

Names come from the target: they are cut to ``MAX_NAME_CHARS`` printable characters before they
reach the database or an alert.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime

from cryptography import x509
from cryptography.x509.oid import NameOID

MAX_NAME_CHARS = 200
# The subject alternative names that name the subject (not a directory name or another OID).
_NAMED = (x509.DNSName, x509.IPAddress, x509.RFC822Name, x509.UniformResourceIdentifier)


@dataclass(frozen=True, slots=True)
class PeerCertificate:
    """``not_after`` (UTC) and its RFC 3339 text; ``subject``: the common name, else the first
    subject alternative name; ``issuer``: the issuer's common name, else its organisation
    (either None when the certificate has neither)."""

    not_after: datetime
    not_after_text: str
    subject: str | None
    issuer: str | None


def parse_der(der: bytes) -> PeerCertificate | None:
    """The certificate of ``der``, or None when it cannot be read (only an unverified peer can
    send one the handshake accepted but cryptography does not)."""
    try:
        cert = x509.load_der_x509_certificate(der)
        not_after = cert.not_valid_after_utc
        subject = _first(cert.subject, NameOID.COMMON_NAME) or _first_san(cert)
        issuer = _first(cert.issuer, NameOID.COMMON_NAME) or _first(cert.issuer, NameOID.ORGANIZATION_NAME)
    except (ValueError, TypeError):  # malformed DER, a name or extension that does not decode
        return None
    return PeerCertificate(
        not_after=not_after,
        not_after_text=not_after.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        subject=subject,
        issuer=issuer,
    )


def _first(name: x509.Name, oid: x509.ObjectIdentifier) -> str | None:
    for attribute in name.get_attributes_for_oid(oid):
        value = attribute.value
        text = value if isinstance(value, str) else value.decode("utf-8", "replace")
        if text:
            return _clean(text)
    return None


def _first_san(cert: x509.Certificate) -> str | None:
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return None
    for general in names:
        if isinstance(general, _NAMED):
            return _clean(str(general.value))
    return None


def _clean(text: str) -> str:
    shown = "".join(ch if ch.isprintable() else "?" for ch in text[: MAX_NAME_CHARS + 1])
    return shown if len(shown) <= MAX_NAME_CHARS else shown[: MAX_NAME_CHARS - 3] + "..."


class CertificateMemo:
    """Parsed certificates by the SHA-256 of their DER, at most ``max_entries`` (a few hundred
    bytes each, whatever the certificate's size: an unverified server may send a new 100 KB
    one every time); past it, the newest entry makes room, as in the session's target memo. A
    certificate that cannot be parsed is remembered as None."""

    def __init__(self, max_entries: int = 4096) -> None:
        self._parsed: dict[bytes, PeerCertificate | None] = {}
        self._max = max_entries

    def get(self, der: bytes) -> PeerCertificate | None:
        key = hashlib.sha256(der).digest()
        try:
            return self._parsed[key]
        except KeyError:
            pass
        parsed = parse_der(der)
        if len(self._parsed) >= self._max:
            self._parsed.popitem()
        self._parsed[key] = parsed
        return parsed

    def __len__(self) -> int:
        return len(self._parsed)

    def clear(self) -> None:
        self._parsed.clear()
