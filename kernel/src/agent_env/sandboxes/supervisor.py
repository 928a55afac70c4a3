"""The supervisor process `agent_env.sandboxes.watchdog` starts for a controller: it reads the
homes the controller uses until the pipe closes (the controller ended, however it ended), then
reaps each home's sandboxes whose owner is dead, with the one reaper (`reap_orphans_now`).

Run as `python -m agent_env.sandboxes.supervisor OWNER_PID`; nothing imports it.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from agent_env.sandboxes import leases, procs

#: How long the supervisor waits, after the pipe closed, for the controller to be gone.
OWNER_EXIT_WAIT = 5.0


def supervise(owner_pid: int, stream: Any = None) -> list[str]:
    """Read homes from `stream` (stdin) until end of file, then reap each; the ids reaped.
    Plugins and config load only when a lease is left (after a clean exit none is): the
    supervisor of a run that ends normally costs an interpreter start and a `listdir`."""
    started = procs.start_time(owner_pid)
    stream = stream if stream is not None else sys.stdin.buffer
    homes: list[str] = []
    for line in iter(stream.readline, b""):
        home = line.decode(errors="replace").strip()
        if home and home not in homes:
            homes.append(home)
    deadline = time.monotonic() + OWNER_EXIT_WAIT
    while procs.alive(owner_pid, started) and time.monotonic() < deadline:
        time.sleep(0.02)
    left = [Path(home) for home in homes if leases.has_leases(Path(home))]
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


if __name__ == "__main__":  # pragma: no cover - run as the supervisor process
    supervise(int(sys.argv[1]))
