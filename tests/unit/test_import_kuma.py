"""The Uptime Kuma importer on the fixture account (tests/fixtures/import/kuma) of 1.23 and
of 2.x -> the expected document and every setting reported, sources that are not kuma.db ->
SourceError, and the CLI. Types, providers and strategies one by one are
test_import_kuma_monitors.py and test_import_kuma_notifications.py; that the output is a
document `monitor apply` takes is tests/integration/test_import_kuma_judge.py."""

from __future__ import annotations

import sqlite3
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from support.kuma import VERSIONS, insert, kuma_db

from monitor.ascode.importers import SourceError
from monitor.ascode.importers.kuma import convert
from monitor.ascode.importers.kuma_db import read
from monitor.cli import main

REPORTED = {
    ("notification 'Telegram ops' (id 1)", "telegramBotToken"),
    ("notification 'Mail ops' (id 2)", "smtpCC"),
    ("notification 'Slack ops' (id 4)", "slackchannel"),
    ("notification 'Slack ops' (id 4)", "is_default"),
    ("notification 'Pushover' (id 8)", "type"),
    ("tag 'Production' (id 1)", "color"),
    ("tag 'team' (id 2)", "color"),
    ("tag 'Needs review!' (id 3)", "color"),
    ("monitor 'Status JSON' (id 3)", "tag 'Needs review!'"),
    ("monitor 'Login POST' (id 4)", "ignore_tls"),
    ("monitor 'Login POST' (id 4)", "interval"),
    ("monitor 'Database' (id 5)", "interval"),
    ("monitor 'Gateway' (id 6)", "notification 8"),
    ("monitor 'Nightly backup' (id 8)", "push_token"),
    ("monitor 'Web shop' (id 10)", "type"),
    ("monitor 'Shop' (id 11)", "interval"),
    ("monitor 'Shop' (id 11)", "description"),
    ("monitor 'Cache' (id 12)", "type"),
    ("monitor 'Old site gone' (id 13)", "interval"),
    ("monitor 'Old site gone' (id 13)", "upside_down"),
    ("monitor 'Reverse DNS' (id 14)", "dns_resolve_type"),
    ("monitor 'Game server' (id 15)", "type"),
    ("maintenance 'DB upgrade' (id 2)", "description"),
    ("maintenance 'DB upgrade' (id 2)", "status pages"),
    ("maintenance 'Month end' (id 3)", "days_of_month"),
    ("maintenance 'By hand' (id 6)", "strategy"),
    ("maintenance 'Switched off' (id 7)", "active"),
    ("status page 'Acme status' (id 1)", "icon"),
    ("status page 'Acme status' (id 1)", "group 'Backend'"),
    ("status page 'Acme status' (id 1)", "theme"),
    ("status page 'Acme status' (id 1)", "footer_text"),
    ("status page 'Acme status' (id 1)", "custom_css"),
    ("status page 'Acme status' (id 1)", "show_powered_by"),
    ("status page 'Acme status' (id 1)", "incidents"),
    ("status page 'Internal' (id 2)", "published"),
}
REPORTED_1X = {("status page 'Acme status' (id 1)", "google_analytics_tag_id")}
REPORTED_2X = {
    ("status page 'Acme status' (id 1)", "analytics_id"),  # the same setting, renamed by 2.0
    ("status page 'Acme status' (id 1)", "analytics_type"),
    ("status page 'Acme status' (id 1)", "auto_refresh_interval"),
    ("monitor 'Mail DNS' (id 7)", "conditions"),
    ("monitor 'Checkout' (id 9)", "remote_browser"),
    ("monitor 'Bearer API' (id 16)", "interval"),
    ("monitor 'Bearer API' (id 16)", "cache_bust"),
    ("monitor 'Mail server' (id 17)", "type"),
    ("monitor 'IMAPS' (id 18)", "interval"),
} | {
    (f"monitor '{name}' (id {mid})", "domain_expiry_notification")
    for mid, name in [
        (1, "Homepage"),
        (2, "API health"),
        (3, "Status JSON"),
        (4, "Login POST"),
        (5, "Database"),
        (6, "Gateway"),
        (7, "Mail DNS"),
        (8, "Nightly backup"),
        (9, "Checkout"),
        (11, "Shop"),
        (13, "Old site gone"),
        (16, "Bearer API"),
        (18, "IMAPS"),
    ]
}


@pytest.mark.parametrize("version", VERSIONS)
def test_fixture_account(tmp_path: Path, version: str) -> None:
    path = kuma_db(tmp_path, version)
    assert read(path).version == ("1.x" if version == "1.23" else "2.x")
    got = convert([path])
    doc = got.document
    assert set(doc["channels"]) == {
        "telegram-ops",
        "mail-ops",
        "hook",
        "slack-ops",
        "discord",
        "phone",
        "on-call",
    }
    monitors = {"homepage", "api-health", "status-json", "login-post", "database", "gateway", "mail-dns",
                "nightly-backup", "checkout", "shop", "old-site-gone"}  # fmt: skip
    assert set(doc["monitors"]) == monitors | ({"bearer-api", "imaps"} if version == "2.x" else set())
    assert doc["monitors"]["homepage"]["tags"] == ["Production", "team:web"]
    assert doc["monitors"]["homepage"]["channels"] == ["slack-ops", "telegram-ops"]
    assert doc["monitors"]["homepage"]["cert_warn_days"] == 21  # tlsExpiryNotifyDays' longest
    assert doc["monitors"]["shop"]["tags"] == ["group:Web-shop"] and doc["monitors"]["shop"]["paused"]
    json_assertion = {"1.23": {"path": "$.status", "op": "==", "value": "up"},
                      "2.x": {"path": "$.services.up", "op": ">=", "value": 3}}[version]  # fmt: skip
    assert doc["monitors"]["status-json"]["assertions"] == [{"type": "json", **json_assertion}]
    assert set(doc["maintenance"]) == {
        "sunday-patching",
        "db-upgrade",
        "month-end",
        "nightly",
        "every-3-days",
    }
    assert doc["maintenance"]["month-end"]["recurring"]["timezone"] == "Europe/Berlin"  # SAME_AS_SERVER
    acme = doc["status_pages"]["acme"]
    assert acme["domain"] == "status.acme.example"
    assert acme["groups"] == [
        {"name": "Website", "monitors": ["homepage", "shop", "checkout"]},
        {"name": "Backend", "monitors": ["api-health", "database"]},
    ]
    assert doc["status_pages"]["internal"]["show_urls"] is True
    expected = REPORTED | (REPORTED_1X if version == "1.23" else REPORTED_2X)
    assert {(d.where, d.setting) for d in got.report} == expected
    secrets = set(got.secrets.values())
    assert {"hunter2", "mailpw", "Bearer abc123", "https://hooks.slack.com/services/T0/B0/xyz"} <= secrets
    assert not set(_leaves(doc)) & secrets  # only references in the document


def _leaves(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _leaves(v)]
    if isinstance(value, list):
        return [s for v in value for s in _leaves(v)]
    return [value] if isinstance(value, str) else []


@pytest.mark.parametrize(
    ("page", "expected", "line"),
    [
        ({"slug": "ops", "icon": "https://cdn.example/logo.png"},
         {"slug": "ops", "logo_url": "https://cdn.example/logo.png"}, None),
        ({"slug": "Ops_Team"}, {"slug": "ops-team"}, "slug: 'Ops_Team' written as 'ops-team'"),
        ({"slug": "ops", "password": "pw"}, {"slug": "ops"}, "password: (set): not carried over"),
        ({"slug": "ops", "search_engine_index": 0}, {"slug": "ops"}, "search_engine_index: 0"),
        ({"slug": "ops", "show_tags": 1}, {"slug": "ops"}, "show_tags: 1"),
    ],
)  # fmt: skip
def test_status_page(
    tmp_path: Path, page: dict[str, Any], expected: dict[str, Any], line: str | None
) -> None:
    path = kuma_db(tmp_path, "1.23", "")
    insert(path, "monitor", id=1, name="M", type="ping", hostname="h", interval=60)
    insert(path, "status_page", **{"id": 1, "title": "Ops", "icon": "/icon.svg", "theme": "light", **page})
    insert(path, "group", id=1, name="All", status_page_id=1)
    insert(path, "monitor_group", monitor_id=1, group_id=1)
    got = convert([path])
    (body,) = got.document["status_pages"].values()
    assert body == {"title": "Ops", "groups": [{"name": "All", "monitors": ["m"]}], **expected}
    report = [d.line() for d in got.report]
    assert report == ([] if line is None else [r for r in report if line in r]) and (line is None or report)
    assert "pw" not in " ".join(report)


def test_status_page_without_imported_monitors(tmp_path: Path) -> None:
    path = kuma_db(tmp_path, "1.23", "")
    insert(path, "monitor", id=1, name="Q", type="mqtt")
    insert(path, "status_page", id=1, slug="ops", title="Ops", icon="/icon.svg", theme="light")
    insert(path, "group", id=1, name="All", status_page_id=1)
    insert(path, "monitor_group", monitor_id=1, group_id=1)
    got = convert([path])
    assert "status_pages" not in got.document
    assert "status page 'Ops' (id 1): groups: no group with an imported monitor: left out" in [
        d.line() for d in got.report
    ]


def test_not_sqlite(tmp_path: Path) -> None:
    src = tmp_path / "kuma.db"
    src.write_text("monitors:\n  - name: x\n" * 200)
    with pytest.raises(SourceError, match="not an SQLite database") as caught:
        convert([src])
    assert str(caught.value).startswith(f"{src}: ")


def test_sqlite_without_monitors(tmp_path: Path) -> None:
    src = tmp_path / "other.db"
    conn = sqlite3.connect(src)
    conn.execute("CREATE TABLE things (id INTEGER)")
    conn.close()
    with pytest.raises(SourceError, match=f"^{src}: no 'monitor' table"):
        convert([src])


def test_one_database_at_a_time(tmp_path: Path) -> None:
    one = kuma_db(tmp_path, "1.23")
    with pytest.raises(SourceError, match=r"one kuma\.db at a time"):
        convert([one, one])


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="cannot be read"):
        convert([tmp_path / "nope.db"])


def test_read_only(tmp_path: Path) -> None:
    path = kuma_db(tmp_path, "2.x")
    before = path.read_bytes()
    path.chmod(0o444)
    convert([path])
    assert path.read_bytes() == before and not path.with_name(path.name + "-journal").exists()


def test_a_name_that_is_not_a_uri(tmp_path: Path) -> None:
    odd = tmp_path / "my kuma?#1.db"
    kuma_db(tmp_path, "1.23").rename(odd)
    assert "monitors" in convert([odd]).document


def test_cli(tmp_path: Path) -> None:
    src, out = kuma_db(tmp_path, "1.23"), tmp_path / "out.yaml"
    result = CliRunner().invoke(main, ["import", "kuma", str(src), "-o", str(out)])
    assert result.exit_code == 0, result.output
    doc = yaml.safe_load(out.read_text())
    assert doc["monitors"]["database"] == {
        "name": "Database", "type": "tcp", "host": "db.example.com", "port": 5432, "interval_seconds": 30,
        "confirm_after": 1, "tags": ["Production"], "channels": ["discord", "phone"],
    }  # fmt: skip
    secrets = out.with_name("out.yaml.secrets.env")
    assert stat.S_IMODE(secrets.stat().st_mode) == 0o600
    assert "KUMA_MONITOR_4_AUTH_PASSWORD=hunter2" in secrets.read_text()
    assert "not carried over: monitor 'Cache' (id 12): type:" in result.stderr
    assert "setting(s) not carried over" in result.stderr
    assert "hunter2" not in result.stderr and "mailpw" not in result.stderr


def test_cli_refuses_other_files(tmp_path: Path) -> None:
    src = tmp_path / "config.yaml"
    src.write_text("endpoints: []\n")
    result = CliRunner().invoke(main, ["import", "kuma", str(src)])
    assert result.exit_code == 1
    assert f"{src}: not an SQLite database" in result.stderr and "Traceback" not in result.output
