"""Shared test helpers: real processes, a target server, fake alert channels, waiting with deadlines.

The fixtures in ``tests/conftest.py`` wrap these; import from here for types and plain helpers.
"""

from . import leaks
from .api import ApiClient, ApiResponse, parse_time, rfc3339
from .db import TABLES, ensure_account, insert_monitor, reset
from .fake_channels import (
    ChannelFake,
    ChannelRequest,
    FakeChannels,
    PagerDutyAlert,
    sign_webhook,
    webhook_secret,
)
from .fake_smtp import FakeSmtp, SmtpMessage
from .fake_telegram import FakeTelegram, TelegramRequest
from .procs import MonitorProcess, ProcessFactory, clean_environ, free_port, process_env
from .target import TargetRequest, TargetServer
from .waiting import wait_for

__all__ = [
    "TABLES",
    "ApiClient",
    "ApiResponse",
    "ChannelFake",
    "ChannelRequest",
    "FakeChannels",
    "FakeSmtp",
    "FakeTelegram",
    "MonitorProcess",
    "PagerDutyAlert",
    "ProcessFactory",
    "SmtpMessage",
    "TargetRequest",
    "TargetServer",
    "TelegramRequest",
    "clean_environ",
    "ensure_account",
    "free_port",
    "insert_monitor",
    "leaks",
    "parse_time",
    "process_env",
    "reset",
    "rfc3339",
    "sign_webhook",
    "wait_for",
    "webhook_secret",
]
