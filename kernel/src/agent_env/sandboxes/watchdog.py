"""A watchdog per controller process: when the process that created sandboxes dies (SIGKILL,
OOM kill, a crash), its sandboxes are torn down within seconds, without waiting for the next
`agent-env` command to reap them.

`watch(home)` (called by `SandboxManager` before its first sandbox is created in `home`)
starts, once per process, a small supervisor (`python -m agent_env.sandboxes.supervisor`) in its
own session (Ctrl-C in the terminal does not reach it), reading a pipe whose only writer is the
controller. Each home the controller uses is written to the pipe, one line each. The kernel
closes the pipe when the controller ends, however it ends; on end of file the supervisor waits
for the controller to be gone and runs the one reaper (`reap_orphans_now`) on every home it
heard of: it tears down what the leases of dead owners name, through each sandbox's provider
(local processes, Docker containers, any plugin's sandboxes). After a clean exit there is no
lease left, and that costs one `listdir` per home.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent_env.sandboxes import procs

#: Set to "0" to start no watchdog (sandboxes of a killed process then wait for the next
#: command's reaper, as before).
ENV_SWITCH = "AGENT_ENV_WATCHDOG"

#: The supervisor's module (`python -m SUPERVISOR OWNER_PID`).
SUPERVISOR = "agent_env.sandboxes.supervisor"

_lock = threading.Lock()
_pid = 0
_writer: int | None = None
_homes: set[str] = set()
#: The supervisor's handle, kept for the life of the process (never waited on: it outlives us).
_supervisor: subprocess.Popen | None = None


def watch(home: Path) -> None:
    """Make sure this process's watchdog will reap the sandboxes it leaves in `home`."""
    global _pid, _writer
    if os.environ.get(ENV_SWITCH, "1") == "0":
        return
    key = str(Path(home).resolve())
    with _lock:
        if _pid != os.getpid():  # first call, or a forked child: its own watchdog
            _pid, _writer = os.getpid(), _start()
            _homes.clear()
        if _writer is None or key in _homes:
            return
        try:
            os.write(_writer, (key + "\n").encode())
        except OSError:
            return
        _homes.add(key)


def _start() -> int | None:
    """Spawn the supervisor; the write end of its pipe (never inherited by other children)."""
    global _supervisor
    read_end, write_end = os.pipe()
    try:
        _supervisor = subprocess.Popen(
            [sys.executable, "-m", SUPERVISOR, str(os.getpid())],
            stdin=read_end,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        os.close(write_end)
        return None
    finally:
        os.close(read_end)
    return write_end


_waited: set[tuple[int, Any]] = set()
#: How long a resume waits for a dead controller's supervisor to finish reaping.
SUPERVISOR_WAIT = 15.0


def may_wait(owner: Mapping[str, Any] | None) -> bool:
    """Whether `wait_for_supervisor(owner)` may have to wait (a dead owner on this host, not
    waited for yet)."""
    pid = (owner or {}).get("pid")
    if not isinstance(pid, int) or (owner or {}).get("host") not in (None, procs.hostname()):
        return False
    key = (pid, (owner or {}).get("start_time"))
    return key not in _waited and not procs.alive(pid, key[1])


def wait_for_supervisor(owner: Mapping[str, Any] | None, timeout: float = SUPERVISOR_WAIT) -> None:
    """Wait until no supervisor watches `owner` (a record's `{pid, start_time, host}`, dead):
    once it returns, what that watchdog reaps is gone rather than half torn down."""
    import time

    if not may_wait(owner):
        return
    assert owner is not None
    pid = owner["pid"]
    _waited.add((pid, owner.get("start_time")))
    deadline = time.monotonic() + timeout
    while supervisor_pids(pid) and time.monotonic() < deadline:
        time.sleep(0.05)


def supervisor_pids(owner_pid: int) -> list[int]:
    """The pids of the supervisors watching `owner_pid` (Linux /proc; for diagnostics)."""
    found = []
    for name in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if SUPERVISOR.encode() in args and str(owner_pid).encode() in args:
            found.append(int(name))
    return found
