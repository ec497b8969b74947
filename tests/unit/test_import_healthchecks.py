"""Healthchecks importer: the pure mapping as tables, the fixture as a whole, bad sources, the CLI.

Fixtures (tests/fixtures/import/healthchecks/) follow the peer's templates/docs/api.md example
responses and hc/api/models.py Check.to_dict / Channel.to_dict at
healthchecks/healthchecks@29b5ec251059034b79e0120e2ff0c3e35d7bd9f8.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from monitor.ascode.importers import Imported, SourceError
from monitor.ascode.importers import healthchecks as hc
from monitor.ascode.importers.healthchecks import convert, convert_channels, convert_check, oncalendar_to_cron
from monitor.channels import REGISTRY
from monitor.cli import main
from monitor.domain.schemas import common, monitors
from monitor.domain.schemas.monitors import validate_create

FIXTURES = Path(__file__).parent.parent / "fixtures" / "import" / "healthchecks"
CHECKS = FIXTURES / "checks.json"
CHANNELS = FIXTURES / "channels.json"


@pytest.mark.parametrize(
    ("expression", "cron"),
    [
        ("*-*-* 02:00:00", "0 2 * * *"),
        ("*-*-* 2:05", "5 2 * * *"),
        ("Mon..Fri *-*-* 09:30:00", "30 9 * * 1-5"),
        ("Sat,Sun *-*-* 12:00", "0 12 * * 6,0"),
        ("daily", "0 0 * * *"),
        ("weekly", "0 0 * * 1"),
        ("hourly", "0 * * * *"),
        ("monthly", "0 0 1 * *"),
        ("*-*-01 00:00:00", None),
        ("Mon *-*-* 25:00", None),
        ("Foo *-*-* 10:00", None),
        ("*-*-* *:0/15", None),
    ],
)
def test_oncalendar(expression: str, cron: str | None) -> None:
    assert oncalendar_to_cron(expression) == cron


def _check(**fields: Any) -> dict[str, Any]:
    return {"name": "Job", "slug": "job", "tags": "", "desc": "", "grace": 300, "status": "up", **fields}


PING = ("ping_url", "point the job at the new monitor's ping URL (shown after apply)")


@pytest.mark.parametrize(
    ("fields", "monitor", "report"),
    [
        ({"timeout": 3600}, {"interval_seconds": 3600, "grace_seconds": 300}, []),
        (
            {"timeout": 604800},
            {"interval_seconds": 86400, "grace_seconds": 300},
            [("timeout", "604800 s is above our longest period (86400 s): set to 86400 s")],
        ),
        (
            {"timeout": 3600, "grace": 864000},
            {"interval_seconds": 3600, "grace_seconds": 604800},
            [("grace", "864000 s is above our longest grace (604800 s): set to that")],
        ),
        (
            {"schedule": "*/5 * * * *", "tz": "America/New_York"},
            {"cron": "*/5 * * * *", "timezone": "America/New_York", "grace_seconds": 300},
            [],
        ),
        (
            {"schedule": "0 3 * * *", "tz": "UTC", "status": "paused"},
            {"cron": "0 3 * * *", "timezone": "UTC", "grace_seconds": 300, "paused": True},
            [],
        ),
        (
            {"schedule": "Mon *-*-* 08:00", "tz": "Europe/Berlin"},
            {"cron": "0 8 * * 1", "timezone": "Europe/Berlin", "grace_seconds": 300},
            [],
        ),
        (
            {"schedule": "*-*-01 00:00:00", "tz": "UTC"},
            {"interval_seconds": 86400, "grace_seconds": 300},
            [
                (
                    "schedule",
                    "OnCalendar '*-*-01 00:00:00' has no 5-field cron equivalent we can write; "
                    "set cron by hand (the monitor expects a ping daily until then)",
                )
            ],
        ),
        (
            {"timeout": 60, "tags": "a b a bad/tag"},
            {"interval_seconds": 60, "grace_seconds": 300, "tags": ["a", "b"]},
            [("tags", "tag 'bad/tag' is not valid here (letters, digits, _.:-, at most 50)")],
        ),
        (
            {"timeout": 60, "tags": " ".join(f"t{n}" for n in range(22))},
            {"interval_seconds": 60, "grace_seconds": 300, "tags": [f"t{n}" for n in range(20)]},
            [("tags", "only the first 20 of 22 tags kept: t20 t21")],
        ),
        (
            {"schedule": "Mon *-*-* 08:00\nFri *-*-* 17:00", "tz": "UTC"},
            {"interval_seconds": 86400, "grace_seconds": 300},
            [
                (
                    "schedule",
                    "OnCalendar 'Mon *-*-* 08:00\\nFri *-*-* 17:00' has no 5-field cron equivalent we can "
                    "write; set cron by hand (the monitor expects a ping daily until then)",
                )
            ],
        ),
        (
            {"timeout": 60, "desc": "x", "manual_resume": True, "methods": "POST"},
            {"interval_seconds": 60, "grace_seconds": 300},
            [
                ("desc", "we have no description field"),
                ("manual_resume", "ours is up again with the next ping; there is no manual resume"),
                ("methods", "only POST pings were accepted; ours accepts GET and POST"),
            ],
        ),
        (
            {"timeout": 60, "filter_body": True, "failure_kw": "ERROR"},
            {"interval_seconds": 60, "grace_seconds": 300},
            [
                ("filter_body", "ours reads no keywords in a ping; use /start and /fail pings"),
                ("failure_kw", "ours reads no keywords in a ping; use /start and /fail pings"),
            ],
        ),
        (
            {"timeout": 60, "channels": "c1,c2"},
            {"interval_seconds": 60, "grace_seconds": 300},
            [("channels", "2 integration(s): give the channel listing (GET /api/v3/channels/) too")],
        ),
    ],
)
def test_check(fields: dict[str, Any], monitor: dict[str, Any], report: list[tuple[str, str]]) -> None:
    out = Imported()
    got = convert_check(_check(**fields), "job", None, out)
    assert got == {"type": "heartbeat", "name": "Job", **monitor}
    assert [(d.setting, d.reason) for d in out.report] == [*report, PING]
    assert all(d.where == "check 'Job'" for d in out.report)
    body = {k: v for k, v in got.items() if k != "channels"}
    validate_create(body, {"min_interval_seconds": 30})  # a body our API takes


@pytest.mark.parametrize(
    ("kind", "ours", "config"),
    [
        ("slack", "slack", {"url": "${HEALTHCHECKS_CHANNEL_X_URL}"}),
        ("discord", "discord", {"url": "${HEALTHCHECKS_CHANNEL_X_URL}"}),
        ("webhook", "webhook", {"url": "${HEALTHCHECKS_CHANNEL_X_URL}"}),
        ("ntfy", "ntfy", {"url": "${HEALTHCHECKS_CHANNEL_X_URL}"}),
        ("telegram", "telegram", {"chat_id": "${HEALTHCHECKS_CHANNEL_X_CHAT_ID}"}),
        ("pd", "pagerduty", {"routing_key": "${HEALTHCHECKS_CHANNEL_X_ROUTING_KEY}"}),
        (
            "email",
            "email",
            {
                "host": "${HEALTHCHECKS_CHANNEL_X_SMTP_HOST}",
                "from_address": "${HEALTHCHECKS_CHANNEL_X_FROM}",
                "to": ["${HEALTHCHECKS_CHANNEL_X_TO}"],
            },
        ),
        ("sms", None, None),
        ("zulip", None, None),
    ],
)
def test_channel(kind: str, ours: str | None, config: dict[str, Any] | None) -> None:
    out = Imported()
    keys = convert_channels([{"id": "u1", "name": "X", "kind": kind}], out)
    if ours is None:
        assert keys == {} and "channels" not in out.document
        assert [d.line() for d in out.report] == [
            f"integration 'X' (u1): kind: '{kind}' is a kind we do not have; checks using it lose it"
        ]
        return
    assert keys == {"u1": "x"}
    assert out.document["channels"] == {"x": {"kind": ours, "name": "X", "config": config}}
    assert set(out.secrets.values()) == {""}  # the API never gives them: to be filled in
    assert out.report[0].setting == "settings"


# A plausible value for each variable suffix: the channel's config, filled in, is one the API takes.
FILLED = {
    "URL": "https://hooks.example.com/services/T0/B0/x",
    "CHAT_ID": "-1001234567890",
    "ROUTING_KEY": "0123456789abcdef0123456789abcdef",
    "SMTP_HOST": "smtp.example.com",
    "FROM": "alerts@example.com",
    "TO": "ops@example.com",
}


@pytest.mark.parametrize("kind", sorted(hc.CHANNEL_KINDS))
def test_channel_filled_in_validates(kind: str) -> None:
    out = Imported()
    convert_channels([{"id": "u1", "name": "X", "kind": kind}], out)
    (made,) = out.document["channels"].values()
    text = json.dumps(made["config"])
    for variable in out.secrets:
        text = text.replace("${" + variable + "}", FILLED[variable.removeprefix("HEALTHCHECKS_CHANNEL_X_")])
    channel_kind = REGISTRY[made["kind"]]
    channel_kind.config.model_validate(json.loads(text))


def test_integrations_with_keys_alike_get_variables_of_their_own() -> None:
    out = Imported()
    channels = [
        {"id": "u1", "name": "Ops Slack", "kind": "slack"},
        {"id": "u2", "name": "ops_slack", "kind": "slack"},
    ]
    keys = convert_channels(channels, out)
    assert keys == {"u1": "ops-slack", "u2": "ops_slack"}
    urls = [out.document["channels"][k]["config"]["url"] for k in ("ops-slack", "ops_slack")]
    assert urls == ["${HEALTHCHECKS_CHANNEL_OPS_SLACK_URL}", "${HEALTHCHECKS_CHANNEL_OPS_SLACK_URL_2}"]
    assert sorted(out.secrets) == [u[2:-1] for u in urls]
    assert out.report[1].reason.endswith("fill in HEALTHCHECKS_CHANNEL_OPS_SLACK_URL_2")


def test_fixture() -> None:
    out = convert([CHECKS, CHANNELS])
    doc = out.document
    assert list(doc) == ["version", "channels", "monitors"]
    assert list(doc["channels"]) == ["my-work-email", "ops-slack"]
    assert doc["monitors"] == {
        "filesystem-backup": {
            "type": "heartbeat",
            "name": "Filesystem Backup",
            "interval_seconds": 3600,
            "grace_seconds": 600,
            "tags": ["backup", "fs"],
            "channels": ["my-work-email", "ops-slack"],
        },
        "database-backup": {
            "type": "heartbeat",
            "name": "Database Backup",
            "cron": "15 5 * * *",
            "timezone": "Europe/Riga",
            "grace_seconds": 1200,
            "paused": True,
            "tags": ["production", "db"],
            "channels": ["my-work-email"],
        },
        "weekday-report": {
            "type": "heartbeat",
            "name": "Weekday report",
            "cron": "30 9 * * 1-5",
            "timezone": "UTC",
            "grace_seconds": 3600,
        },
        "monthly-archive": {
            "type": "heartbeat",
            "name": "Monthly archive",
            "interval_seconds": 86400,
            "grace_seconds": 604800,
            "tags": ["archive"],
        },
    }
    assert sorted(out.secrets) == [
        "HEALTHCHECKS_CHANNEL_MY_WORK_EMAIL_FROM",
        "HEALTHCHECKS_CHANNEL_MY_WORK_EMAIL_SMTP_HOST",
        "HEALTHCHECKS_CHANNEL_MY_WORK_EMAIL_TO",
        "HEALTHCHECKS_CHANNEL_OPS_SLACK_URL",
    ]
    lines = [d.line() for d in out.report]
    assert len(lines) == 15
    assert sum("ping_url" in line for line in lines) == 4  # one per check
    assert (
        "check 'Monthly archive': channels: 1 integration(s) of kinds we do not have or not listed" in lines
    )
    assert not any("hc-ping.example" in line for line in lines)  # no ping URL (a secret) in the report


def test_checks_alone_report_their_channels() -> None:
    out = convert([CHECKS])
    assert "channels" not in out.document
    assert all("channels" not in m for m in out.document["monitors"].values())
    assert sum(d.setting == "channels" for d in out.report) == 3


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not JSON (line 1, column 2"),
        ('{"monitors": []}', "not a Healthchecks listing"),
        ("[1, 2]", "not a Healthchecks listing"),
        ('{"checks": {"a": 1}}', "'checks' is not a list of objects"),
        ('{"checks": [1]}', "'checks' is not a list of objects"),
    ],
)
def test_bad_source(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "checks.json"
    path.write_text(text)
    with pytest.raises(SourceError, match=str(path)) as caught:
        convert([path])
    assert message in str(caught.value)


def test_read_only_listing(tmp_path: Path) -> None:
    # templates/docs/api.md: a read-only key omits uuid, ping_url, the URLs and channels, and
    # adds unique_key. v1 (templates/docs/apiv1.md) has no uuid either; neither is needed.
    listing = json.loads(CHECKS.read_text())
    for check in listing["checks"]:
        for name in ("uuid", "ping_url", "update_url", "pause_url", "resume_url", "channels"):
            del check[name]
        check["unique_key"] = "a6c7b0a8a66bed0df66abfdab3c77736861703ee"
    path = tmp_path / "checks.json"
    path.write_text(json.dumps(listing))
    out = convert([path])
    assert len(out.document["monitors"]) == 4
    assert [d.line() for d in out.report if d.setting == "channels"] == [
        "check listing: channels: made with a read-only API key, it names no check's integrations; "
        "list the checks with a read-write key to carry them over"
    ]


def test_limits_match_the_api() -> None:
    assert hc.MAX_INTERVAL_SECONDS == monitors.MAX_INTERVAL_SECONDS
    assert hc.TAG.pattern == common.TAG.pattern


def test_no_check_listing(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no check listing given"):
        convert([CHANNELS])


def test_cli(tmp_path: Path) -> None:
    out = tmp_path / "out.yaml"
    result = CliRunner().invoke(main, ["import", "healthchecks", str(CHECKS), str(CHANNELS), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(out.read_text()) == json.loads(json.dumps(convert([CHECKS, CHANNELS]).document))
    secrets = tmp_path / "out.yaml.secrets.env"
    assert stat.S_IMODE(secrets.stat().st_mode) == 0o600
    assert "HEALTHCHECKS_CHANNEL_OPS_SLACK_URL=''" in secrets.read_text().splitlines()
    err = result.stderr
    assert (
        "not carried over: check 'Weekday report': ping_url: point the job at the new monitor's ping URL"
        in err
    )
    assert "imported 2 channels, 4 monitors; 15 setting(s) not carried over" in err
