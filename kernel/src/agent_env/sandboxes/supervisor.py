"""The Python stage of a controller's watchdog (see `agent_env.sandboxes.watchdog`): the shell
stage execs it once the controller's pipe closed and a home it heard of still holds a lease.
It waits for the controller to be gone, then reaps each home's sandboxes whose owner is dead,
with the one reaper (`reap_orphans_now`).

Run as `python -m agent_env.sandboxes.supervisor OWNER_PID OWNER_START_TIME HOME...` (the
start time may be empty); nothing imports it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

from agent_env.sandboxes import leases, procs

#: How long the supervisor waits for the controller to be gone (its pipe is already closed).
OWNER_EXIT_WAIT = 5.0


def supervise(owner_pid: int, started: int | None, homes: Sequence[str]) -> list[str]:
    """Wait for the owner `(owner_pid, started)` to end, then reap each of `homes` that holds
    a lease; the ids reaped. Plugins and config load only here, when a lease is left."""
    deadline = time.monotonic() + OWNER_EXIT_WAIT
    while procs.alive(owner_pid, started) and time.monotonic() < deadline:
        time.sleep(0.02)
    left = [Path(home) for home in dict.fromkeys(homes) if leases.has_leases(Path(home))]
    if not left:
        return []
    from agent_env.sandboxes.manager import reap_orphans_now

    reaped: list[str] = []
    for home in left:
        try:
            ids, problems = reap_orphans_now(home)
        except Exception as e:  # noqa: BLE001 - one home's failure must not stop the others
            ids, problems = [], [f"{type(e).__name__}: {e}"]
        reaped.extend(ids)
        if problems:
            _note(home, problems)
    return reaped


def _note(home: Path, problems: list[str]) -> None:
    """Keep what the watchdog could not reap where `agent-env sandbox` users look: the home."""
    try:
        with open(home / "watchdog.log", "a", encoding="utf-8") as f:
            for problem in problems:
                f.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {problem}\n")
    except OSError:
        pass


def main(argv: Sequence[str]) -> None:
    owner, started, *homes = argv
    supervise(int(owner), int(started) if started else None, homes)


if __name__ == "__main__":  # pragma: no cover - run as the supervisor process
    main(sys.argv[1:])
