"""`make run`'s last step: the Procfile's processes under honcho, ended by Ctrl-C with status 0.

Two things made a clean Ctrl-C end `make run` with `make: *** [Makefile:..: run] Error 130`:

- honcho exits 130 whenever SIGINT stopped it (143 for SIGTERM), however its processes ended;
- the terminal sends SIGINT to its whole foreground process group, make included, and GNU make
  then reports its child's status as an error and kills itself with the same signal.

So this script, when it is in the terminal's foreground, moves itself (and honcho, which runs in
it) into a process group of its own and gives that group the terminal, as a shell does for a
job: Ctrl-C reaches honcho alone, and make just waits for the status. The terminal goes back to
the group that had it before this exits. Ctrl-Z is ignored meanwhile (stopping this group would
leave make waiting with no job to resume). Without a terminal (CI, `nohup`) nothing of that
happens; a signal to make's group still stops make, as it did.

The status: 0 when SIGINT or SIGTERM stopped the processes and each of them exited 0 (they stop
within `MONITOR_SHUTDOWN_TIMEOUT_SECONDS`, 4 s under make, before honcho's 5 s SIGKILL); 1, with
a line naming each process that did not, when one was killed or failed to stop; otherwise
honcho's own (the status of the first process that exited), so a process that fails at start
still fails make.

Usage (the Makefile's): python scripts/run.py [PROCFILE]
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

from honcho.environ import parse_procfile
from honcho.manager import Manager
from honcho.printer import Printer

# honcho's status when SIGINT or SIGTERM stopped it (honcho.manager.SIGNALS).
STOPPED_BY_SIGNAL = (128 + signal.SIGINT, 128 + signal.SIGTERM)


@contextlib.contextmanager
def terminal_to_ourselves() -> Iterator[None]:
    """While the block runs, this process leads a process group that has the terminal, if it was
    in the terminal's foreground group when called; otherwise nothing changes."""
    try:
        tty = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        yield  # no controlling terminal
        return
    try:
        before = os.tcgetpgrp(tty)
        if before != os.getpgrp():
            yield  # started in the background: the terminal is not ours to take
            return
        os.setpgid(0, 0)
        # A background group that sets the terminal's group gets SIGTTOU unless it ignores it.
        previous = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
        for stop in (signal.SIGTSTP, signal.SIGTTIN):
            signal.signal(stop, signal.SIG_IGN)
        os.tcsetpgrp(tty, os.getpgrp())
        try:
            yield
        finally:
            with contextlib.suppress(OSError):  # the group that had it is gone
                os.tcsetpgrp(tty, before)
            signal.signal(signal.SIGTTOU, previous)
    finally:
        os.close(tty)


def exit_status(honcho_status: int | None, statuses: dict[str, int | None]) -> tuple[int, list[str]]:
    """``make run``'s status from honcho's and each process's, and what to say about them."""
    if honcho_status not in STOPPED_BY_SIGNAL:
        return honcho_status or 0, []
    unclean = [f"{name} did not stop cleanly (status {code})" for name, code in statuses.items() if code != 0]
    return (1 if unclean else 0), unclean


def main(argv: list[str]) -> int:
    procfile = Path(argv[1] if len(argv) > 1 else "Procfile")
    processes = parse_procfile(procfile.read_text()).processes
    manager = Manager(Printer(sys.stdout))
    for name, command in processes.items():
        manager.add_process(name, command, env=os.environ.copy())
    with terminal_to_ourselves():
        manager.loop()
    # honcho 2 keeps each process's exit status in Manager._processes[name]["returncode"].
    statuses = {name: state.get("returncode") for name, state in manager._processes.items()}
    status, said = exit_status(manager.returncode, statuses)
    for line in said:
        print(f"run: {line}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
