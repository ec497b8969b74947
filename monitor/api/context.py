"""Typed keys of the resources the API application owns."""

from __future__ import annotations

import asyncpg
import redis.asyncio as aioredis
from aiohttp import web

from monitor.config import Settings
from monitor.domain.context import Deps
from monitor.net.resolver import VettedResolver
from monitor.secrets import SecretBox

SETTINGS = web.AppKey("settings", Settings)
POOL = web.AppKey("pool", asyncpg.Pool)
RESOLVER = web.AppKey("resolver", VettedResolver)
# Seals the secrets the API stores (MONITOR_SECRET_KEY), opens them where a PATCH keeps one.
SECRET_BOX = web.AppKey("secret_box", SecretBox)
# What the domain's operations use (the pool, settings, secret box and resolver above, as one).
DEPS = web.AppKey("deps", Deps)
# The Redis client trial checks go through (``domain/trials.py``), or None without
# MONITOR_REDIS_URL: the api's only use of Redis, made without I/O at start.
REDIS: web.AppKey[aioredis.Redis | None] = web.AppKey("redis")
