"""A plan's field-level diff for every check type, channel kind, maintenance schedule, a status
page and ``depends_on``: each case of ``support.ascode`` applied, one field changed (in the text,
or a secret's value in its variable), and the dry run names that field, old -> new, with a
secret's values in neither the text nor the JSON of the plan; then the apply makes it so and
the next plan is empty."""

from __future__ import annotations

import json

import asyncpg
import pytest
from support.ascode import CASES, VARIABLES, apply, export, objects_in
from support.domain import Callers, callers_fixture, deps_fixture  # noqa: F401

from monitor.domain.context import Deps

CASE = dict(CASES)
SECRET = "(secret changed)"

# (id, case, (old text, new text) or a variable's new value, the plan's line of the field)
UPDATES: list[tuple[str, str, tuple[str, str] | dict[str, str], str]] = [
    ("http-method", "http-everything", ("method: POST", "method: PUT"), "method: 'POST' -> 'PUT'"),
    ("http-interval", "http-everything", ("interval_seconds: 45", "interval_seconds: 90"),
     "interval_seconds: 45.0 -> 90.0"),
    ("http-status", "http-everything", ('[200, "3xx", "401-403"]', "[200]"),
     "expected_status: [200, '300-399', '401-403'] -> [200]"),
    ("http-assertion", "http-everything", ("below_ms: 800", "below_ms: 900"),
     "assertions: [{'type': 'keyword'"),
    ("http-public-header", "http-everything", ("Accept: application/json", "Accept: text/plain"),
     "headers.Accept: 'application/json' -> 'text/plain'"),
    ("http-username", "http-everything", ("username: probe", "username: robot"),
     "auth.username: 'probe' -> 'robot'"),
    ("http-password", "http-everything", {"HTTP_PASSWORD": "changed-basic"}, f"auth.password: {SECRET}"),
    ("http-secret-header", "http-everything", {"API_TOKEN": "tok-654321"}, f"headers.X-Api-Key: {SECRET}"),
    ("http-bearer", "http-bearer-head", {"BEARER": "bearer-token-2"}, f"auth.token: {SECRET}"),
    ("tcp-port", "tcp", ("port: 2525", "port: 2526"), "port: 2525 -> 2526"),
    ("tls-server-name", "tls", ("server_name: www.example.test", "server_name: api.example.test"),
     "server_name: 'www.example.test' -> 'api.example.test'"),
    ("dns-expect", "dns", ("expect: contains", "expect: equals"), "expect: 'contains' -> 'equals'"),
    ("ping-count", "ping", ("count: 5", "count: 7"), "count: 5 -> 7"),
    ("heartbeat-grace", "heartbeat-interval", ("grace_seconds: 600", "grace_seconds: 900"),
     "grace_seconds: 600 -> 900"),
    ("heartbeat-timezone", "heartbeat-cron", ("timezone: Europe/Berlin", "timezone: Asia/Tokyo"),
     "timezone: 'Europe/Berlin' -> 'Asia/Tokyo'"),
    ("browser-viewport", "browser-journey", ("width: 1024", "width: 1280"), "viewport.width: 1024 -> 1280"),
    ("browser-fill", "browser-journey", {"LOGIN_PASSWORD": "hunter3-login"}, f"steps: {SECRET}"),
    ("pagespeed-profile", "pagespeed", ("profile: desktop", "profile: mobile"),
     "profile: 'desktop' -> 'mobile'"),
    ("telegram-chat", "channel-telegram", ("-1001234567890", "-1009876543210"),
     "config.chat_id: '-1001234567890' -> '-1009876543210'"),
    ("email-to", "channel-email", ("dev@example.test", "qa@example.test"),
     "config.to: ['ops@example.test', 'dev@example.test'] -> ['ops@example.test', 'qa@example.test']"),
    ("email-password", "channel-email", {"SMTP_PASSWORD": "smtp-pass-2"}, f"config.password: {SECRET}"),
    ("webhook-url", "channel-webhook", {"WEBHOOK_URL": "https://hooks.example.test/in/2"},
     f"config.url: {SECRET}"),
    ("webhook-header", "channel-webhook", {"WEBHOOK_AUTH": "Basic b3RoZXI6cGFzcw=="},
     f"config.headers.Authorization: {SECRET}"),
    ("slack-url", "channel-slack", {"SLACK_URL": "https://hooks.slack.com/services/T0/B0/abc"},
     f"config.url: {SECRET}"),
    ("slack-name", "channel-slack", ("kind: slack", "kind: slack\n    name: Ops"), "name: 'slack' -> 'Ops'"),
    ("discord-username", "channel-discord", ("username: monitor", "username: uptime"),
     "config.username: 'monitor' -> 'uptime'"),
    ("ntfy-priority", "channel-ntfy", ("priority_down: 4", "priority_down: 5"),
     "config.priority_down: 4 -> 5"),
    ("ntfy-token", "channel-ntfy", {"NTFY_TOKEN": "tk_other"}, f"config.token: {SECRET}"),
    ("pagerduty-severity", "channel-pagerduty", ("severity: error", "severity: warning"),
     "config.severity: 'error' -> 'warning'"),
    ("pagerduty-key", "channel-pagerduty", {"PD_KEY": "R0UTINGKEY0123456789012345678902"},
     f"config.routing_key: {SECRET}"),
    ("once-to", "maintenance-once", ("01:30:00+01:00", "02:30:00+01:00"),
     "once.to: '2027-03-02T00:30:00Z' -> '2027-03-02T01:30:00Z'"),
    ("recurring-duration", "maintenance-recurring", ("duration_minutes: 90", "duration_minutes: 120"),
     "recurring.duration_minutes: 90 -> 120"),
    ("recurring-monitors", "maintenance-recurring", ("monitors: [web, db]", "monitors: [db]"),
     "monitors: ['web', 'db'] -> ['db']"),
    ("notice-added", "maintenance-once", ("notify: true", "notify: true\n    public_text: Tonight."),
     "public_text: (none) -> 'Tonight.'"),
    ("notice-hours", "maintenance-notice", ("announce_hours: 72", "announce_hours: 0"),
     "announce_hours: 72 -> 0"),
    ("notice-removed", "maintenance-notice",
     ("    public_text: |\n      We upgrade the **storage** cluster; uploads may be slow.\n"
      "      Details: <https://example.com/maint>\n", ""),
     "public_text: 'We upgrade the **storage** cluster; uploads may be slow.\\nDetails: "),
    ("page-title", "status-page", ("title: Acme status", "title: Acme"), "title: 'Acme status' -> 'Acme'"),
    ("page-group", "status-page", ("{name: Website, monitors: [web]}", "{name: Website, monitors: [db]}"),
     "groups: [{'name': 'Website', 'monitors': ['web'], 'tags': []}"),
    ("depends-on", "depends-on-and-channels", ("depends_on: [db, gateway]", "depends_on: [gateway]"),
     "depends_on: ['db', 'gateway'] -> ['gateway']"),
    ("monitor-channels", "depends-on-and-channels", ("channels: [slack, pd]", "channels: [slack]"),
     "channels: ['pd', 'slack'] -> ['slack']"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "change", "line"), [u[1:] for u in UPDATES], ids=[u[0] for u in UPDATES])
async def test_a_changed_field_is_planned_and_applied(
    deps: Deps,
    callers: Callers,
    db: asyncpg.Connection,
    case: str,
    change: tuple[str, str] | dict[str, str],
    line: str,
) -> None:
    text, variables = CASE[case], dict(VARIABLES)
    await apply(deps, callers.owner, text, variables)
    if isinstance(change, dict):
        variables.update(change)
    else:
        assert text.count(change[0]) == 1, change[0]
        text = text.replace(*change)

    plan = await apply(deps, callers.owner, text, variables, dry_run=True)
    shown = plan.text()
    assert [c.action for c in plan.changes] == ["update"], shown
    assert plan.unchanged == objects_in(text) - 1
    (field,) = plan.changes[0].fields
    assert f"    {line}" in shown, shown
    assert line.startswith(f"{field.path}: ")
    as_json = json.dumps(plan.as_json())
    if isinstance(change, dict):
        assert field.secret
        for name, value in change.items():
            assert value not in shown and value not in as_json
            assert VARIABLES[name] not in shown and VARIABLES[name] not in as_json
    else:
        assert not field.secret and not field.drift

    done = await apply(deps, callers.owner, text, variables)
    assert done.applied and done.counts()["update"] == 1, done.text()
    assert (await apply(deps, callers.owner, text, variables)).empty
    exported = await export(deps, callers.owner.account_id)
    if isinstance(change, dict):
        assert set(change.values()) <= set(exported.secrets.values())


async def test_a_changed_type_or_kind_is_a_replacement(
    deps: Deps, callers: Callers, db: asyncpg.Connection
) -> None:
    before = """
channels:
  alerts: {kind: slack, config: {url: "${SLACK_URL}"}}
monitors:
  edge: {type: tcp, host: 127.0.0.1, port: 443, channels: [alerts]}
"""
    after = """
channels:
  alerts: {kind: discord, config: {url: "${DISCORD_URL}"}}
monitors:
  edge: {type: tls, host: 127.0.0.1, port: 443, channels: [alerts]}
"""
    await apply(deps, callers.owner, before, VARIABLES)
    old_ids = {r["id"] for r in await db.fetch("SELECT id FROM monitors UNION ALL SELECT id FROM channels")}
    plan = await apply(deps, callers.owner, after, VARIABLES, dry_run=True)
    shown = plan.text()
    assert [(c.action, c.key) for c in plan.changes] == [("replace", "alerts"), ("replace", "edge")], shown
    assert "    kind: 'slack' -> 'discord'" in shown and "    type: 'tcp' -> 'tls'" in shown
    assert VARIABLES["SLACK_URL"] not in shown and VARIABLES["DISCORD_URL"] not in shown
    done = await apply(deps, callers.owner, after, VARIABLES)
    assert done.counts()["replace"] == 2, done.text()
    rows = await db.fetch("SELECT m.id, m.type, c.kind FROM monitors m JOIN monitor_channels mc "
                          "ON mc.monitor_id = m.id JOIN channels c ON c.id = mc.channel_id")  # fmt: skip
    assert [(r["type"], r["kind"]) for r in rows] == [("tls", "discord")]
    assert rows[0]["id"] not in old_ids
    assert (await apply(deps, callers.owner, after, VARIABLES)).empty
