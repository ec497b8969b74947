"""An admin command's stdout is only what it prints: its log lines (here the domain's
``api.target_unresolved`` for a host no DNS server answers for) go to stderr, so
``monitor apply --json`` can be piped into a JSON reader."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import asyncpg

DOC = """\
version: 1
monitors:
  later:
    name: Not live yet
    url: http://not-live-yet.test/
"""


def test_apply_json_stdout_is_json_while_the_domain_logs(
    db: asyncpg.Connection, base_env: dict[str, str], tmp_path: Path
) -> None:
    # A UDP port on loopback with nobody behind it: every DNS query fails at once.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        silent = probe.getsockname()[1]
    env = {**os.environ, **base_env, "MONITOR_DNS_SERVERS": f"127.0.0.1:{silent}"}
    run = [sys.executable, "-m", "monitor"]
    assert subprocess.run([*run, "accounts", "create", "logs"], env=env, capture_output=True).returncode == 0
    (tmp_path / "doc.yaml").write_text(DOC)
    done = subprocess.run(
        [*run, "apply", "-f", str(tmp_path / "doc.yaml"), "--json", "--account", "logs"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)  # nothing but the plan
    assert plan["changes"][0]["key"] == "later", plan
    assert "api.target_unresolved" in done.stderr, done.stderr
