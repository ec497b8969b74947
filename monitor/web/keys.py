"""Typed keys of the resources the api's application owns, for every face it serves (the JSON
API's handlers, the dashboard): a ground-floor module, so a face reads them without importing
another face."""

from __future__ import annotations

import asyncpg
import redis.asyncio as aioredis
from aiohttp import web

from monitor.config import Settings
from monitor.domain.context import Deps
from monitor.mailer import Mailer
from monitor.net.resolver import VettedResolver
from monitor.secrets import SecretBox

SETTINGS = web.AppKey("settings", Settings)
POOL = web.AppKey("pool", asyncpg.Pool)
RESOLVER = web.AppKey("resolver", VettedResolver)
# Seals the secrets the API stores (MONITOR_SECRET_KEY), opens them where a PATCH keeps one.
SECRET_BOX = web.AppKey("secret_box", SecretBox)
# What the domain's operations use (the pool, settings, secret box and resolver above, as one).
DEPS = web.AppKey("deps", Deps)
# The mail server's client, when one is set (MONITOR_SMTP_HOST): invitations and resets.
MAILER = web.AppKey("mailer", Mailer)
# The Redis client trial checks go through (``domain/trials.py``), or None without
# MONITOR_REDIS_URL.
REDIS: web.AppKey[aioredis.Redis | None] = web.AppKey("redis")
