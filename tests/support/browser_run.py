"""What the tests of ``monitor.browser.chromium`` share: the skip when Debian's chromium is not
installed, a ``Chromium`` per module, and a look at the processes a run left.

Starting a run costs about 0.2 s and Playwright's driver about 0.7 s once per ``Chromium``
object, so a module shares one (``module_chromium``, with the policy and resolver it is given)
and each test starts runs of its own, which is what isolates them (a profile, a proxy and a
process group per run).
"""

from __future__ import annotations

import os

import pytest

from monitor.browser import process
from monitor.browser.chromium import DEFAULT_EXECUTABLE

needs_chromium = pytest.mark.skipif(
    not os.access(DEFAULT_EXECUTABLE, os.X_OK),
    reason=f"Debian's chromium is not installed at {DEFAULT_EXECUTABLE}"
    " (`make test` installs it: scripts/browser.sh ensure)",
)


def marked(marker: str) -> list[int]:
    """The live processes that carry a run's marker (``process.MARKER``) in their environment."""
    return process.members(-1, marker)


def group_alive(pgid: int) -> list[int]:
    """The live processes of a process group, read from /proc."""
    return process.members(pgid)
