"""monitor: a self-hosted uptime monitor (api, scheduler, alerter)."""

__version__ = "0.1.0"
