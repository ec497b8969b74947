"""Targets that answer with the response headers a test chooses: the security headers a
``security_headers`` assertion grades.

``HeadedHttp`` is ``support.target.TargetServer``, ``HeadedHttps`` is ``support.certs.HttpsTarget``
(same ``set``, counting and ``url``); ``fields`` is the list of (name, value) every answer
carries from now on, in order, duplicates and any case kept as given.
"""

from __future__ import annotations

import datetime as dt
import ssl
from typing import Any

from aiohttp import web

from .certs import HttpsTarget, LocalCA
from .target import TargetServer

Fields = list[tuple[str, str]]


class _Headed:
    fields: Fields

    async def _handle(self, request: web.Request) -> web.Response:
        response: web.Response = await super()._handle(request)  # type: ignore[misc]
        for name, value in self.fields:
            response.headers.add(name, value)
        return response


class HeadedHttp(_Headed, TargetServer):
    def __init__(self, fields: Fields, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fields = list(fields)


class HeadedHttps(_Headed, HttpsTarget):
    def __init__(self, fields: Fields, context: ssl.SSLContext, *, not_after: dt.datetime) -> None:
        super().__init__(context, not_after=not_after)
        self.fields = list(fields)

    @classmethod
    def from_ca(cls, ca: LocalCA, fields: Fields) -> HeadedHttps:
        """A target with a year-long leaf of ``ca`` for the loopback names (not started)."""
        leaf, not_after = ca.issue()
        return cls(fields, ca.server_context(leaf), not_after=not_after)
