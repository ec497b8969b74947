"""`monitor apply` and `monitor export` end to end on the real database: plan, apply,
idempotence, drift, prune, a failed apply that changes nothing, and the round trip."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import asyncpg

DOC = """\
version: 1
channels:
  ops-slack:
    kind: slack
    name: Ops on Slack
    config:
      url: ${SLACK_URL}
monitors:
  homepage:
    name: Homepage
    url: http://127.0.0.1:8080/
    interval_seconds: 60
    channels: [ops-slack]
    depends_on: [gateway]
    tags: [web]
  gateway:
    type: tcp
    host: 127.0.0.1
    port: 443
  backup:
    type: heartbeat
    cron: "0 3 * * *"
    timezone: Europe/Berlin
    grace_seconds: 1800
maintenance:
  sunday:
    recurring: {rrule: "FREQ=WEEKLY;BYDAY=SU", starts_at: "2026-01-04T02:00", duration_minutes: 60,
                timezone: Europe/Berlin}
    monitors: [homepage]
status_pages:
  public:
    slug: acme
    title: Acme status
    groups:
      - name: Website
        monitors: [homepage, gateway]
"""


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "monitor", *args], env=env, capture_output=True, text=True, timeout=60
    )


def _env(base_env: dict[str, str]) -> dict[str, str]:
    return {**os.environ, **base_env, "MONITOR_ALLOW_CIDRS": "127.0.0.0/8",
            "SLACK_URL": "https://hooks.slack.com/services/T0/B0/xyz"}  # fmt: skip


async def test_apply_plans_applies_and_is_idempotent(
    db: asyncpg.Connection, base_env: dict[str, str], tmp_path: Path
) -> None:
    env = _env(base_env)
    assert _cli(env, "accounts", "create", "acme").returncode == 0
    (tmp_path / "main.yaml").write_text(DOC)
    dry = _cli(env, "apply", "-f", str(tmp_path), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "+ create monitor homepage" in dry.stdout and "nothing applied" in dry.stdout
    assert await db.fetchval("SELECT count(*) FROM monitors") == 0
    done = _cli(env, "apply", "-f", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "applied: 6 created" in done.stdout
    assert await db.fetchval("SELECT count(*) FROM config_objects") == 6
    assert "xyz" not in done.stdout + done.stderr  # no secret in the plan
    again = _cli(env, "apply", "-f", str(tmp_path))
    assert "no changes" in again.stdout, again.stdout

    # An edit made elsewhere is drift: the next plan puts it back and says so.
    await db.execute("UPDATE monitors SET interval_seconds = 120 WHERE name = 'Homepage'")
    drift = _cli(env, "apply", "-f", str(tmp_path), "--dry-run")
    assert "interval_seconds: 120.0 -> 60.0  (changed outside apply)" in drift.stdout, drift.stdout

    # Prune deletes what the files no longer name; without it, it is kept.
    (tmp_path / "main.yaml").write_text(
        DOC.replace("  backup:\n    type: heartbeat", "  backup2:\n    type: heartbeat")
    )
    kept = _cli(env, "apply", "-f", str(tmp_path), "--dry-run")
    assert "keep monitor backup" in kept.stdout
    pruned = _cli(env, "apply", "-f", str(tmp_path), "--prune")
    assert "- delete monitor backup" in pruned.stdout, pruned.stdout
    assert await db.fetchval("SELECT count(*) FROM monitors WHERE name = 'backup'") == 0


async def test_a_failed_apply_changes_nothing(
    db: asyncpg.Connection, base_env: dict[str, str], tmp_path: Path
) -> None:
    env = _env(base_env)
    assert _cli(env, "accounts", "create", "acme").returncode == 0
    bad = DOC.replace("depends_on: [gateway]", "depends_on: [nowhere]").replace(
        "interval_seconds: 60", "interval_seconds: 5"
    )
    (tmp_path / "bad.yaml").write_text(bad)
    env.pop("SLACK_URL")
    failed = _cli(env, "apply", "-f", str(tmp_path / "bad.yaml"))
    assert failed.returncode == 1
    assert (
        "bad.yaml:14:18: monitors.homepage.depends_on.0" in failed.stderr
        and "no monitors key 'nowhere'" in failed.stderr
    ), failed.stderr
    assert "${SLACK_URL} is not set" in failed.stderr and "no scheme" not in failed.stderr
    assert "Traceback" not in failed.stderr
    assert await db.fetchval("SELECT count(*) FROM monitors") == 0
    assert await db.fetchval("SELECT count(*) FROM channels") == 0


async def test_export_then_apply_elsewhere_then_export_is_identical(
    db: asyncpg.Connection, base_env: dict[str, str], tmp_path: Path
) -> None:
    env = _env(base_env)
    for name in ("first", "second"):
        assert _cli(env, "accounts", "create", name).returncode == 0
    (tmp_path / "main.yaml").write_text(DOC)
    assert _cli(env, "apply", "--account", "first", "-f", str(tmp_path / "main.yaml")).returncode == 0
    one = tmp_path / "one.yaml"
    out = _cli(env, "export", "--account", "first", "-o", str(one), "--with-secrets-as-env")
    assert out.returncode == 0, out.stderr
    secrets = dict(
        line.split("=", 1) for line in (tmp_path / "one.yaml.secrets.env").read_text().splitlines()
    )
    assert (tmp_path / "one.yaml.secrets.env").stat().st_mode & 0o777 == 0o600
    await db.execute("DELETE FROM status_pages")  # a slug is the install's: free it for the copy
    applied = _cli({**env, **secrets}, "apply", "--account", "second", "-f", str(one))
    assert applied.returncode == 0, applied.stderr
    two = tmp_path / "two.yaml"
    assert _cli(env, "export", "--account", "second", "-o", str(two)).returncode == 0
    assert one.read_text() == two.read_text()
