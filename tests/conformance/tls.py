"""Certificates and server TLS contexts for the conformance servers, from a throwaway test CA.

The check trusts ``Pki.ca`` (``client_context``); every server context here is one real-world
TLS setup, good or broken. Files (for nginx and for ``load_cert_chain``) are written under
``root``.
"""

from __future__ import annotations

import datetime as dt
import ssl
from ipaddress import ip_address
from pathlib import Path

import trustme
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

# The names a valid leaf answers for: loopback literals and *.localhost (which the check's
# resolver answers itself, so no DNS server is needed).
LOCAL_NAMES = ("127.0.0.1", "::1", "localhost", "tls.localhost")
SNI_NAMES = ("a.localhost", "b.localhost")


class Pki:
    """A root CA the check trusts, an intermediate CA under it, and leaves for each case."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.ca = trustme.CA()
        self.intermediate = self.ca.create_child_ca()
        self.ca_file = self._write("ca.pem", self.ca.cert_pem.bytes())
        # The usual setup: a leaf issued by the intermediate, sent with the intermediate.
        self.valid = self.intermediate.issue_cert(*LOCAL_NAMES)
        self.valid_chain = self._write_leaf("valid", self.valid)
        now = dt.datetime.now(dt.UTC)
        self.expired = self._write_leaf(
            "expired",
            self.ca.issue_cert(
                *LOCAL_NAMES, not_before=now - dt.timedelta(days=90), not_after=now - dt.timedelta(days=1)
            ),
        )
        self.wrong_name = self._write_leaf("wrong-name", self.ca.issue_cert("www.example.org"))
        # The leaf alone, without the intermediate that links it to the trusted root.
        self.missing_intermediate = (
            self._write("missing-intermediate.pem", self.valid.cert_chain_pems[0].bytes()),
            self._write("missing-intermediate.key", self.valid.private_key_pem.bytes()),
        )
        self.self_signed = self._self_signed()
        self.sni = {name: self._write_leaf(name, self.ca.issue_cert(name)) for name in SNI_NAMES}
        self.sni_default = self._write_leaf("default.localhost", self.ca.issue_cert("default.localhost"))

    def client_context(self) -> ssl.SSLContext:
        """What the check verifies with: the system's defaults plus the test CA."""
        context = ssl.create_default_context()
        self.ca.configure_trust(context)
        return context

    def server_context(self, chain: tuple[Path, Path] | None = None) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        cert, key = chain or self.valid_chain
        context.load_cert_chain(cert, key)
        return context

    def contexts(self) -> dict[str, ssl.SSLContext]:
        """Every TLS server setup of the table, by name."""
        tls12 = self.server_context()
        tls12.maximum_version = ssl.TLSVersion.TLSv1_2
        tls13 = self.server_context()
        tls13.minimum_version = ssl.TLSVersion.TLSv1_3
        client_cert = self.server_context()
        client_cert.verify_mode = ssl.CERT_REQUIRED
        client_cert.load_verify_locations(cafile=self.ca_file)
        h2_only = self.server_context()
        h2_only.set_alpn_protocols(["h2"])
        return {
            "valid": self.server_context(),
            "expired": self.server_context(self.expired),
            "wrong-name": self.server_context(self.wrong_name),
            "self-signed": self.server_context(self.self_signed),
            "missing-intermediate": self.server_context(self.missing_intermediate),
            "tls12-only": tls12,
            "tls13-only": tls13,
            "sni": self._sni_context(),
            "client-cert": client_cert,
            "alpn-h2-only": h2_only,
        }

    def _sni_context(self) -> ssl.SSLContext:
        # One listener, a certificate per name, as a shared host does: the name the client sent
        # picks the context; no name (an IP literal sends none) gets the default certificate.
        by_name = {name: self.server_context(chain) for name, chain in self.sni.items()}
        default = self.server_context(self.sni_default)

        def pick(sock: ssl.SSLObject, name: str | None, _context: ssl.SSLContext) -> None:
            chosen = by_name.get(name or "")
            if chosen is not None:
                sock.context = chosen

        default.sni_callback = pick
        return default

    def _write(self, name: str, data: bytes) -> Path:
        path = self.root / name
        path.write_bytes(data)
        return path

    def _write_leaf(self, name: str, leaf: trustme.LeafCert) -> tuple[Path, Path]:
        chain = b"".join(blob.bytes() for blob in leaf.cert_chain_pems)
        return self._write(f"{name}.pem", chain), self._write(f"{name}.key", leaf.private_key_pem.bytes())

    def _self_signed(self) -> tuple[Path, Path]:
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
        now = dt.datetime.now(dt.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=30))
            .add_extension(
                x509.SubjectAlternativeName(
                    [x509.DNSName("localhost"), x509.IPAddress(ip_address("127.0.0.1"))]
                ),
                critical=False,
            )
            .sign(key, hashes.SHA256())
        )
        key_pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        return (
            self._write("self-signed.pem", cert.public_bytes(serialization.Encoding.PEM)),
            self._write("self-signed.key", key_pem),
        )
