"""Documents of configuration as code for the integration tests (test_apply_roundtrip.py,
test_apply_updates.py): one case per check type, channel kind, maintenance schedule, a status
page and ``depends_on``, the values of their ``${VARIABLE}`` references, and the package's own
functions to apply and export them (no CLI: a case takes a fraction of a second).

Targets are on loopback (the tests' address policy allows 127.0.0.0/8); channels' hosts are
names that never resolve here, which a channel may have (they are vetted when sending).
"""

from __future__ import annotations

import base64
from typing import Any

from monitor.ascode import applying, exporting, state
from monitor.ascode.planning import Plan
from monitor.ascode.reading import Document, Secrets, read_texts
from monitor.domain.context import Actor, Deps

# The values of the cases' ${VARIABLE} references.
VARIABLES = {
    "HTTP_PASSWORD": "s3cret-basic",
    "API_TOKEN": "tok-123456",
    "COOKIE": "session=abc",
    "BEARER": "bearer-token-1",
    "LOGIN_PASSWORD": "hunter2-login",
    "OTP": "123456",
    "SMTP_PASSWORD": "smtp-pass",
    "WEBHOOK_URL": "https://hooks.example.test/in/1",
    "WEBHOOK_SECRET": "whsec_" + base64.b64encode(b"signing key of 24 bytes!").decode(),
    "WEBHOOK_AUTH": "Basic dXNlcjpwYXNz",
    "SLACK_URL": "https://hooks.slack.com/services/T0/B0/xyz",
    "SLACK_URL_2": "https://hooks.slack.com/services/T0/B0/other",
    "DISCORD_URL": "https://discord.com/api/webhooks/1/abc",
    "NTFY_URL": "https://ntfy.example.test/alerts",
    "NTFY_TOKEN": "tk_ntfy",
    "PD_KEY": "R0UTINGKEY0123456789012345678901",
}

CASES: list[tuple[str, str]] = [
    (
        "http-everything",
        """
monitors:
  web:
    name: Web front
    url: http://127.0.0.1:8080/health?full=1
    method: POST
    headers:
      Accept: application/json
      X-Api-Key: ${API_TOKEN}
      Cookie: ${COOKIE}
    body: '{"ping": true}'
    content_type: application/json
    auth: {type: basic, username: probe, password: "${HTTP_PASSWORD}"}
    max_body_bytes: 65536
    expected_status: [200, "3xx", "401-403"]
    follow_redirects: true
    interval_seconds: 45
    timeout_seconds: 20
    confirm_after: 3
    recover_after: 2
    remind_every_minutes: 60
    remind_max: 5
    degraded_above_ms: 1500
    cert_warn_days: 30
    flap_threshold: 5
    flap_window_minutes: 60
    paused: true
    tags: [web, api]
    assertions:
      - {type: keyword, keyword: ok, case_sensitive: false}
      - {type: keyword, keyword: error, absent: true}
      - {type: regex, pattern: "^v[0-9]+"}
      - {type: json, path: $.status, op: "==", value: up}
      - {type: json, path: $.items, op: not_empty}
      - {type: json, path: $.count, op: ">=", value: 3}
      - {type: header, name: Content-Type, op: contains, value: json}
      - {type: header, name: X-Served-By, op: exists}
      - {type: response_time, below_ms: 800}
      - {type: security_headers, min_grade: A}
      - type: seo
        canonical: http://127.0.0.1:8080/health
        description: true
        sitemap_url: http://127.0.0.1:8080/sitemap.xml
        user_agents: [Googlebot, "*"]
""",
    ),
    (
        "http-bearer-head",
        """
monitors:
  api:
    url: http://127.0.0.1:8081/
    method: HEAD
    auth: {type: bearer, token: "${BEARER}"}
""",
    ),
    (
        "tcp",
        """
monitors:
  smtp:
    type: tcp
    host: 127.0.0.1
    port: 2525
    send: "EHLO monitor\\r\\n"
    expect: "250"
    tls: true
    interval_seconds: 120
""",
    ),
    (
        "tls",
        """
monitors:
  cert:
    type: tls
    host: 127.0.0.1
    port: 8443
    server_name: www.example.test
    cert_warn_days: 21
""",
    ),
    (
        "dns",
        """
monitors:
  mx:
    type: dns
    domain: example.test
    record_type: MX
    nameservers: [127.0.0.1]
    expect: contains
    values: [10 mail.example.test.]
""",
    ),
    (
        "ping",
        """
monitors:
  gw:
    type: ping
    host: 127.0.0.1
    count: 5
    max_loss_percent: 20
""",
    ),
    (
        "heartbeat-interval",
        """
monitors:
  job:
    type: heartbeat
    interval_seconds: 3600
    grace_seconds: 600
""",
    ),
    (
        "heartbeat-cron",
        """
monitors:
  backup:
    type: heartbeat
    cron: "0 3 * * 1-5"
    timezone: Europe/Berlin
    grace_seconds: 1800
""",
    ),
    (
        "browser-journey",
        """
monitors:
  login:
    type: browser
    url: http://127.0.0.1:8080/login
    interval_seconds: 600
    viewport: {width: 1024, height: 768}
    visual: {compare: true, threshold_percent: 2.5, severity: degraded}
    steps:
      - {action: fill, selector: "#user", value: probe}
      - {action: fill, selector: "#password", value: "${LOGIN_PASSWORD}"}
      - {action: fill, selector: "#code", value: "${OTP}", secret: true}
      - {action: click, selector: "button[type=submit]"}
      - {action: wait_for, selector: ".dashboard", state: visible, timeout_seconds: 15}
      - {action: expect_text, text: Welcome, selector: h1}
      - {action: expect_selector, selector: "#logout"}
      - {action: expect_url, contains: /dashboard}
      - {action: goto, url: http://127.0.0.1:8080/settings}
""",
    ),
    (
        "pagespeed",
        """
monitors:
  speed:
    type: pagespeed
    url: http://127.0.0.1:8080/
    interval_seconds: 3600
    profile: desktop
    categories: [performance, seo]
    assertions:
      - {metric: lcp_ms, op: "<=", value: 2500}
      - {metric: performance, op: ">=", value: 0.8, severity: degraded}
""",
    ),
    (
        "channel-telegram",
        """
channels:
  tg:
    kind: telegram
    name: On call
    config: {chat_id: "-1001234567890"}
""",
    ),
    (
        "channel-email",
        """
channels:
  mail:
    kind: email
    config:
      host: 127.0.0.1
      port: 2587
      security: tls
      username: alerts
      password: ${SMTP_PASSWORD}
      from_address: monitor@example.test
      to: [ops@example.test, dev@example.test]
      subject_prefix: "[mon]"
""",
    ),
    (
        "channel-webhook",
        """
channels:
  hook:
    kind: webhook
    config:
      url: ${WEBHOOK_URL}
      secret: ${WEBHOOK_SECRET}
      headers: {Authorization: "${WEBHOOK_AUTH}"}
""",
    ),
    (
        "channel-webhook-made-secret",
        """
channels:
  hook:
    kind: webhook
    config: {url: "${WEBHOOK_URL}"}
""",
    ),
    (
        "channel-slack",
        """
channels:
  slack:
    kind: slack
    config: {url: "${SLACK_URL}"}
""",
    ),
    (
        "channel-discord",
        """
channels:
  discord:
    kind: discord
    config: {url: "${DISCORD_URL}", username: monitor}
""",
    ),
    (
        "channel-ntfy",
        """
channels:
  ntfy:
    kind: ntfy
    config: {url: "${NTFY_URL}", token: "${NTFY_TOKEN}", priority_down: 4, priority_up: 2}
""",
    ),
    (
        "channel-pagerduty",
        """
channels:
  pd:
    kind: pagerduty
    config: {routing_key: "${PD_KEY}", severity: error}
""",
    ),
    (
        "maintenance-once",
        """
monitors:
  web: {url: "http://127.0.0.1:8080/", tags: [web]}
maintenance:
  migration:
    name: Database migration
    once: {from: "2027-03-01T22:00:00Z", to: "2027-03-02T01:30:00+01:00"}
    monitors: [web]
    notify: true
""",
    ),
    (
        "maintenance-notice",
        """
monitors:
  web: {url: "http://127.0.0.1:8080/", tags: [web]}
maintenance:
  upgrade:
    name: Storage upgrade
    recurring: {rrule: "FREQ=MONTHLY;BYMONTHDAY=1", starts_at: "2026-01-01T03:00", duration_minutes: 60}
    tags: [web]
    public_text: |
      We upgrade the **storage** cluster; uploads may be slow.
      Details: <https://example.com/maint>
    announce_hours: 72
""",
    ),
    (
        "maintenance-recurring",
        """
monitors:
  web: {url: "http://127.0.0.1:8080/", tags: [web]}
  db: {type: tcp, host: 127.0.0.1, port: 5432}
maintenance:
  sunday:
    recurring: {rrule: "FREQ=WEEKLY;BYDAY=SU", starts_at: "2026-01-04T02:00", duration_minutes: 90,
                timezone: Europe/Berlin}
    monitors: [web, db]
  nightly:
    recurring: {cron: "30 1 * * *", duration_minutes: 15, starts_at: "2026-01-01T00:00"}
    tags: [web]
""",
    ),
    (
        "status-page",
        """
monitors:
  web: {url: "http://127.0.0.1:8080/", tags: [web]}
  db: {type: tcp, host: 127.0.0.1, port: 5432}
status_pages:
  public:
    slug: acme-roundtrip
    title: Acme status
    description: "Our services.\\nUpdated every minute."
    logo_url: https://cdn.example.test/logo.png
    favicon_url: https://cdn.example.test/favicon.ico
    domain: status.example.test
    show_urls: true
    groups:
      - {name: Website, monitors: [web]}
      - {name: Backend, monitors: [db, web], tags: [web]}
      - {name: Tagged, tags: [web]}
""",
    ),
    (
        "lists-with-repeats",
        # Keys and tags named twice are kept once, as the database keeps them: still no changes.
        """
channels:
  slack: {kind: slack, config: {url: "${SLACK_URL}"}}
monitors:
  gateway: {type: ping, host: 127.0.0.1, tags: [net, net]}
  web: {url: "http://127.0.0.1:8080/", depends_on: [gateway, gateway], channels: [slack, slack]}
maintenance:
  patch:
    recurring: {cron: "0 4 * * 6", duration_minutes: 30, starts_at: "2026-01-03T00:00"}
    monitors: [web, web]
    tags: [net, net]
status_pages:
  twice:
    slug: twice
    title: Twice
    groups:
      - {name: All, monitors: [web, gateway, web], tags: [net, net]}
""",
    ),
    (
        "secrets-of-keys-alike",
        # ops-hook and ops_hook: their secrets' variables must not be one and the same.
        """
channels:
  ops-hook: {kind: slack, config: {url: "${SLACK_URL}"}}
  ops_hook: {kind: slack, config: {url: "${SLACK_URL_2}"}}
""",
    ),
    (
        "depends-on-and-channels",
        """
channels:
  slack: {kind: slack, config: {url: "${SLACK_URL}"}}
  pd: {kind: pagerduty, config: {routing_key: "${PD_KEY}"}}
monitors:
  gateway: {type: ping, host: 127.0.0.1, channels: [pd]}
  db: {type: tcp, host: 127.0.0.1, port: 5432, depends_on: [gateway]}
  app: {url: "http://127.0.0.1:8080/", depends_on: [db, gateway], channels: [slack, pd]}
""",
    ),
]


def read(text: str, variables: dict[str, str]) -> Document:
    return read_texts([("case.yaml", text)], Secrets(variables))


async def apply(
    deps: Deps, actor: Actor, text: str, variables: dict[str, str], *, dry_run: bool = False
) -> Plan:
    return await applying.apply(deps, actor, read(text, variables), prune=False, dry_run=dry_run)


async def export(deps: Deps, account_id: int) -> exporting.Exported:
    async with deps.pool.acquire() as conn:
        account = await state.read(conn, deps, account_id, key_all=True)
    return exporting.export(account)


def objects_in(text: str) -> int:
    return sum(len(v) for k, v in read(text, VARIABLES).sections.items())


def strings(value: Any) -> list[str]:
    """Every string within ``value`` (JSON)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []
