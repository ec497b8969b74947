import re
from pathlib import Path

import pytest

from monitor import config
from monitor.config import Settings


def test_defaults_and_secrets_hidden() -> None:
    key = "dGVzdC1rZXktb2YtdGhlLW1vbml0b3ItdGVzdHMtMDE="
    settings = config.load(
        {"MONITOR_DATABASE_URL": "postgresql://u:hunter2@db/x", "MONITOR_TELEGRAM_BOT_TOKEN": "1:abc",
         "MONITOR_SECRET_KEY": key}
    )  # fmt: skip
    assert settings.api_host == "127.0.0.1" and settings.api_port == 8080
    assert settings.min_interval_seconds == 30 and settings.retention_days == 90
    assert "hunter2" not in repr(settings) and "1:abc" not in repr(settings) and key not in repr(settings)


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"MONITOR_API_PORT": "eighty"}, "MONITOR_API_PORT"),
        ({"MONITOR_RETENTION_DAYS": "0"}, "MONITOR_RETENTION_DAYS"),
        ({"MONITOR_ALLOW_CIDRS": "10.0.0.0/8,nonsense"}, "MONITOR_ALLOW_CIDRS"),
        ({"MONITOR_LOG_FORMAT": "xml"}, "MONITOR_LOG_FORMAT"),
        ({"MONITOR_PUBLIC_URL": "monitor.example.com"}, "MONITOR_PUBLIC_URL"),
        ({"MONITOR_PUBLIC_URL": "https://monitor.example.com/?x=1"}, "MONITOR_PUBLIC_URL"),
        ({"MONITOR_DATABASE_URL": "mysql://x"}, "MONITOR_DATABASE_URL"),
        ({"MONITOR_INTERVAL": "5"}, "MONITOR_INTERVAL"),
        ({"MONITOR_CA_FILE": "/nonexistent/ca.pem"}, "MONITOR_CA_FILE"),
        ({"MONITOR_HTTP_MAX_HEAD_BYTES": "100"}, "MONITOR_HTTP_MAX_HEAD_BYTES"),
        ({"MONITOR_ALLOW_INSECURE_TLS": "maybe"}, "MONITOR_ALLOW_INSECURE_TLS"),
        ({"MONITOR_SECRET_KEY": "not-a-fernet-key"}, "MONITOR_SECRET_KEY"),
        (
            {"MONITOR_CONNECTIVITY_TARGETS": "https://example.com/,example.com"},
            "MONITOR_CONNECTIVITY_TARGETS",
        ),
        ({"MONITOR_CONNECTIVITY_TARGETS": "ftp://example.com/"}, "MONITOR_CONNECTIVITY_TARGETS"),
        ({"MONITOR_CONNECTIVITY_TARGETS": "1.1.1.1:0"}, "MONITOR_CONNECTIVITY_TARGETS"),
        ({"MONITOR_CONNECTIVITY_WINDOW_SECONDS": "0"}, "MONITOR_CONNECTIVITY_WINDOW_SECONDS"),
        ({"MONITOR_CONNECTIVITY_MIN_MONITORS": "0"}, "MONITOR_CONNECTIVITY_MIN_MONITORS"),
        ({"MONITOR_CONNECTIVITY_FAILING_SHARE": "1.5"}, "MONITOR_CONNECTIVITY_FAILING_SHARE"),
        ({"MONITOR_CONNECTIVITY_FAILING_SHARE": "0"}, "MONITOR_CONNECTIVITY_FAILING_SHARE"),
        ({"MONITOR_OPERATOR_CHAT": "my chat"}, "MONITOR_OPERATOR_CHAT"),
        ({"MONITOR_OPERATOR_CHANNEL": "0"}, "MONITOR_OPERATOR_CHANNEL"),
        ({"MONITOR_OPERATOR_CHANNEL": "ops"}, "MONITOR_OPERATOR_CHANNEL"),
    ],
)
def test_invalid_or_unknown_settings_name_the_variable(env: dict, named: str) -> None:
    with pytest.raises(config.ConfigError, match=named):
        config.load(env)


def test_connectivity_defaults() -> None:
    settings = config.load({})
    assert settings.connectivity_targets == []
    assert settings.connectivity_window_seconds == 60
    assert settings.connectivity_min_monitors == 5
    assert settings.connectivity_failing_share == 0.8
    assert settings.operator_chat is None and settings.operator_channel is None


@pytest.mark.parametrize(
    ("value", "targets"),
    [
        ("", []),
        (" https://example.com/ping , 1.1.1.1:53,", ["https://example.com/ping", "1.1.1.1:53"]),
        ("http://10.0.0.1:8080/health", ["http://10.0.0.1:8080/health"]),
        ("dns.google:443,[2606:4700:4700::1111]:53", ["dns.google:443", "[2606:4700:4700::1111]:53"]),
    ],
)
def test_connectivity_targets(value: str, targets: list[str]) -> None:
    assert config.load({"MONITOR_CONNECTIVITY_TARGETS": value}).connectivity_targets == targets


@pytest.mark.parametrize(
    ("env", "chat", "channel"),
    [
        ({}, None, None),
        ({"MONITOR_OPERATOR_CHAT": "-1001234567890"}, "-1001234567890", None),
        ({"MONITOR_OPERATOR_CHAT": "@ops_channel", "MONITOR_OPERATOR_CHANNEL": "7"}, "@ops_channel", 7),
        ({"MONITOR_OPERATOR_CHAT": " "}, None, None),
    ],
)
def test_operator_destinations(env: dict[str, str], chat: str | None, channel: int | None) -> None:
    settings = config.load(env)
    assert (settings.operator_chat, settings.operator_channel) == (chat, channel)


def test_redact_url() -> None:
    assert config.redact_url("postgresql://u:hunter2@db:5432/x") == "postgresql://u:***@db:5432/x"
    assert config.redact_url("redis://db:6379/0") == "redis://db:6379/0"


def _documented_knobs() -> set[str]:
    """The MONITOR_* variables that scripts/services.sh lists under "Environment knobs"."""
    script = (Path(__file__).parents[2] / "scripts" / "services.sh").read_text()
    header = script.split("Environment knobs:", 1)[1].split("\n\n", 1)[0]
    return set(re.findall(r"\bMONITOR_[A-Z_]+\b", header))


def test_the_tool_variables_are_the_knobs_of_services_sh() -> None:
    knobs = _documented_knobs()
    assert {"MONITOR_DEBIAN_MIRROR", "MONITOR_STATE_DIR", "MONITOR_PG_PORT"} <= knobs
    assert knobs <= config.TOOL_VARIABLES


@pytest.mark.parametrize("name", sorted(config.TOOL_VARIABLES))
def test_a_tool_variable_in_the_environment_does_not_stop_a_process(name: str) -> None:
    settings = config.load({name: "/somewhere", "MONITOR_API_PORT": "9000"})
    assert settings.api_port == 9000
    assert name.removeprefix("MONITOR_").lower() not in Settings.model_fields
