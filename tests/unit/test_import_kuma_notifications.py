"""The Uptime Kuma importer's notifications and maintenance: each provider's config (field
names as server/notification-providers/*.js read them) and each maintenance strategy ->
our channel or window, or a report line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.kuma import insert, kuma_db

from monitor.ascode.importers.kuma import convert

NOTIFICATIONS = [
    (
        {"type": "telegram", "telegramChatID": "-100123", "telegramBotToken": "1:A"},
        ("telegram", {"chat_id": "-100123"}),
        ["telegramBotToken: the bot here is the server's"],
    ),
    (
        {
            "type": "smtp",
            "smtpHost": "mx",
            "smtpPort": 465,
            "smtpSecure": True,
            "smtpFrom": "Kuma <k@x.example>",
            "smtpTo": "a@x.example,b@x.example",
            "smtpPassword": "pw",
            "smtpUsername": "k",
            "customSubject": "S",
        },
        (
            "email",
            {
                "host": "mx",
                "port": 465,
                "security": "tls",
                "from_address": "k@x.example",
                "to": ["a@x.example", "b@x.example"],
                "username": "k",
                "password": "${KUMA_NOTIFICATION_1_PASSWORD}",
            },
        ),
        ["customSubject: not carried over"],
    ),
    (
        {
            "type": "smtp",
            "smtpHost": "mx",
            "smtpFrom": "k@x.example",
            "smtpTo": "a@x.example",
            "smtpIgnoreSTARTTLS": True,
        },
        ("email", {"host": "mx", "security": "none", "from_address": "k@x.example", "to": ["a@x.example"]}),
        [],
    ),
    (
        {
            "type": "webhook",
            "webhookURL": "https://h/",
            "webhookContentType": "custom",
            "webhookCustomBody": "{}",
        },
        ("webhook", {"url": "${KUMA_NOTIFICATION_1_URL}"}),
        ["webhookContentType: 'custom'", "webhookCustomBody: not carried over"],
    ),
    (
        {"type": "slack", "slackwebhookURL": "https://hooks.slack.com/x", "slackchannel": "#a"},
        ("slack", {"url": "${KUMA_NOTIFICATION_1_URL}"}),
        ["slackchannel: not carried over"],
    ),
    (
        {
            "type": "discord",
            "discordWebhookUrl": "https://discord.com/api/webhooks/1/a",
            "discordChannelType": "postToThread",
            "threadId": "9",
        },
        ("discord", {"url": "${KUMA_NOTIFICATION_1_URL}"}),
        ["discordChannelType: posts go to the webhook's channel", "threadId: not carried over"],
    ),
    (
        {
            "type": "ntfy",
            "ntfyserverurl": "https://ntfy.example/",
            "ntfytopic": "t",
            "ntfyPriority": 3,
            "ntfyPriorityDown": 5,
        },
        ("ntfy", {"url": "${KUMA_NOTIFICATION_1_URL}", "priority_up": 3, "priority_down": 5}),
        [],
    ),
    (
        {
            "type": "ntfy",
            "ntfyserverurl": "https://ntfy.sh",
            "ntfytopic": "t",
            "ntfyAuthenticationMethod": "usernamePassword",
            "ntfyusername": "u",
            "ntfypassword": "p",
        },
        ("ntfy", {"url": "${KUMA_NOTIFICATION_1_URL}"}),
        ["ntfyusername: user and password are not supported"],
    ),
    (
        {
            "type": "PagerDuty",
            "pagerdutyIntegrationKey": "a" * 32,
            "pagerdutyPriority": "error",
            "pagerdutyAutoResolve": "0",
        },
        ("pagerduty", {"routing_key": "${KUMA_NOTIFICATION_1_ROUTING_KEY}", "severity": "error"}),
        ["pagerdutyAutoResolve: '0'"],
    ),
    (
        {"type": "PagerDuty", "pagerdutyIntegrationKey": "short"},
        ("pagerduty", {"routing_key": "${KUMA_NOTIFICATION_1_ROUTING_KEY}"}),
        ["not a 32-character Events API v2 key"],
    ),
    (  # what Kuma's forms fill in by themselves is not reported
        {"type": "telegram", "telegramChatID": "42", "telegramServerUrl": "https://api.telegram.org"},
        ("telegram", {"chat_id": "42"}),
        [],
    ),
    (
        {"type": "slack", "slackwebhookURL": "https://hooks.slack.com/x", "slackIncludeGroupName": True},
        ("slack", {"url": "${KUMA_NOTIFICATION_1_URL}"}),
        [],
    ),
    (
        {"type": "gotify", "gotifyserverurl": "https://g/"},
        None,
        ["type: gotify notifications have no channel kind here"],
    ),
    ({"type": "slack"}, None, ["slackwebhookURL: no webhook URL"]),
]


@pytest.mark.parametrize(("config", "expected", "lines"), NOTIFICATIONS)
def test_notification(
    tmp_path: Path, config: dict[str, Any], expected: tuple[str, dict[str, Any]] | None, lines: list[str]
) -> None:
    path = kuma_db(tmp_path, "1.23", "")
    insert(path, "notification", id=1, name="N", user_id=1, config=json.dumps({"name": "N", **config}))
    got = convert([path])
    channel = got.document.get("channels", {}).get("n")
    if expected is None:
        assert channel is None
    else:
        assert channel == {"kind": expected[0], "name": "N", "config": expected[1]}
    report = [d.line() for d in got.report]
    for line in lines:
        assert any(line in r for r in report), report
    if channel is not None:
        assert len(report) == len(lines), report  # nothing else reported: every field read or listed


MAINTENANCE = [
    (
        {
            "strategy": "single",
            "start_date": "2026-05-01 22:00:00",
            "end_date": "2026-05-02 02:00:00",
            "timezone": "Europe/Berlin",
        },
        {"once": {"from": "2026-05-01T22:00:00+02:00", "to": "2026-05-02T02:00:00+02:00"}},
    ),
    (
        {
            "strategy": "recurring-weekday",
            "weekdays": "[6, 0]",
            "start_time": "01:30",
            "end_time": "02:15",
            "timezone": "UTC",
        },
        {
            "recurring": {
                "rrule": "FREQ=WEEKLY;BYDAY=SA,SU",
                "starts_at": "2026-01-01T01:30",
                "duration_minutes": 45,
                "timezone": "UTC",
            }
        },
    ),
    (
        {
            "strategy": "recurring-day-of-month",
            "days_of_month": '[1, "lastDay1"]',
            "start_time": "22:00",
            "end_time": "00:00",
            "timezone": "UTC",
            "start_date": "2026-03-01 00:00:00",
            "end_date": "2026-12-31 00:00:00",
        },
        {
            "recurring": {
                "rrule": "FREQ=MONTHLY;BYMONTHDAY=1,-1;UNTIL=20261231T000000",
                "starts_at": "2026-03-01T22:00",
                "duration_minutes": 120,
                "timezone": "UTC",
            }
        },
    ),
    (
        {
            "strategy": "recurring-interval",
            "interval_day": 2,
            "start_time": "03:00",
            "end_time": "03:10",
            "start_date": "2026-04-02 00:00:00",
            "timezone": "Asia/Tokyo",
        },
        {
            "recurring": {
                "rrule": "FREQ=DAILY;INTERVAL=2",
                "starts_at": "2026-04-02T03:00",
                "duration_minutes": 10,
                "timezone": "Asia/Tokyo",
            }
        },
    ),
    (
        {"strategy": "cron", "cron": "0 4 * * 1-5", "duration": 5400, "timezone": "UTC"},
        {"recurring": {"cron": "0 4 * * 1-5", "duration_minutes": 90, "timezone": "UTC"}},
    ),
]


@pytest.mark.parametrize(("row", "expected"), MAINTENANCE)
def test_maintenance(tmp_path: Path, row: dict[str, Any], expected: dict[str, Any]) -> None:
    path = kuma_db(tmp_path, "1.23", "")
    insert(path, "monitor", id=1, name="M", type="ping", hostname="h", interval=60)
    insert(path, "maintenance", id=1, title="W", description="", **row)
    insert(path, "monitor_maintenance", monitor_id=1, maintenance_id=1)
    got = convert([path])
    assert got.document["maintenance"] == {"w": {"name": "W", **expected, "monitors": ["m"]}}


@pytest.mark.parametrize(
    ("row", "line"),
    [
        ({"strategy": "manual"}, "strategy: manual maintenance has no schedule"),
        (
            {"strategy": "single", "start_date": "2026-05-01 22:00:00", "end_date": "2026-05-01 21:00:00"},
            "a single window needs a start and a later end",
        ),
        (
            {"strategy": "recurring-weekday", "weekdays": "[]", "start_time": "01:00", "end_time": "02:00"},
            "no weekday picked",
        ),
        (
            {
                "strategy": "single",
                "start_date": "2026-05-01 22:00:00",
                "end_date": "2026-05-02 01:00:00",
                "active": 0,
            },
            "active: paused in Kuma",
        ),
        ({"strategy": "cron", "cron": "0 4 * * *", "duration": 0}, "cannot be carried over"),
        (
            {
                "strategy": "single",
                "start_date": "2026-05-01 22:00:00",
                "end_date": "2026-05-02 01:00:00",
                "timezone": "Mars/Olympus",
            },
            "timezone: 'Mars/Olympus' is not an IANA time zone: read as UTC",
        ),
    ],
)
def test_maintenance_reports(tmp_path: Path, row: dict[str, Any], line: str) -> None:
    path = kuma_db(tmp_path, "1.23", "")
    insert(path, "monitor", id=1, name="M", type="ping", hostname="h", interval=60)
    insert(path, "maintenance", id=1, title="W", description="", **row)
    insert(path, "monitor_maintenance", monitor_id=1, maintenance_id=1)
    report = [d.line() for d in convert([path]).report]
    assert any(r.startswith("maintenance 'W' (id 1): ") and line in r for r in report), report
