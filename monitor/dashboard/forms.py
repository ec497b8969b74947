"""What a form shows again after its post failed: the values typed (never a secret's) and the
domain layer's error next to the field it names.

A view that handles a form calls the domain operation; on a ``DomainError`` it renders the
form again with ``Form(values, error)``, the status of the error (a 422 stays a 422, so a
script or a test sees what a person sees), and the templates' macros (``_forms.html``) put
the message under the field whose name the error's ``field`` is, with ``aria-invalid`` and
``aria-describedby`` for screen readers. An error without a field, or one on a field the form
does not show, is shown at the top of the form.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from monitor.domain.errors import DomainError


@dataclass(frozen=True)
class Form:
    values: Mapping[str, Any] = field(default_factory=dict)
    error: DomainError | None = None
    shown: frozenset[str] = frozenset()  # the fields the form has, to tell where an error goes

    def value(self, name: str, default: Any = "") -> Any:
        found = self.values.get(name)
        return default if found is None else found

    def error_for(self, name: str) -> str | None:
        """The message when the error is about ``name`` (or a part of it: ``assertions.1.value``
        belongs to ``assertions``)."""
        if self.error is None or not self.error.field:
            return None
        got = self.error.field
        if got == name or got.startswith(name + ".") or got.startswith(name + "["):
            return self.error.message
        return None

    @property
    def general(self) -> str | None:
        """The message to show at the top: an error of no field, or of a field not on the form."""
        if self.error is None:
            return None
        got = self.error.field
        if not got or not any(got == n or got.startswith(n + ".") for n in self.shown):
            return self.error.message
        return None


def failed(values: Mapping[str, Any], error: DomainError, shown: Iterable[str]) -> Form:
    return Form(values, error, frozenset(shown))
