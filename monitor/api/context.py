"""Typed keys of the resources the API application owns."""

from __future__ import annotations

import asyncpg
from aiohttp import web

from monitor.config import Settings
from monitor.net.resolver import VettedResolver

SETTINGS = web.AppKey("settings", Settings)
POOL = web.AppKey("pool", asyncpg.Pool)
RESOLVER = web.AppKey("resolver", VettedResolver)
