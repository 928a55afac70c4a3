"""Host processes of a local sandbox: the `Process` handle of a server, and killing every
process a sandbox started (by tracked process group, then by the `AGENTENV_SANDBOX` marker)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from agent_env.aio import to_thread
from agent_env.sandbox import Process
from agent_env.sandboxes import procs
from agent_env.sandboxes.local import logs

MARKER_ENV = "AGENTENV_SANDBOX"
#: One /proc scan for the marker serves every teardown that asks at about the same time.
_MARKED = procs.EnvScanner(MARKER_ENV)
STOP_GRACE = 1.0
DRAIN_AFTER_KILL = 2.0
#: How long the log of an exited server may take to receive its last bytes (a child of the
#: server that still holds its output open keeps the copy going).
FINISH_TIMEOUT = 1.0


class LocalProcess(Process):
    """A host process `LocalSandbox.start_process` started; output in its log file."""

    def __init__(self, popen: subprocess.Popen, log: Path, url: str, started: int | None):
        self.popen = popen
        self.pid = popen.pid
        self.log = log
        self.url = url
        self._started = started

    async def exit_code(self) -> int | None:
        return self.popen.poll()

    async def logs(self, *, tail: int = 200) -> str:
        def read() -> str:
            if self.popen.poll() is not None:  # exited: its last lines may be in the FIFO yet
                logs.finish(logs.pipe_for(self.log), FINISH_TIMEOUT)
            return tail_file(self.log, tail)

        return await to_thread(read)

    async def stop(self) -> None:
        def go() -> None:
            procs.kill_group(self.pid, self._started, grace=STOP_GRACE)
            wait_quietly(self.popen)

        await to_thread(go)  # never abandoned: it waits for the thread


def tail_file(path: Path, tail: int) -> str:
    """The last `tail` lines of a log file ("" when it is gone)."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-tail:])
    except OSError:
        return ""


def wait_quietly(popen: subprocess.Popen) -> None:
    """Reap a killed child, waiting at most `DRAIN_AFTER_KILL` seconds."""
    try:
        popen.wait(timeout=DRAIN_AFTER_KILL)
    except subprocess.TimeoutExpired:
        pass


def marked_pids(sandbox_id: str) -> list[int]:
    """The processes carrying sandbox `sandbox_id`'s marker (one shared /proc scan)."""
    return _MARKED.pids(sandbox_id)


def kill_all(
    sandbox_id: str,
    tracked: Mapping[int, Mapping[str, Any]],
    children: Iterable[subprocess.Popen],
    *,
    scan: bool = True,
) -> None:
    """Kill every tracked process group (servers get SIGTERM and a short grace), then any
    process still carrying the sandbox's marker (unless `scan` is False: the caller knows no
    such process can outlive the groups); wait until they are gone and reap `children`."""
    # bwrap's child is the init of the command's PID namespace: once it is gone, so is every
    # process of the namespace (the kernel kills them as it dies, which can be after bwrap
    # itself died); a server's direct children go with it too
    inits = [c for pid, e in tracked.items() if procs.alive(pid, e.get("started"))
             for c in procs.children_of(pid)]  # fmt: skip
    for pid, entry in tracked.items():
        grace = STOP_GRACE if entry.get("kind") == "server" else 0.0
        procs.kill_group(pid, entry.get("started"), grace=grace)
    marked = _MARKED.pids(sandbox_id) if scan else []
    procs.kill_pids([*inits, *marked])
    ours = [pid for pid, e in tracked.items() if procs.alive(pid, e.get("started"))]
    procs.wait_gone([*ours, *inits, *marked], DRAIN_AFTER_KILL)
    for popen in children:
        wait_quietly(popen)
