"""The Uptime Kuma importer's monitors: each type and setting of one-row databases of each
schema version -> our monitor's fields or a report line, and tags in our grammar."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.kuma import insert, kuma_db

from monitor.ascode.importers import Imported
from monitor.ascode.importers.kuma import convert, tag_of


def _one_monitor(
    tmp_path: Path, version: str, **columns: Any
) -> tuple[dict[str, Any] | None, list[str], Imported]:
    path = kuma_db(tmp_path, version, "")
    insert(path, "monitor", **{"id": 1, "name": "M", "interval": 60, **columns})
    got = convert([path])
    return got.document.get("monitors", {}).get("m"), [d.line() for d in got.report], got


@pytest.mark.parametrize(
    ("columns", "expected"),
    [
        (
            {"type": "http", "url": "https://a/"},
            {
                "type": "http",
                "url": "https://a/",
                "follow_redirects": True,
                "expected_status": ["200-299"],
                "confirm_after": 1,
            },
        ),
        ({"type": "http", "url": "https://a/", "maxretries": 3}, {"confirm_after": 4}),
        ({"type": "http", "url": "https://a/", "maxredirects": 0}, {"expected_status": ["200-299"]}),
        (
            {"type": "http", "url": "https://a/", "accepted_statuscodes_json": '["200-299", "418"]'},
            {"expected_status": ["200-299", 418]},
        ),
        (
            {
                "type": "http",
                "url": "https://a/",
                "method": "post",
                "body": "x=1",
                "http_body_encoding": "form",
            },
            {"method": "POST", "body": "x=1", "content_type": "application/x-www-form-urlencoded"},
        ),
        (
            {"type": "http", "url": "https://a/", "headers": '{"Accept": "text/html"}'},
            {"headers": {"Accept": "text/html"}},
        ),
        (
            {"type": "http", "url": "https://a/", "headers": '{"Cookie": "s=1"}'},
            {"headers": {"Cookie": "${KUMA_MONITOR_1_HEADER_COOKIE}"}},
        ),
        (
            {"type": "http", "url": "https://a/", "basic_auth_user": "u", "basic_auth_pass": "p"},
            {
                "auth": {
                    "type": "basic",
                    "username": "u",
                    "password": "${KUMA_MONITOR_1_AUTH_PASSWORD}",
                }
            },
        ),
        (  # an empty password stays inline: a reference may not be empty
            {"type": "http", "url": "https://a/", "basic_auth_user": "u", "basic_auth_pass": ""},
            {
                "auth": {
                    "type": "basic",
                    "username": "u",
                    "password": "",
                }
            },
        ),
        ({"type": "http", "url": "https://a/", "ignore_tls": 1}, {"tls_verify": False}),
        ({"type": "http", "url": "https://a/", "expiry_notification": 0}, {"cert_warn_days": 0}),
        ({"type": "http", "url": "https://a/", "active": 0}, {"paused": True}),
        ({"type": "http", "url": "https://a/", "timeout": 12.5}, {"timeout_seconds": 12.5}),
        ({"type": "http", "url": "https://a/", "resend_interval": 5}, {"remind_every_minutes": 5}),
        (
            {"type": "keyword", "url": "https://a/", "keyword": "OK", "invert_keyword": 1},
            {"assertions": [{"type": "keyword", "keyword": "OK", "absent": True, "case_sensitive": True}]},
        ),
        (
            {
                "type": "json-query",
                "url": "https://a/",
                "json_path": "data.items[0].state",
                "expected_value": "up",
            },
            {"assertions": [{"type": "json", "path": "$.data.items[0].state", "op": "==", "value": "up"}]},
        ),
        (
            {"type": "json-query", "url": "https://a/", "json_path": "$.count", "expected_value": "2"},
            {"assertions": [{"type": "json", "path": "$.count", "op": "==", "value": 2}]},
        ),
        (
            {"type": "json-query", "url": "https://a/", "json_path": "ok", "expected_value": "true"},
            {"assertions": [{"type": "json", "path": "$.ok", "op": "==", "value": True}]},
        ),
        (
            {"type": "port", "hostname": "db.example", "port": 5432},
            {"type": "tcp", "host": "db.example", "port": 5432},
        ),
        ({"type": "ping", "hostname": "h.example"}, {"type": "ping", "host": "h.example"}),
        (
            {
                "type": "dns",
                "hostname": "example.com",
                "dns_resolve_type": "TXT",
                "dns_resolve_server": "9.9.9.9",
                "port": 5353,
            },
            {"type": "dns", "domain": "example.com", "record_type": "TXT", "nameservers": ["9.9.9.9:5353"]},
        ),
        (
            {"type": "push", "push_token": "abc", "interval": 3600},
            {"type": "heartbeat", "interval_seconds": 3600},
        ),
        (
            {"type": "real-browser", "url": "https://shop/", "interval": 900},
            {"type": "browser", "url": "https://shop/"},
        ),
    ],
)
def test_monitor_mapping(tmp_path: Path, columns: dict[str, Any], expected: dict[str, Any]) -> None:
    got, _, _ = _one_monitor(tmp_path, "1.23", **columns)
    assert got is not None
    assert {k: got.get(k) for k in expected} == expected


@pytest.mark.parametrize(
    ("columns", "expected"),
    [
        (
            {
                "type": "json-query",
                "url": "https://a/",
                "json_path": "n",
                "json_path_operator": ">",
                "expected_value": "1.5",
            },
            {"assertions": [{"type": "json", "path": "$.n", "op": ">", "value": 1.5}]},
        ),
        (
            {
                "type": "json-query",
                "url": "https://a/",
                "json_path": "v",
                "json_path_operator": "contains",
                "expected_value": "beta",
            },
            {"assertions": [{"type": "json", "path": "$.v", "op": "contains", "value": "beta"}]},
        ),
        (
            {"type": "http", "url": "https://a/", "auth_method": "bearer", "bearer_token": "t"},
            {"auth": {"type": "bearer", "token": "${KUMA_MONITOR_1_AUTH_TOKEN}"}},
        ),
        ({"type": "ping", "hostname": "h", "ping_count": 4}, {"count": 4}),
        ({"type": "port", "hostname": "h", "port": 993, "smtp_security": "secure"}, {"tls": True}),
    ],
)
def test_monitor_mapping_2x(tmp_path: Path, columns: dict[str, Any], expected: dict[str, Any]) -> None:
    got, _, imported = _one_monitor(tmp_path, "2.x", **columns)
    assert got is not None
    assert {k: got.get(k) for k in expected} == expected
    assert "t" not in [v for v in got.values() if isinstance(v, str)]  # the token is a reference
    if "auth" in expected:
        assert imported.secrets["KUMA_MONITOR_1_AUTH_TOKEN"] == "t"


@pytest.mark.parametrize(
    ("version", "columns", "line"),
    [
        ("1.23", {"type": "http", "url": "https://a/", "interval": 20}, "interval: 20 s raised to 30 s"),
        (
            "1.23",
            {"type": "real-browser", "url": "https://a/", "interval": 60},
            "interval: 60 s raised to 300 s",
        ),
        ("1.23", {"type": "http", "url": "https://a/", "timeout": 90}, "timeout: 90 s lowered to 60 s"),
        (
            "1.23",
            {"type": "http", "url": "https://a/", "maxretries": 2, "retry_interval": 20},
            "retry_interval: 20 s",
        ),
        ("1.23", {"type": "http", "url": "https://a/", "upside_down": 1}, "upside_down: no upside-down mode"),
        (
            "1.23",
            {"type": "http", "url": "https://a/", "auth_method": "ntlm", "basic_auth_user": "u"},
            "auth_method: 'ntlm' authentication is not supported",
        ),
        ("1.23", {"type": "http", "url": "https://a/", "body": "x"}, "body: a GET request has no body here"),
        ("1.23", {"type": "http", "url": "https://a/", "headers": "not json"}, "headers: not a JSON object"),
        ("1.23", {"type": "http", "url": "https://a/", "proxy_id": 3}, "proxy_id: not carried over"),
        ("1.23", {"type": "http", "url": "https://a/", "tls_cert": "PEM"}, "tls_cert: not carried over"),
        (
            "1.23",
            {"type": "http", "url": "https://a/", "description": "d"},
            "description: monitors have no description",
        ),
        (
            "1.23",
            {"type": "json-query", "url": "https://a/", "json_path": "$sum(items.n)", "expected_value": "3"},
            "json_path: JSONata '$sum(items.n)' is not a plain path",
        ),
        (
            "1.23",
            {"type": "dns", "hostname": "x", "dns_resolve_type": "PTR"},
            "'PTR' records are not checked here",
        ),
        ("1.23", {"type": "ping", "hostname": "h", "packet_size": 1400}, "packet_size: 1400 bytes"),
        (
            "1.23",
            {"type": "push", "push_token": "abc"},
            "push_token: the job must push to this monitor's new ping_url",
        ),
        (
            "1.23",
            {"type": "docker", "docker_container": "web"},
            "type: 'docker' monitors have no check type here",
        ),
        ("1.23", {"type": "mqtt", "mqtt_topic": "t"}, "type: 'mqtt' monitors have no check type here"),
        ("2.x", {"type": "http", "url": "https://a/", "cache_bust": 1}, "cache_bust: not carried over"),
        (
            "2.x",
            {"type": "http", "url": "https://a/", "conditions": '[{"x": 1}]'},
            "conditions: Kuma's conditions",
        ),
        ("2.x", {"type": "port", "hostname": "h", "port": 25, "smtp_security": "starttls"}, "no STARTTLS"),
        (
            "2.x",
            {
                "type": "json-query",
                "url": "https://a/",
                "json_path": "n",
                "json_path_operator": ">",
                "expected_value": "many",
            },
            "'many' is not a number",
        ),
        (
            "2.x",
            {"type": "real-browser", "url": "https://a/", "interval": 300, "remote_browser": 1},
            "remote_browser: ours runs the browser itself",
        ),
        ("2.x", {"type": "smtp", "hostname": "h"}, "type: 'smtp' monitors have no check type here"),
    ],
)
def test_monitor_reports(tmp_path: Path, version: str, columns: dict[str, Any], line: str) -> None:
    _, report, _ = _one_monitor(tmp_path, version, **columns)
    assert any(line in r and r.startswith("monitor 'M' (id 1): ") for r in report), report


@pytest.mark.parametrize(
    ("text", "tag"),
    [
        ("Production", "Production"),
        ("team:web", "team:web"),
        ("Needs review!", "Needs-review"),
        ("env: eu west", "env:-eu-west"),
        ("!!!", None),
        ("Ünïcode", "n-code"),
        ("x" * 60, "x" * 50),
    ],
)
def test_tag_grammar(text: str, tag: str | None) -> None:
    assert tag_of(text) == tag


# Every (where, setting) the fixture account reports, by version: nothing dropped silently.
