"""structlog set-up: JSON lines by default, a readable console format on request.

Ids (``monitor_id``, ``event_id``, ``request_id``) are bound with contextvars so
every line of one check, event or request carries them.
"""

from __future__ import annotations

import logging
import sys

import structlog


def configure(fmt: str = "json", level: str = "info", process: str | None = None) -> None:
    renderer: structlog.typing.Processor
    if fmt == "console":
        renderer = structlog.dev.ConsoleRenderer(colors=sys.stdout.isatty())
    else:
        renderer = structlog.processors.JSONRenderer()
    processors: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.format_exc_info,
        renderer,
    ]
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stdout),
        cache_logger_on_first_use=True,
    )
    if process:
        structlog.contextvars.bind_contextvars(process=process)
    # Libraries that use stdlib logging (aiohttp access log is off; asyncio warnings) go to stderr.
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s %(message)s")


def get(name: str | None = None) -> structlog.stdlib.BoundLogger:
    return structlog.get_logger(name)


# ``with bound(monitor_id=...):`` binds ids to every log line inside the block.
bound = structlog.contextvars.bound_contextvars
