"""The body that acknowledges an open incident (``domain/incidents.py``)."""

from __future__ import annotations

import unicodedata

from pydantic import Field, field_validator

from monitor.domain.schemas.common import Body

MAX_NOTE = 280


class IncidentAcknowledge(Body):
    """Who is on it is the caller; the note says what they are doing (sent to the monitor's
    channels with the acknowledgement, shown with the incident)."""

    note: str | None = Field(
        None,
        max_length=MAX_NOTE,
        description=f"a short note for the channels and the incident (at most {MAX_NOTE} characters, "
        "one line); empty or null: none",
    )

    @field_validator("note")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        # One line of text: a control character (a newline, an escape) would break the short
        # note each channel shows, or smuggle markup past its escaping.
        if value is not None and any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in value):
            raise ValueError("must be one line of text, without control characters")
        return value or None
