"""The UptimeRobot importer: each source type/kind -> our object or a report line, the whole
fixture (tests/fixtures/import/uptimerobot, see its README for what each file follows) -> the
expected document, bad sources -> SourceError, and one run of the CLI."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from monitor.ascode.importers import SourceError
from monitor.ascode.importers.uptimerobot import convert
from monitor.cli import main
from monitor.domain.schemas.maintenance import MaintenanceCreate
from monitor.domain.schemas.monitors import MonitorCreate

FIXTURES = Path(__file__).parent.parent / "fixtures" / "import" / "uptimerobot"
ALL = [
    FIXTURES / n
    for n in ("getAlertContacts.json", "getMonitors.json", "getMWindows.json", "v3-monitors.json")
]


def _one(tmp_path: Path, monitor: dict[str, Any]) -> tuple[dict[str, Any] | None, list[str]]:
    src = tmp_path / "m.json"
    src.write_text(json.dumps({"stat": "ok", "monitors": [{"id": 1, "friendly_name": "M", **monitor}]}))
    got = convert([src])
    return got.document.get("monitors", {}).get("m"), [d.line() for d in got.report]


@pytest.mark.parametrize(
    ("monitor", "expected"),
    [
        ({"type": 1, "url": "https://a/", "interval": 60}, {"type": "http", "url": "https://a/"}),
        ({"type": 1, "url": "https://a/", "http_method": 1}, {"method": "HEAD"}),
        (
            {
                "type": 2,
                "url": "https://a/",
                "keyword_type": 2,  # alert when the keyword does not exist: it must be there
                "keyword_case_type": 0,  # 0: case sensitive (API page)
                "keyword_value": "ok",
            },
            {"assertions": [{"type": "keyword", "keyword": "ok", "absent": False, "case_sensitive": True}]},
        ),
        (
            # keyword_type 1: alert when the keyword exists (the API's "1 - exists"; v3's ALERT_EXISTS)
            {"type": 2, "url": "https://a/", "keyword_type": 1, "keyword_value": "Error"},
            {"assertions": [{"type": "keyword", "keyword": "Error", "absent": True, "case_sensitive": True}]},
        ),
        ({"type": 3, "url": "h.example"}, {"type": "ping", "host": "h.example"}),
        ({"type": 4, "url": "h.example", "sub_type": 2}, {"type": "tcp", "port": 443}),
        ({"type": 4, "url": "h.example", "sub_type": 6}, {"type": "tcp", "port": 143}),
        ({"type": 4, "url": "h.example", "sub_type": 99, "port": "5432"}, {"port": 5432}),
        ({"type": 5, "interval": 3600}, {"type": "heartbeat", "interval_seconds": 3600}),
        ({"type": 1, "url": "https://a/", "status": 0}, {"paused": True}),
        (
            {"type": 1, "url": "https://a/", "custom_http_statuses": "418:1"},
            {"expected_status": ["2xx", "3xx", 418]},
        ),
    ],
)
def test_monitor_types(tmp_path: Path, monitor: dict[str, Any], expected: dict[str, Any]) -> None:
    got, _ = _one(tmp_path, monitor)
    assert got is not None
    assert got.items() >= expected.items()


@pytest.mark.parametrize(("keyword_type", "absent"), [("ALERT_EXISTS", True), ("ALERT_NOT_EXISTS", False)])
def test_v3_keyword_types_say_when_to_alert(tmp_path: Path, keyword_type: str, absent: bool) -> None:
    src = tmp_path / "v3.json"
    monitor = {"id": 1, "friendlyName": "K", "type": "KEYWORD", "url": "https://a/", "interval": 60,
               "keywordType": keyword_type, "keywordValue": "maintenance"}  # fmt: skip
    src.write_text(json.dumps({"data": [monitor]}))
    (assertion,) = convert([src]).document["monitors"]["k"]["assertions"]
    assert (assertion["keyword"], assertion["absent"]) == ("maintenance", absent)


@pytest.mark.parametrize(
    ("monitor", "line"),
    [
        ({"type": 1, "url": "https://a/", "interval": 10}, "interval: 10 s raised to 30 s"),
        ({"type": 1, "url": "https://a/", "interval": 90000}, "interval: 90000 s lowered to 86400 s"),
        (
            {"type": 1, "url": "https://a/", "interval": 60, "timeout": 90},
            "timeout: 90 s lowered to the interval",
        ),
        ({"type": 9, "url": "x"}, "type: monitor type 9 has no check type here"),
        ({"type": 4, "url": "h", "sub_type": 99, "port": ""}, "port: no usable port"),
        ({"type": 1, "url": "https://a/", "http_username": "u", "http_auth_type": 2}, "digest"),
        (
            {"type": 1, "url": "https://a/", "alert_contacts": [{"id": "3"}]},
            "alert contact 3: no channel made",
        ),
    ],
)
def test_monitor_reports(tmp_path: Path, monitor: dict[str, Any], line: str) -> None:
    _, report = _one(tmp_path, monitor)
    assert any(line in r for r in report), report


@pytest.mark.parametrize(
    ("contact", "expected"),
    [
        ({"type": 11, "value": "https://hooks.slack.com/x"}, ("slack", "url")),
        ({"type": 23, "value": "https://discord.com/api/webhooks/1/a"}, ("discord", "url")),
        ({"type": 5, "value": "https://h.example/"}, ("webhook", "url")),
        ({"type": 16, "value": "abc123"}, ("pagerduty", "routing_key")),
        ({"type": 2, "value": "a@b.example"}, None),
        ({"type": 1, "value": "+4912345"}, None),
    ],
)
def test_contact_kinds(tmp_path: Path, contact: dict[str, Any], expected: tuple[str, str] | None) -> None:
    src = tmp_path / "c.json"
    src.write_text(
        json.dumps({"stat": "ok", "alert_contacts": [{"id": "4", "friendly_name": "C", **contact}]})
    )
    got = convert([src])
    if expected is None:
        assert "channels" not in got.document
        assert [d.setting for d in got.report] == ["type"]
        return
    kind, field = expected
    assert got.document["channels"]["c"] == {
        "kind": kind,
        "name": "C",
        "config": {field: "${UPTIMEROBOT_CONTACT_4_" + field.upper() + "}"},
    }
    assert got.secrets == {f"UPTIMEROBOT_CONTACT_4_{field.upper()}": contact["value"]}


def test_whole_fixture() -> None:
    got = convert(ALL)
    doc = got.document
    assert list(doc) == ["channels", "monitors", "maintenance"]
    assert list(doc["channels"]) == ["ops-slack", "hook"]
    assert list(doc["monitors"]) == [
        "homepage",
        "shop-keyword",
        "gateway-ping",
        "mail",
        "redis",
        "backup",
        "api-v3",
    ]
    assert doc["monitors"]["homepage"] == {
        "name": "Homepage",
        "type": "http",
        "url": "https://example.com/",
        "method": "POST",
        "auth": {"type": "basic", "username": "bob", "password": "${UPTIMEROBOT_MONITOR_101_PASSWORD}"},
        "headers": {"X-Probe": "uptimerobot"},
        "expected_status": ["2xx", "3xx", 404],
        "interval_seconds": 300,
        "timeout_seconds": 30,
        "remind_every_minutes": 30,
        "channels": ["ops-slack"],
    }
    assert doc["maintenance"] == {
        "weekend-patching": {
            "name": "Weekend patching",
            "recurring": {
                "rrule": "FREQ=WEEKLY;BYDAY=SA,SU",
                "starts_at": "2026-01-01T02:00",
                "duration_minutes": 60,
                "timezone": "UTC",
            },
            "monitors": ["homepage", "redis"],
        }
    }
    assert doc["monitors"]["shop-keyword"]["assertions"] == [
        {"type": "keyword", "keyword": "Error", "absent": True, "case_sensitive": True}
    ]
    assert doc["monitors"]["api-v3"]["follow_redirects"] is True
    assert got.secrets["UPTIMEROBOT_MONITOR_101_PASSWORD"] == "hunter2"
    assert [(d.where, d.setting) for d in got.report] == [
        ("alert contact 'Me' (id 8)", "type"),
        ("monitor 'Shop keyword' (id 102)", "interval"),
        ("monitor 'Shop keyword' (id 102)", "alert contact 8"),
        ("monitor 'Backup' (id 106)", "url"),
        ("monitor 'DNS v3' (id 202)", "type"),
        ("maintenance window 'Weekend patching' (id 55)", "start_time"),
        ("maintenance window 'Move' (id 56)", "monitors"),
    ]


def test_output_validates_against_the_models() -> None:
    doc = convert(ALL).document
    for body in doc["monitors"].values():
        MonitorCreate.model_validate({k: v for k, v in body.items() if k != "channels"})
    for body in doc["maintenance"].values():
        MaintenanceCreate.model_validate({k: v for k, v in body.items() if k != "monitors"})


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "a JSON object expected"),
        ('{"stat": "fail", "error": {}}', "an API error answer"),
        ('{"stat": "ok"}', "not an UptimeRobot listing"),
        ('{"stat": "ok", "monitors": [1]}', "'monitors' holds something other than objects"),
    ],
)
def test_bad_sources(tmp_path: Path, content: str, message: str) -> None:
    src = tmp_path / "bad.json"
    src.write_text(content)
    with pytest.raises(SourceError, match=message) as caught:
        convert([src])
    assert str(caught.value).startswith(f"{src}: ")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="cannot be read"):
        convert([tmp_path / "nope.json"])


def test_cli(tmp_path: Path) -> None:
    out = tmp_path / "out.yaml"
    result = CliRunner().invoke(main, ["import", "uptimerobot", *map(str, ALL), "-o", str(out)])
    assert result.exit_code == 0, result.output
    doc = yaml.safe_load(out.read_text())
    assert doc["monitors"]["redis"]["port"] == 6379
    secrets = out.with_name("out.yaml.secrets.env")
    assert stat.S_IMODE(secrets.stat().st_mode) == 0o600
    assert "UPTIMEROBOT_MONITOR_101_PASSWORD=hunter2" in secrets.read_text()
    assert "monitor 'DNS v3' (id 202): type:" in result.stderr
    assert "hunter2" not in result.stderr


def test_a_pagerduty_value_that_is_no_integration_key_is_reported(tmp_path: Path) -> None:
    src = tmp_path / "contacts.json"
    contact = {"id": "5", "friendly_name": "PD", "type": 16, "status": 2, "value": "pd-key"}
    src.write_text(json.dumps({"stat": "ok", "alert_contacts": [contact]}))
    got = convert([src])
    assert got.document["channels"]["pd"]["config"] == {"routing_key": "${UPTIMEROBOT_CONTACT_5_ROUTING_KEY}"}
    (line,) = [d.line() for d in got.report]
    assert line.startswith("alert contact 'PD' (id 5): value: not a 32-character Events API v2")
    assert "pd-key" not in line


def test_v3_integrations_and_alert_contacts_become_channels() -> None:
    fixtures = ALL[0].parent
    got = convert(
        [
            fixtures / "v3-monitors.json",
            fixtures / "v3-integrations.json",
            fixtures / "v3-alert-contacts.json",
        ]
    )
    channels = got.document["channels"]
    assert channels == {
        "ops-slack-v3": {
            "kind": "slack",
            "name": "Ops Slack v3",
            "config": {"url": "${UPTIMEROBOT_CONTACT_7_URL}"},
        },
        "paused-hook": {
            "kind": "webhook",
            "name": "Paused hook",
            "config": {"url": "${UPTIMEROBOT_CONTACT_10_URL}"},
        },
        "on-call": {
            "kind": "pagerduty",
            "name": "On call",
            "config": {"routing_key": "${UPTIMEROBOT_CONTACT_11_ROUTING_KEY}"},
        },
    }
    assert got.secrets["UPTIMEROBOT_CONTACT_7_URL"] == "https://hooks.slack.com/services/T0/B7/v3secret"
    # The v3 monitor's assignedAlertContacts reach the integration by its id.
    assert got.document["monitors"]["api-v3"]["channels"] == ["ops-slack-v3"]
    assert list(got.document["monitors"]) == ["api-v3"]  # integrations are not monitors
    lines = [d.line() for d in got.report]
    assert "alert contact 'Team chat' (id 9): type: MS Teams contacts have no channel kind here" in lines
    assert any(line.startswith("alert contact 'Paused hook' (id 10): status") for line in lines)
    assert any(
        line.startswith("alert contact 'Me by mail' (id 12): type: our email channel") for line in lines
    )
