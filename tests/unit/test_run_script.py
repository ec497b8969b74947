"""scripts/run.py's exit status: 0 only for a stop by signal that every process finished cleanly."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest


def _load() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "scripts" / "run.py"
    spec = importlib.util.spec_from_file_location("run_script", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


run = _load()
CLEAN = {"api": 0, "scheduler": 0, "alerter": 0}

CASES = [
    ("Ctrl-C, all stopped cleanly", 130, CLEAN, 0, []),
    ("SIGTERM, all stopped cleanly", 143, CLEAN, 0, []),
    ("Ctrl-C, one killed after the grace", 130, {**CLEAN, "scheduler": -9}, 1,
     ["scheduler did not stop cleanly (status -9)"]),
    ("Ctrl-C, one failed while stopping", 130, {**CLEAN, "alerter": 1}, 1,
     ["alerter did not stop cleanly (status 1)"]),
    ("a process failed at start", 1, {"api": 1, "scheduler": 0, "alerter": 0}, 1, []),
    ("a process exited 0 by itself", 0, CLEAN, 0, []),
]  # fmt: skip


@pytest.mark.parametrize(
    ("honcho", "statuses", "status", "said"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_exit_status(honcho: int, statuses: dict[str, int], status: int, said: list[str]) -> None:
    assert run.exit_status(honcho, statuses) == (status, said)
