"""The Gatus importer (monitor/ascode/importers/gatus.py): conditions, URLs and providers as
tables, the fixture (tests/fixtures/import/gatus/config.yaml, built from TwiN/gatus README.md)
as a whole document and report, bad sources, and one run of the CLI."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from monitor.ascode.importers import Imported, SourceError
from monitor.ascode.importers.gatus import _channel, _target, convert
from monitor.ascode.importers.gatus_conditions import condition, duration_seconds
from monitor.cli import main
from monitor.domain.schemas.channels import ChannelCreate
from monitor.domain.schemas.maintenance import MaintenanceCreate
from monitor.domain.schemas.monitors import validate_create

FIXTURE = Path(__file__).parent.parent / "fixtures" / "import" / "gatus" / "config.yaml"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30), ("5m", 300), ("1h30m", 5400), ("500ms", 0.5), ("2h", 7200)],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert duration_seconds(text) == seconds


@pytest.mark.parametrize("text", ["", "5 minutes", "10", "1d"])
def test_not_durations(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        duration_seconds(text)


@pytest.mark.parametrize(
    ("text", "kind", "expected"),
    [
        ("[STATUS] == 200", "http", ("expected_status", 200)),
        ("[STATUS] < 300", "http", ("expected_status", "100-299")),
        ("[STATUS] >= 200", "http", ("expected_status", "200-599")),
        ("[RESPONSE_TIME] < 500", "http", ("assertion", {"type": "response_time", "below_ms": 500.0})),
        ("[CERTIFICATE_EXPIRATION] > 48h", "http", ("cert_warn_days", 2)),
        ("[CERTIFICATE_EXPIRATION] > 720h", "tls", ("cert_warn_days", 30)),
        ("[CONNECTED] == true", "tcp", ("none", None)),
        ("[CONNECTED] == true", "ping", ("none", None)),
        ("[DNS_RCODE] == NOERROR", "dns", ("none", None)),
        ("[BODY] == 93.184.215.14", "dns", ("dns_value", "93.184.215.14")),
        (
            "[BODY].status == UP",
            "http",
            ("assertion", {"type": "json", "path": "$.status", "op": "==", "value": "UP"}),
        ),
        ("[BODY].size > 3", "http", ("assertion", {"type": "json", "path": "$.size", "op": ">", "value": 3})),
        (
            "[BODY].ok == true",
            "http",
            ("assertion", {"type": "json", "path": "$.ok", "op": "==", "value": True}),
        ),
        ("[BODY] == pat(*ok*)", "http", ("assertion", {"type": "regex", "pattern": "^.*ok.*$"})),
        (
            "[BODY] != pat(*err*)",
            "http",
            ("assertion", {"type": "regex", "pattern": "^.*err.*$", "absent": True}),
        ),
        ("[BODY] == pong", "http", ("assertion", {"type": "regex", "pattern": "^pong$"})),
    ],
)
def test_conditions_we_express(text: str, kind: str, expected: tuple[str, Any]) -> None:
    assert condition(text, kind) == expected


@pytest.mark.parametrize(
    ("text", "kind", "reason"),
    [
        ("[BODY].x == any(a, b)", "http", "pat() and any()"),
        ("[BODY].x == pat(*a*)", "http", "pat() and any()"),
        ("len([BODY].items) == 3", "http", "len()"),
        ("[BODY] == any(a, b)", "http", "any()"),
        ("[STATUS] == 200", "tcp", "no equivalent for a tcp monitor"),
        ("[IP] == 127.0.0.1", "http", "no equivalent"),
        ("[DOMAIN_EXPIRATION] > 720h", "http", "no equivalent"),
        ("whatever", "http", "not a condition"),
    ],
)
def test_conditions_reported(text: str, kind: str, reason: str) -> None:
    got = condition(text, kind)
    assert isinstance(got, str) and reason in got


@pytest.mark.parametrize(
    ("url", "extra", "expected"),
    [
        ("https://example.org/", {}, {"type": "http", "url": "https://example.org/"}),
        ("tcp://127.0.0.1:6379", {}, {"type": "tcp", "host": "127.0.0.1", "port": 6379}),
        ("tls://ldap.example.com:636", {}, {"type": "tls", "host": "ldap.example.com", "port": 636}),
        ("icmp://example.com", {}, {"type": "ping", "host": "example.com"}),
        (
            "8.8.8.8",
            {"dns": {"query-name": "example.com", "query-type": "mx"}},
            {"type": "dns", "domain": "example.com", "record_type": "MX", "nameservers": ["8.8.8.8"]},
        ),
        ("starttls://smtp.gmail.com:587", {}, "starttls:// checks have no equivalent type"),
        ("ssh://example.org:22", {}, "ssh:// checks have no equivalent type"),
        ("ws://example.org/ws", {}, "ws:// checks have no equivalent type"),
        ("udp://example.org:53", {}, "udp:// checks have no equivalent type"),
        ("grpc://example.org:443", {}, "grpc:// checks have no equivalent type"),
        ("tcp://example.org", {}, "tcp:// needs host:port"),
    ],
)
def test_urls(url: str, extra: dict[str, Any], expected: Any) -> None:
    assert _target(url, {"url": url, **extra}) == expected


@pytest.mark.parametrize(
    ("kind", "cfg", "expected", "secrets"),
    [
        (
            "slack",
            {"webhook-url": "https://hooks.slack.com/x"},
            {"kind": "slack", "config": {"url": "${GATUS_SLACK_WEBHOOK_URL}"}},
            1,
        ),
        (
            "discord",
            {"webhook-url": "${DISCORD_URL}"},
            {"kind": "discord", "config": {"url": "${DISCORD_URL}"}},
            0,
        ),
        (
            "pagerduty",
            {"integration-key": "k"},
            {"kind": "pagerduty", "config": {"routing_key": "${GATUS_PAGERDUTY_INTEGRATION_KEY}"}},
            1,
        ),
        (
            "ntfy",
            {"topic": "ops", "token": "tk"},
            {"kind": "ntfy", "config": {"url": "https://ntfy.sh/ops", "token": "${GATUS_NTFY_TOKEN}"}},
            1,
        ),
        (
            "custom",
            {"url": "https://h.example/x"},
            {"kind": "webhook", "config": {"url": "${GATUS_CUSTOM_URL}"}},
            1,
        ),
        ("telegram", {"id": "42", "token": "t"}, {"kind": "telegram", "config": {"chat_id": "42"}}, 0),
        ("mattermost", {"webhook-url": "x"}, None, 0),
    ],
)
def test_providers(kind: str, cfg: dict[str, Any], expected: dict[str, Any] | None, secrets: int) -> None:
    out = Imported()
    got = _channel(out, kind, cfg)
    if expected is None:
        assert got is None and out.report[0].reason == "no channel of this kind"
        return
    assert got is not None
    assert {"kind": got["kind"], "config": got["config"]} == expected
    assert len(out.secrets) == secrets


def _resolved(value: Any, secrets: dict[str, str]) -> Any:
    """``${VAR}`` as apply would read it: the imported secret, else a stand-in value."""
    if isinstance(value, dict):
        return {k: _resolved(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolved(v, secrets) for v in value]
    if isinstance(value, str) and value.startswith("${"):
        return secrets.get(value[2:-1], "stand-in-secret")
    return value


def _valid(document: dict[str, Any], secrets: dict[str, str]) -> None:
    """Every object of the document validates as the API's create body (keys -> ids)."""
    document = _resolved(document, secrets)
    for channel in document.get("channels", {}).values():
        ChannelCreate.model_validate(channel)
    for monitor in document["monitors"].values():
        body = {k: v for k, v in monitor.items() if k != "channels"}
        body["channel_ids"] = list(range(1, len(monitor.get("channels", [])) + 1))
        validate_create(body, {"allow_insecure_tls": True})  # api: client.insecure, reported
    for window in document.get("maintenance", {}).values():
        body = {k: v for k, v in window.items() if k != "monitors"}
        MaintenanceCreate.model_validate(body | {"monitor_ids": list(range(1, len(window["monitors"]) + 1))})


def test_fixture_whole() -> None:
    got = convert([FIXTURE])
    doc = got.document
    assert list(doc) == ["channels", "monitors", "maintenance"]
    assert sorted(doc["channels"]) == ["custom", "email", "slack", "telegram"]
    assert doc["channels"]["email"]["config"]["password"] == "${SMTP_PASSWORD}"  # kept as it was
    assert doc["channels"]["email"]["config"]["to"] == ["ops@example.com", "dev@example.com"]
    front = doc["monitors"]["core-front-end"]
    assert front == {
        "name": "front-end",
        "type": "http",
        "url": "https://example.org/",
        "interval_seconds": 300,
        "tags": ["core"],
        "method": "POST",
        "body": '{"ping": true}',
        "headers": {
            "Content-Type": "application/json",
            "Authorization": "${GATUS_CORE_FRONT_END_HEADER_AUTHORIZATION}",
        },
        "cert_warn_days": 2,
        "expected_status": [200],
        "assertions": [
            {"type": "json", "path": "$.status", "op": "==", "value": "UP"},
            {"type": "response_time", "below_ms": 300.0},
            {"type": "regex", "pattern": "^.*healthy.*$"},
        ],
        "channels": ["slack", "email"],
        "confirm_after": 3,
        "recover_after": 2,
    }
    api = doc["monitors"]["api"]
    assert (api["paused"], api["tls_verify"], api["interval_seconds"]) == (True, False, 30)
    assert doc["monitors"]["redis"] == {
        "name": "redis", "type": "tcp", "host": "127.0.0.1", "port": 6379, "interval_seconds": 30
    }  # fmt: skip
    assert doc["monitors"]["example-dns-query"]["values"] == ["93.184.215.14"]
    assert doc["monitors"]["ldap"]["cert_warn_days"] == 10
    beat = doc["monitors"]["core-ext-ep-test"]
    assert (beat["type"], beat["interval_seconds"], beat["channels"]) == ("heartbeat", 1800, ["telegram"])
    assert "starttls-smtp" not in doc["monitors"]
    window = doc["maintenance"]["gatus-maintenance"]
    assert window["recurring"] == {
        "rrule": "FREQ=WEEKLY;BYDAY=MO,TH",
        "starts_at": "2026-01-01T23:00",  # unquoted 23:00 is YAML 1.1's base-60 1380
        "duration_minutes": 60,
        "timezone": "Europe/Amsterdam",
    }
    assert "core-ext-ep-test" not in window["monitors"] and "redis" in window["monitors"]
    assert got.secrets == {
        "GATUS_SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/T000/B000/XXXX",
        "GATUS_CUSTOM_URL": "https://hooks.example.com/gatus?key=s3cr3t",
        "GATUS_CORE_FRONT_END_HEADER_AUTHORIZATION": "Bearer abc123",
    }
    assert [d.line() for d in got.report] == [
        "alerting provider 'telegram': token: our Telegram bot is the server's (MONITOR_TELEGRAM_TOKEN), "
        "not a channel's",
        "alerting provider 'custom': body: no equivalent",
        "alerting provider 'custom': method: no equivalent",
        "alerting provider 'mattermost': mattermost: no channel of this kind",
        "endpoint 'front-end': condition 'len([BODY].items) == 3': len() has no equivalent",
        "endpoint 'front-end': alerts[email]: thresholds (5, 2) differ from the first alert's; "
        "ours are per monitor",
        "endpoint 'front-end': alerts[email].description: no per-alert equivalent",
        "endpoint 'api': interval: 10s is below our minimum: raised to 30 s",
        "endpoint 'api': client.insecure: carried over as tls_verify: false, which the server takes only "
        "with MONITOR_ALLOW_INSECURE_TLS=true",
        "endpoint 'api': client.timeout: no equivalent",
        "endpoint 'api': condition '[BODY].data.ok == any(true, yes)': pat() and any() of a JSON value have "
        "no equivalent (json assertions compare)",
        "endpoint 'starttls-smtp': url: starttls:// checks have no equivalent type: "
        "endpoint not carried over",
        "external endpoint 'ext-ep-test': token: the pusher must call this monitor's ping URL instead of "
        "Gatus's push API",
        "config: storage: Gatus's own setting; no equivalent",
    ]
    _valid(doc, got.secrets)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("endpoints: [\n  - name: a\n   url: x", "not valid YAML"),
        ("- just\n- a list\n", "not a Gatus config.yaml \\(not a mapping"),
        ("storage: {type: memory}\n", "not a Gatus config.yaml \\(no endpoints"),
        ("endpoints: {a: 1}\n", "endpoints must be a list of mappings, each with a name"),
        (
            "endpoints:\n  - url: https://x.example\n",
            "endpoints must be a list of mappings, each with a name",
        ),
        ("endpoints: []\nalerting: [slack]\n", "alerting must be a mapping"),
    ],
)
def test_bad_sources(tmp_path: Path, text: str, message: str) -> None:
    source = tmp_path / "config.yaml"
    source.write_text(text, encoding="utf-8")
    with pytest.raises(SourceError, match=message) as caught:
        convert([source])
    assert str(caught.value).startswith(f"{source}: ")


def test_not_text(tmp_path: Path) -> None:
    source = tmp_path / "kuma.db"
    source.write_bytes(b"SQLite format 3\x00\xff\xfe")
    with pytest.raises(SourceError, match="cannot be read"):
        convert([source])


def test_cli(tmp_path: Path) -> None:
    out = tmp_path / "out.yaml"
    result = CliRunner().invoke(main, ["import", "gatus", str(FIXTURE), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(out.read_text(encoding="utf-8")) == convert([FIXTURE]).document
    secrets = tmp_path / "out.yaml.secrets.env"
    assert stat.S_IMODE(secrets.stat().st_mode) == 0o600
    assert "GATUS_SLACK_WEBHOOK_URL=https://hooks.slack.com/services/T000/B000/XXXX" in secrets.read_text()
    assert "not carried over: endpoint 'starttls-smtp': url:" in result.stderr
    assert "imported 4 channels, 7 monitors, 1 maintenance; 14 setting(s) not carried over" in result.stderr
    assert "abc123" not in result.stderr and "XXXX" not in result.stderr


def test_several_files(tmp_path: Path) -> None:
    """Gatus reads a directory's files together (.examples/docker-compose-multiple-config-files):
    a provider in one file serves the alerts of another's endpoints; ``$VAR`` becomes ``${VAR}``."""
    common = tmp_path / "global.yaml"
    common.write_text("alerting:\n  slack:\n    webhook-url: $SLACK_URL\n", encoding="utf-8")
    backend = tmp_path / "backend.yaml"
    backend.write_text(
        "endpoints:\n  - name: api\n    url: https://$DOMAIN/health\n    alerts:\n      - type: slack\n",
        encoding="utf-8",
    )
    got = convert([common, backend])
    assert got.document["channels"]["slack"]["config"] == {"url": "${SLACK_URL}"}
    assert got.document["monitors"]["api"]["url"] == "https://${DOMAIN}/health"
    assert got.document["monitors"]["api"]["channels"] == ["slack"]
    assert got.secrets == {} and got.report == []


def test_default_alert_extras_reported() -> None:
    out = Imported()
    cfg = {"webhook-url": "u", "default-alert": {"failure-threshold": 2, "send-on-resolved": True}}
    _channel(out, "slack", cfg)
    assert [d.line() for d in out.report] == [
        "alerting provider 'slack': default-alert.send-on-resolved: no per-alert equivalent"
    ]


def test_endpoint_maintenance_windows(tmp_path: Path) -> None:
    """README.md's per-endpoint ``maintenance-windows`` example: one window per entry, on that
    monitor only."""
    source = tmp_path / "config.yaml"
    source.write_text(
        "endpoints:\n  - name: endpoint-1\n    url: https://example.org\n    maintenance-windows:\n"
        '      - start: "07:30"\n        duration: 40m\n        timezone: Europe/Berlin\n'
        "      - start: 14:30\n        duration: 1h\n        every: [Monday]\n        enabled: true\n",
        encoding="utf-8",
    )
    got = convert([source])
    windows = got.document["maintenance"]
    assert list(windows) == ["endpoint-1-maintenance", "endpoint-1-maintenance-2"]
    first, second = windows.values()
    assert first["recurring"] == {
        "rrule": "FREQ=DAILY",
        "starts_at": "2026-01-01T07:30",
        "duration_minutes": 40,
        "timezone": "Europe/Berlin",
    }
    assert second["recurring"]["rrule"] == "FREQ=WEEKLY;BYDAY=MO" and second["monitors"] == ["endpoint-1"]
    assert got.report == []
    _valid(got.document, got.secrets)
