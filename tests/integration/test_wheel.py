"""The built wheel, installed as an operator installs it, migrates an empty database and checks.

``python -m build`` makes the sdist and, from it, the wheel (as ``make dist`` does); the wheel
goes into a fresh virtualenv with its dependencies from the package index (not editable, not
from this checkout: the processes run with a working directory outside it, and the test checks
where ``monitor`` is imported from). That installation's ``monitor migrate`` then migrates a
database of its own on the test server, and its ``monitor scheduler`` checks a local target.
About 20 s, most of it installing the dependencies.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import asyncpg
import pytest
from support import (
    MonitorProcess,
    TargetServer,
    clean_environ,
    free_port,
    insert_monitor,
    process_env,
    wait_for,
)

from monitor import db

REPO = Path(__file__).resolve().parents[2]
MIGRATIONS = sorted(p.name for p in (REPO / "sql").glob("*.sql"))

pytestmark = pytest.mark.timeout(300)


def _run(
    argv: list[str | Path], *, timeout: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(a) for a in argv], env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{argv} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


def _site_packages(venv: Path) -> Path:
    return venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    # As `make dist` does: the dashboard's libraries first (no network once `make vendor` ran).
    _run([sys.executable, REPO / "scripts" / "vendor.py", "--only", "shipped"], timeout=120)
    _run([sys.executable, "-m", "build", "--outdir", out, REPO], timeout=120)
    wheels = list(out.glob("monitor-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtualenv with the wheel and its dependencies installed: its root."""
    root = tmp_path_factory.mktemp("venv").resolve() / "venv"
    _run([sys.executable, "-m", "venv", root], timeout=60)
    _run([root / "bin" / "python", "-m", "pip", "install", "--quiet", wheel], timeout=180)
    return root


@pytest.fixture
def outside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A working directory outside the checkout, so nothing can import monitor/ from it."""
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    yield work


def _env(database_url: str, redis_url: str) -> dict[str, str]:
    env = clean_environ()
    env.pop("PYTHONPATH", None)  # the installed wheel, not the checkout
    return env | process_env(database_url, redis_url) | {"MONITOR_SCHEDULER_HTTP_PORT": str(free_port())}


def _migrate(venv: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv / "bin" / "monitor"), "migrate"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_wheel_carries_every_migration(wheel: Path) -> None:
    listed = _run([sys.executable, "-m", "zipfile", "-l", wheel], timeout=30).stdout
    assert [f"monitor/sql/{name}" for name in MIGRATIONS] == [
        line.split()[0] for line in listed.splitlines() if line.startswith("monitor/sql/")
    ]


def test_the_wheel_carries_the_vendored_libraries_and_their_licences(wheel: Path) -> None:
    listed = _run([sys.executable, "-m", "zipfile", "-l", wheel], timeout=30).stdout
    vendor = "monitor/dashboard/static/vendor/"
    names = [line.split()[0] for line in listed.splitlines()]
    shipped = {name.removeprefix(vendor) for name in names if name.startswith(vendor)}
    index = json.loads((REPO / vendor / "VENDORED.json").read_text(encoding="utf-8"))
    assert shipped == {*index["files"], "VENDORED.json"}
    assert {"htmx.min.js", "uPlot.iife.min.js", "uPlot.min.css"} <= shipped
    assert {entry["license_file"] for entry in index["files"].values()} <= shipped
    assert "monitor/dashboard/vendor.toml" in names
    assert not [name for name in names if "axe" in name]  # the browser tests' library stays out


def test_an_installed_wheel_finds_its_vendored_libraries(venv: Path, outside: Path) -> None:
    env = clean_environ()
    env.pop("PYTHONPATH", None)  # the installed wheel, not the checkout
    found = _run(
        [
            venv / "bin" / "python",
            "-c",
            "from monitor.dashboard import vendored; v = vendored.load(); "
            "print(v.problem, v.path('htmx.min.js'), v.integrity('htmx.min.js'))",
        ],
        timeout=30,
        env=env,
    ).stdout.split()
    index = json.loads((REPO / "monitor/dashboard/static/vendor/VENDORED.json").read_text(encoding="utf-8"))
    assert found == [
        "None",
        str(_site_packages(venv) / "monitor/dashboard/static/vendor/htmx.min.js"),
        index["files"]["htmx.min.js"]["integrity"],
    ]


async def test_an_installed_wheel_migrates_an_empty_database_and_checks(
    venv: Path, outside: Path, empty_database: str, redis_url: str, tmp_path: Path
) -> None:
    env = _env(empty_database, redis_url)
    where = _run(
        [
            venv / "bin" / "python",
            "-c",
            "import pathlib, monitor.db as d; print(pathlib.Path(d.__file__).resolve(), d.find_directory())",
        ],
        timeout=30,
        env=env,
    ).stdout.split()
    site = _site_packages(venv)
    assert where == [
        str(site / "monitor" / "db.py"),
        str(site / "monitor" / "sql"),
    ]

    migrated = _migrate(venv, env)
    assert migrated.returncode == 0, migrated
    assert migrated.stdout.strip().endswith(
        f"applied {len(MIGRATIONS)} migration(s): {', '.join(MIGRATIONS)}"
    )
    conn = await db.connect(empty_database)
    try:
        assert [
            r["name"] for r in await conn.fetch("SELECT name FROM schema_migrations ORDER BY version")
        ] == MIGRATIONS
        again = _migrate(venv, env)
        assert (again.returncode, again.stdout.strip()) == (0, "applied 0 migration(s)"), again

        async with TargetServer() as target:
            monitor = await insert_monitor(conn, url=target.url("/wheel"), interval_seconds=1.0)
            scheduler = MonitorProcess(
                "scheduler", [str(venv / "bin" / "monitor"), "scheduler"], env, tmp_path / "scheduler.log"
            )
            try:
                await scheduler.wait_log("scheduler.started", timeout=30)
                check = await wait_for(
                    lambda: conn.fetchrow(
                        "SELECT ok, status_code, error FROM checks WHERE monitor_id = $1", monitor["id"]
                    ),
                    timeout=30,
                    message=lambda: (
                        f"a check row written by the installed scheduler; its log:\n{scheduler.tail()}"
                    ),
                )
                assert target.received("/wheel") >= 1
                assert (check["ok"], check["status_code"]) == (True, 200), check
                assert scheduler.running, scheduler.tail()
                assert await scheduler.terminate() == 0, scheduler.tail()
            finally:
                scheduler.kill()
            assert scheduler.tracebacks() == []
    finally:
        await conn.close()


async def test_an_installed_wheel_refuses_a_database_newer_than_itself(
    venv: Path, outside: Path, empty_database: str, redis_url: str
) -> None:
    env = _env(empty_database, redis_url)
    assert _migrate(venv, env).returncode == 0
    conn = await asyncpg.connect(empty_database)
    try:
        await conn.executemany(
            "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
            [(998, "998_later.sql"), (999, "999_latest.sql")],
        )
    finally:
        await conn.close()
    refused = _migrate(venv, env)
    assert refused.returncode == 1, refused
    assert f"Error: the database is newer than this monitor {version('monitor')}" in refused.stderr
    assert "it has applied 998_later.sql, 999_latest.sql" in refused.stderr
    assert "Traceback" not in refused.stderr + refused.stdout


def test_an_installation_without_migrations_refuses_to_migrate(
    venv: Path, outside: Path, tmp_path: Path, redis_url: str
) -> None:
    # What this guards against: a wheel without its SQL "migrated" nothing and exited 0, so the
    # units' `ExecStartPre=monitor migrate` passed. The installed package without monitor/sql/,
    # put first on the path, stands in for such a wheel. It refuses before connecting: nothing
    # listens on the discard port.
    site = tmp_path / "site"
    shutil.copytree(_site_packages(venv) / "monitor", site / "monitor", ignore=shutil.ignore_patterns("sql"))
    env = _env("postgresql://monitor@127.0.0.1:9/none", redis_url) | {"PYTHONPATH": str(site)}
    refused = _migrate(venv, env)
    assert refused.returncode == 1, refused
    looked_in = f"{site / 'monitor' / 'sql'}, {site / 'sql'}"
    assert f"Error: no migrations found (looked for *.sql in {looked_in})" in refused.stderr
    assert "Traceback" not in refused.stderr + refused.stdout
