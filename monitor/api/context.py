"""Typed keys of the resources the API application owns (``monitor/web/keys.py``, shared with
the dashboard)."""

from monitor.web.keys import DEPS, POOL, REDIS, RESOLVER, SECRET_BOX, SETTINGS

__all__ = ["DEPS", "POOL", "REDIS", "RESOLVER", "SECRET_BOX", "SETTINGS"]
