"""The Lighthouse CLI run against a browser run's Chromium: the subprocess part of page-speed
checks (``checks/pagespeed.py``; what its report says is ``checks/lighthouse_report.py``'s).

Lighthouse (npm ``lighthouse``, pinned at 12.2.3: ``tools/lighthouse``, installed by ``make
browser-tools``) is given the run's DevTools port (``--hostname=127.0.0.1 --port=...``), so it
drives the Chromium of ``Chromium.run`` (behind the run's vetting proxy) and never starts a
browser of its own: the CLI's launcher looks for an existing Chrome on that port first, and
only when none answers (the run's Chromium died) starts the one ``CHROME_PATH`` names, which
here is ``/bin/false``. Lighthouse talks to DevTools on loopback only; every request the page
makes goes through Chromium, so through the proxy.

The CLI runs as the browser does (``process.launch``): in a process group of its own, niced,
killed with the worker (PDEATHSIG), with an environment of its own (no secret of the worker's)
and a throwaway home; its report goes to a file there (``--output-path``), read once it exits,
at most ``MAX_REPORT_BYTES``. However the run ends (done, timed out, cancelled), the group is
SIGKILLed and reaped and the folder removed. Node's heap is capped (``--max-old-space-size``):
a report of a huge page cannot take the worker's memory.

Measured on this machine (2 cores, Lighthouse 12.2.3, Chromium 156, a small local page): a
run takes 8-10 s of wall time (config 1.8 s, Lighthouse's CPU benchmark 1 s, the load, the
audits 2 s), 3.2 s of CPU in node; node's peak RSS is about 230 MiB. The screenshots Lighthouse
would put in the report (a filmstrip, the final and the full page: half of its 290 KiB) are
skipped: we show none of them and they cost a second of CPU.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from . import process

__all__ = [
    "BUNDLED_CLI",
    "LighthouseFailed",
    "LighthouseRun",
    "command",
    "find_cli",
    "lighthouse_args",
    "run_lighthouse",
]

# The pinned install of ``make browser-tools`` (tools/lighthouse/package.json), in a checkout.
BUNDLED_CLI = Path(__file__).resolve().parents[2] / "tools/lighthouse/node_modules/lighthouse/cli/index.js"
# What the CLI's launcher would start when the run's Chromium is gone: nothing.
NO_BROWSER = "/bin/false"
MAX_REPORT_BYTES = 16 * 1024 * 1024
NODE_HEAP_MB = 512
STDERR_TAIL = 2000
REAP_SECONDS = 5.0
# Audits whose output we never read and that cost time: the screenshots in the report.
SKIPPED_AUDITS = ("screenshot-thumbnails", "final-screenshot")

Profile = Literal["mobile", "desktop"]


class LighthouseFailed(Exception):
    """Lighthouse could not run or wrote no report; ``str()`` is the cause as it stands
    ("lighthouse exited with status 1: Unable to connect to Chrome")."""


@dataclass(frozen=True)
class LighthouseRun:
    """What one run asks of Lighthouse."""

    url: str
    profile: Profile = "mobile"
    categories: tuple[str, ...] = ("performance", "accessibility", "best-practices", "seo")
    # Lighthouse's --max-wait-for-load: how long it waits for the page's load to settle.
    max_wait_for_load_ms: int = 45_000


def find_cli(configured: str | None = None) -> str | None:
    """The Lighthouse CLI to run: ``configured`` (MONITOR_LIGHTHOUSE_PATH) as given, else the
    pinned install in the checkout (``make browser-tools``), else ``lighthouse`` on PATH
    (``npm i -g -E lighthouse@12.2.3``, docs/install.md); None when there is none."""
    if configured:
        return configured
    if BUNDLED_CLI.is_file():
        return str(BUNDLED_CLI)
    return shutil.which("lighthouse")


def command(cli: str, node: str | None = None) -> list[str]:
    """How to start ``cli``: a JavaScript file (or a link to one, as npm's ``bin`` is) through
    node with its heap capped; anything else (a wrapper script) as it is."""
    real = os.path.realpath(cli)
    if real.endswith((".js", ".mjs")):
        found = node or shutil.which("node") or "node"
        return [found, f"--max-old-space-size={NODE_HEAP_MB}", real]
    return [cli]


def lighthouse_args(run: LighthouseRun, port: int, output: Path) -> list[str]:
    """The CLI's arguments after its path (pure: tests/unit/test_lighthouse_report.py)."""
    args = [
        run.url,
        "--hostname=127.0.0.1",
        f"--port={port}",
        "--output=json",
        f"--output-path={output}",
        "--quiet",
        "--no-enable-error-reporting",
        f"--only-categories={','.join(run.categories)}",
        f"--max-wait-for-load={run.max_wait_for_load_ms}",
        f"--skip-audits={','.join(SKIPPED_AUDITS)}",
        "--disable-full-page-screenshot",
    ]
    if run.profile == "desktop":
        args.append("--preset=desktop")
    return args


async def run_lighthouse(
    cli: str,
    run: LighthouseRun,
    port: int,
    *,
    nice: int = 10,
    node: str | None = None,
    extra: Sequence[str] = (),
) -> dict[str, Any]:
    """Run Lighthouse against the Chromium whose DevTools listen on 127.0.0.1:``port``; its
    report (the JSON object: a page that failed to load is a report with ``runtimeError``).
    Raises :class:`LighthouseFailed` when it wrote none. Bound it from outside (``asyncio.
    timeout``): a cancellation kills the CLI's group before it goes on."""
    home = Path(tempfile.mkdtemp(prefix="monitor-lighthouse-"))
    marker = uuid.uuid4().hex
    output = home / "report.json"
    argv = [*command(cli, node), *lighthouse_args(run, port, output), *extra]
    env = process.environment(home, marker)
    env["CHROME_PATH"] = NO_BROWSER
    env["TMPDIR"] = str(home)
    proc: asyncio.subprocess.Process | None = None
    try:
        with open(home / "stderr", "wb") as stderr:  # noqa: ASYNC230 - a new local file
            try:
                proc = await process.launch(argv, env=env, nice=nice, stderr=stderr.fileno())
            except OSError as exc:
                raise LighthouseFailed(f"cannot start {argv[0]}: {exc.strerror or exc}") from exc
        status = await proc.wait()
        report = _report(output)
        if report is None:
            raise LighthouseFailed(f"lighthouse exited with status {status}{_tail(home / 'stderr')}")
        return report
    finally:
        if proc is not None:
            await _end(proc, marker)
        shutil.rmtree(home, ignore_errors=True)


def _report(path: Path) -> dict[str, Any] | None:
    import json

    try:
        with path.open("rb") as file:
            data = file.read(MAX_REPORT_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_REPORT_BYTES:
        raise LighthouseFailed(f"lighthouse's report is larger than {MAX_REPORT_BYTES // 1048576} MiB")
    try:
        found = json.loads(data)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def _tail(path: Path) -> str:
    """The last line Lighthouse wrote on stderr (its error), for a cause."""
    try:
        text = path.read_bytes()[-STDERR_TAIL:].decode("utf-8", "replace").strip()
    except OSError:
        return ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return f": {lines[-1][:300]}" if lines else ""


async def _end(proc: asyncio.subprocess.Process, marker: str) -> None:
    """Kill the CLI's group (and anything carrying its marker), reap it; also when cancelled."""
    process.kill(proc.pid, marker, group=proc.returncode is None)
    with contextlib.suppress(TimeoutError, ProcessLookupError):
        async with asyncio.timeout(REAP_SECONDS):
            await asyncio.shield(proc.wait())
    process.kill(proc.pid, marker, group=False)
