"""The README's first session, as written, for two accounts in turn on one database.

The blocks marked ``<!-- first-session: NAME -->`` in README.md are read from it and run:

- ``site``: the command that starts the local site to watch (run as it is, on a free port);
- ``run``: the settings exported before ``make run``, given to real api, scheduler and alerter
  processes started here (``make run`` itself is the Makefile's: test_make_run.py);
- ``env``: what the third terminal exports; its value must be what ``make run`` uses
  (``scripts/services.sh env run``), and is replaced by the test database's;
- ``account``, ``monitor``, ``checks``, ``uptime``: run with bash, one after another, the shell
  variables they set (``KEY``, ``MONITOR``, ``ID``) carried to the next as an interactive shell
  keeps them.

Only what a test cannot keep is replaced, each replacement checked to apply: the api's port
(8080) and the site's (9000) by free ones, and, for the second account, its name. Then the
answers are checked: 201 in the api's access log, the monitor's id as the answer gave it (2 for
the second account: nothing assumes 1), checks arriving, the monitor up, and, once the site is
stopped, down. Another api without the setting shows what "Trying it on your own machine"
says: the local target refused, naming MONITOR_ALLOW_CIDRS. Only loopback is used.
"""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from support import MonitorProcess, ProcessFactory, clean_environ, free_port, wait_for
from support.procs import TEST_SECRET_KEY, kill_process

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
MARK = re.compile(r"^<!-- first-session: ([a-z]+) -->\n```sh\n(.*?)^```$", re.M | re.S)
SESSION = ("site", "run", "env", "account", "monitor", "checks", "uptime")
EXPORT = re.compile(r"^export ([A-Z_]+)=(\S+)$")
ASSIGNED = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=", re.M)
VARS_MARK = "\n@@readme-vars@@\n"
# The first check comes within one interval (30 s in the README), the down after two failures.
FIRST_CHECK_TIMEOUT = 75.0
DOWN_TIMEOUT = 110.0


def session_blocks() -> dict[str, str]:
    found = {name: code for name, code in MARK.findall(README.read_text())}
    assert tuple(found) == SESSION, f"README.md's first-session blocks: {list(found)}"
    return found


def exports(block: str, *, other: tuple[str, ...] = ()) -> dict[str, str]:
    """The ``export NAME=value`` lines of a block; any other line must be one of ``other``."""
    found: dict[str, str] = {}
    for line in block.splitlines():
        if match := EXPORT.match(line.strip()):
            found[match[1]] = match[2]
        else:
            assert line.strip() in other, f"a line the test does not know how to run: {line!r}"
    return found


def replaced(block: str, *pairs: tuple[str, str]) -> str:
    for old, new in pairs:
        assert old in block, f"{old!r} is no longer in the block:\n{block}"
        block = block.replace(old, new)
    return block


def answers(text: str) -> list[Any]:
    """The JSON documents a block printed, one after another (curl adds no newline)."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while (at := _skip_space(text, at)) < len(text):
        value, at = decoder.raw_decode(text, at)
        found.append(value)
    return found


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at].isspace():
        at += 1
    return at


@dataclass
class Shell:
    """The third terminal: its environment, and the shell variables the blocks set so far."""

    env: dict[str, str]
    variables: dict[str, str] = field(default_factory=dict)

    async def run(self, block: str, *, strict: bool = True) -> tuple[int, str]:
        """Run ``block`` with bash (``set -e -o pipefail`` when ``strict``); its status and output
        (stdout and stderr), and keep what it assigned."""
        names = sorted(set(ASSIGNED.findall(block)))
        keep = "".join(f"{name}={shlex.quote(value)}\n" for name, value in self.variables.items())
        # The block's own status (without ``set -e``, its last command's), then what it assigned.
        tail = "readme_status=$?\n" + f"printf '{VARS_MARK}'\n"
        tail += "".join(f"printf '%s=%s\\0' {n} \"${n}\"\n" for n in names) + "exit $readme_status\n"
        script = ("set -e -o pipefail\n" if strict else "") + keep + block + "\n" + tail
        proc = await asyncio.create_subprocess_exec(
            "bash", "-c", script, cwd=REPO, env=self.env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
        text = out.decode()
        shown, _, assigned = text.partition(VARS_MARK)
        for item in filter(None, assigned.split("\0")):
            name, _, value = item.partition("=")
            self.variables[name] = value
        assert proc.returncode is not None
        return proc.returncode, shown


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], int, Path]]:
    """The README's site command on a free port, serving an empty directory; its log."""
    command = shlex.split(session_blocks()["site"].strip())
    port = free_port()
    command = [str(port) if word == "9000" else word for word in command]
    assert str(port) in command, "the site's port (9000) is no longer in its command"
    (tmp_path / "www").mkdir()
    log = tmp_path / "site.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(command, cwd=tmp_path / "www", stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 10
        while not _listening(port):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        yield proc, port, log
    finally:
        kill_process(proc)


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _services_env_run() -> dict[str, str]:
    """What ``make run`` exports for the services (with a key given, so none is made)."""
    done = subprocess.run(
        ["bash", "scripts/services.sh", "env", "run"], cwd=REPO, capture_output=True, text=True, check=True,
        env=clean_environ() | {"MONITOR_SECRET_KEY": TEST_SECRET_KEY},
    )  # fmt: skip
    return exports(done.stdout)


async def test_the_first_session_works_as_written_for_two_accounts_in_turn(
    db: asyncpg.Connection,
    procs: ProcessFactory,
    migrated: str,
    site: tuple[subprocess.Popen[bytes], int, Path],
) -> None:
    blocks = session_blocks()
    site_proc, site_port, site_log = site

    # The second terminal: make run, with what the README exports before it.
    settings = exports(blocks["run"], other=("make run",))
    assert settings == {"MONITOR_ALLOW_CIDRS": "127.0.0.1/32"}, settings
    env: dict[str, str | None] = {**settings, "MONITOR_MIN_INTERVAL_SECONDS": None}  # the default, 30
    api = await procs.start("api", env=env)
    await procs.start("scheduler", env=env)
    await procs.start("alerter", env=env)

    # The third terminal: the database make run uses, here the test database.
    told = exports(blocks["env"])
    assert told == {"MONITOR_DATABASE_URL": _services_env_run()["MONITOR_DATABASE_URL"]}, told
    shell = Shell(clean_environ() | {"MONITOR_DATABASE_URL": migrated})
    api_port = ("localhost:8080", f"localhost:{api.port}")
    site_url = ("localhost:9000", f"localhost:{site_port}")

    ids, keys = [], []
    for n, account in enumerate(("ops", "web"), start=1):
        # The README's account, then a second one of another name.
        block = blocks["account"] if n == 1 else replaced(blocks["account"], ("ops", account))
        code, out = await shell.run(block)
        assert code == 0, out
        made_account, key_note = out.splitlines()
        assert re.fullmatch(rf"created account '{account}' \(id \d+\)", made_account), out
        assert re.fullmatch(
            rf"\(key id \d+ of account '{account}'; it is shown only this once\)", key_note
        ), out
        assert shell.variables["KEY"].startswith("mk_"), shell.variables
        keys.append(shell.variables["KEY"])

        if n == 1:
            await _refused_without_the_setting(procs, shell, blocks["monitor"], site_url)

        code, out = await shell.run(replaced(blocks["monitor"], api_port, site_url))
        assert code == 0, out
        [made] = answers(out)
        assert made["id"] == n and made["status"] == "unknown", made  # a fresh database: 1, then 2
        assert made["url"] == f"http://localhost:{site_port}/", made
        assert shell.variables["ID"] == str(made["id"]), shell.variables
        account_id = await db.fetchval("SELECT id FROM accounts WHERE name = $1", account)
        created = api.events("api.request", route="/api/v1/monitors", method="POST", account_id=account_id)
        assert [line["status"] for line in created] == [201], created
        ids.append(made["id"])

        checks = await _first_checks(shell, replaced(blocks["checks"], api_port))
        assert checks[0]["ok"] is True and checks[0]["status_code"] == 200, checks
        assert api.events("api.request", path=f"/api/v1/monitors/{made['id']}/checks", status=200), (
            "the id used"
        )

        code, out = await shell.run(replaced(blocks["uptime"], api_port))
        assert code == 0, out
        monitor, uptime = answers(out)
        assert (monitor["id"], monitor["status"]) == (made["id"], "up"), monitor
        assert uptime["monitor_id"] == made["id"] and uptime["uptime_percent"] == 100.0, uptime
        assert uptime["checks"] >= 1 and uptime["checks_up"] == uptime["checks"], uptime

    assert ids == [1, 2]
    assert 'GET / HTTP/1.1" 200' in site_log.read_text()

    # Stopping the site: two failed checks later, each account's monitor is down.
    site_proc.terminate()
    site_proc.wait(10)
    uptime_block = replaced(blocks["uptime"], api_port)
    for key, monitor_id in zip(keys, ids, strict=True):
        await wait_for(
            lambda key=key, monitor_id=monitor_id: _down(shell, uptime_block, key, monitor_id),
            timeout=DOWN_TIMEOUT,
            interval=1.0,
            message=f"monitor {monitor_id} down once the site stopped",
        )
    assert not procs.tracebacks()


async def _refused_without_the_setting(
    procs: ProcessFactory, shell: Shell, block: str, site_url: tuple[str, str]
) -> None:
    """The monitor block against an api without MONITOR_ALLOW_CIDRS, run as a user would (no
    ``set -e``): the answer printed says target_blocked and names the setting; nothing is made."""
    bare: MonitorProcess = await procs.start("api", env={"MONITOR_ALLOW_CIDRS": None})
    saved = dict(shell.variables)
    code, out = await shell.run(
        replaced(block, ("localhost:8080", f"localhost:{bare.port}"), site_url), strict=False
    )
    shell.variables = saved
    assert code != 0, out
    [refused, *_] = answers(out.split("Traceback")[0])
    assert refused["error"]["code"] == "target_blocked" and refused["error"]["field"] == "url", refused
    assert "MONITOR_ALLOW_CIDRS=127.0.0.1/32" in refused["error"]["message"], refused
    await bare.terminate()


async def _first_checks(shell: Shell, block: str) -> list[dict[str, Any]]:
    """The checks block's items, run again until there is one (as the README says)."""

    async def some() -> list[dict[str, Any]]:
        code, out = await shell.run(block)
        assert code == 0, out
        [page] = answers(out)
        return list(page["items"])

    return await wait_for(some, timeout=FIRST_CHECK_TIMEOUT, interval=2.0, message="the first check")


async def _down(shell: Shell, block: str, key: str, monitor_id: int) -> bool:
    runner = Shell(shell.env, {**shell.variables, "KEY": key, "ID": str(monitor_id)})
    code, out = await runner.run(block)
    assert code == 0, out
    monitor, _ = answers(out)
    return bool(monitor["status"] == "down")


def test_the_session_blocks_are_marked_in_order() -> None:
    """A cheap check of the markers, for when the e2e run is skipped."""
    blocks = session_blocks()
    assert "localhost:8080" in blocks["monitor"] and "$ID" in blocks["checks"] and "$ID" in blocks["uptime"]
    assert not re.search(r"monitors/\d", "".join(blocks.values())), "no id written into a request"
