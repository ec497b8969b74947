"""What every channel shares: the error that says whether retrying can help."""

from __future__ import annotations


class DeliveryError(Exception):
    def __init__(self, message: str, *, permanent: bool, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.permanent = permanent
        self.retry_after = retry_after
