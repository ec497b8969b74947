"""The certificate a check saw, in its result's ``details`` and read back from them (pure).

An https check records the leaf certificate of its TLS handshake with the monitored URL::

    "certificate": {"not_after": "2026-12-24T09:30:00Z", "days_left": 20.83,
                    "subject": "example.com", "issuer": "R11"}

``not_after`` is RFC 3339 in UTC; ``days_left`` counts from the check's start, in days with two
decimals (negative once expired: only a ``tls_verify: false`` monitor gets that far);
``subject`` is the common name or else the first subject alternative name, ``issuer`` the
issuer's common name or else its organisation (null when absent). Every https check has the
key, since each dials afresh; plain http has none. Followed redirects do not change it: it is
the certificate of the first hop, the monitored URL's own host (``net.client``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from monitor.net.certificate import PeerCertificate

KEY = "certificate"
_DAY_SECONDS = 86400.0


class Certificate(BaseModel):
    """``details["certificate"]``, as above; the tls check adds the leaf's ``sans``, ``serial``
    and ``key`` (``checks/tls.py``)."""

    model_config = ConfigDict(extra="forbid")

    not_after: str
    days_left: float
    subject: str | None
    issuer: str | None
    sans: list[str] | None = None
    serial: str | None = None
    key: str | None = None


def certificate_details(cert: PeerCertificate, at: datetime) -> dict[str, Any]:
    """The ``details["certificate"]`` value of ``cert`` seen at ``at`` (aware)."""
    return {
        "not_after": cert.not_after_text,
        "days_left": round((cert.not_after - at).total_seconds() / _DAY_SECONDS, 2),
        "subject": cert.subject,
        "issuer": cert.issuer,
    }


def cert_days_left(details: Mapping[str, Any] | None) -> float | None:
    """The days the certificate had left when the check ran; None when the result records no
    certificate (plain http, a failed handshake) or a malformed one."""
    cert = _certificate(details)
    if cert is None:
        return None
    days = cert.get("days_left")
    if isinstance(days, bool) or not isinstance(days, int | float):
        return None
    return float(days)


def cert_not_after(details: Mapping[str, Any] | None) -> datetime | None:
    """When the recorded certificate expires (aware, UTC); None as for ``cert_days_left``."""
    cert = _certificate(details)
    if cert is None:
        return None
    text = cert.get("not_after")
    if not isinstance(text, str):
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def _certificate(details: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    if not details:
        return None
    cert = details.get(KEY)
    return cert if isinstance(cert, Mapping) else None
