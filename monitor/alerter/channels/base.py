"""What every channel shares: the error that says whether retrying can help."""

from __future__ import annotations


class DeliveryError(Exception):
    def __init__(self, message: str, *, permanent: bool, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.permanent = permanent
        self.retry_after = retry_after


class DestinationMoved(DeliveryError):
    """The destination answered with its new address (a Telegram group upgraded to a
    supergroup gets a new chat id): send there, and remember it, rather than give up."""

    def __init__(self, message: str, *, moved_to: str) -> None:
        super().__init__(message, permanent=False)
        self.moved_to = moved_to
