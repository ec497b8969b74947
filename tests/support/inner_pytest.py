"""A pytest of its own over a copy of tests/conftest.py and tests/support, for the tests of
what the conftest's fixtures and hooks do to a test (they act at teardown and on reports,
where a test cannot see itself)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run_pytest(tmp_path: Path, tests: str, env: Mapping[str, str]) -> tuple[int, str]:
    """Run ``tests`` (a test module's text) under the suite's conftest; (exit code, output)."""
    tree = tmp_path / "tests"
    shutil.copytree(HERE, tree / "support", ignore=shutil.ignore_patterns("__pycache__", "test_*.py"))
    shutil.copy(HERE.parent / "conftest.py", tree / "conftest.py")
    (tree / "test_inner.py").write_text(tests)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rEfs",
         "-o", "asyncio_mode=auto", "-o", "asyncio_default_fixture_loop_scope=function",
         str(tree / "test_inner.py")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, **env},
    )  # fmt: skip
    return done.returncode, done.stdout + done.stderr
