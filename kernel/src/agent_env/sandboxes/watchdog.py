"""A watchdog per controller process: when the process that created sandboxes dies (SIGKILL,
OOM kill, a crash), its sandboxes are torn down within seconds, without waiting for the next
`agent-env` command to reap them.

It starts only once something exists that can outlive the command: `watch(home)` starts it at
once (`SandboxManager` calls it before a provider creates a sandbox that holds a container or
a process from the start); `arm(home)` only notes the home (a `local` sandbox is a folder
until it starts a process, and a folder left by a crash is the next command's reaper's), and
`ensure()` (the local sandbox calls it before it starts a process that could outlive us: a
server, or any process when bwrap is missing) starts it for the armed homes. A command that
`exec` runs under bwrap is bound to us (`--die-with-parent`: a SIGKILL of this process kills
its PID namespace), so `run hello`, whose one command runs that way, starts no watchdog.

The supervisor runs in its own session (Ctrl-C in the terminal does not reach it), reading a
pipe whose only writer is the controller, one home per line. Its first stage is a POSIX shell
(`STAGE_ONE`): on end of file (the controller ended, however it ended) it looks for leases in
the homes it heard of and exits when there is none, which is what a clean exit leaves.
Otherwise it execs the Python stage (`python -m agent_env.sandboxes.supervisor`), which waits
for the controller to be gone and runs the one reaper (`reap_orphans_now`) on those homes: it
tears down what the leases of dead owners name, through each sandbox's provider (local
processes, Docker containers, any plugin's sandboxes).
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

#: The supervisor's module; also the shell stage's `$0`, so both stages are found by name.
SUPERVISOR = "agent_env.sandboxes.supervisor"

#: The first stage: `sh -c STAGE_ONE SUPERVISOR PYTHON OWNER_PID OWNER_START_TIME`, homes on
#: stdin. A shell waiting on a pipe costs no interpreter start; it execs the Python stage only
#: when a home still holds a lease (`leases.has_leases`: any name not starting with a dot).
STAGE_ONE = """\
python=$1 owner=$2 started=$3
shift 3
while IFS= read -r home; do set -- "$@" "$home"; done
for home do
  for entry in "$home"/leases/*; do
    if [ -e "$entry" ] || [ -L "$entry" ]; then
      exec "$python" -m "$0" "$owner" "$started" "$@"
    fi
  done
done
"""

_lock = threading.Lock()
_pid = 0
_writer: int | None = None
_started = False
#: Homes written to this process's supervisor, and homes armed but not written yet.
_told: set[str] = set()
_armed: list[str] = []
#: The supervisor's handle, kept for the life of the process (never waited on: it outlives us).
_supervisor: subprocess.Popen | None = None


def enabled() -> bool:
    """Whether this process starts watchdogs (`AGENT_ENV_WATCHDOG` is not "0")."""
    return os.environ.get(ENV_SWITCH, "1") != "0"


def watch(home: Path) -> None:
    """Make sure this process's watchdog runs now and will reap what it leaves in `home`."""
    _note(home, start=True)


def arm(home: Path) -> None:
    """`home` gets sandboxes that hold nothing to outlive us until they start a process: the
    watchdog, once `ensure()` (or `watch`) starts it, reaps `home` too."""
    _note(home, start=False)


def ensure() -> None:
    """Something that can outlive this process is about to start (a sandbox process): start
    the watchdog for every armed home, if it does not run yet."""
    if not enabled():
        return
    with _lock:
        _forked()
        if _armed:
            _launch()
            _flush()


def _note(home: Path, *, start: bool) -> None:
    if not enabled():
        return
    key = str(Path(home).resolve())
    with _lock:
        _forked()
        if key not in _told and key not in _armed:
            _armed.append(key)
        if start:
            _launch()
        if _started:
            _flush()


def _forked() -> None:
    """A forked child (or the first call) gets its own watchdog, not its parent's."""
    global _pid, _writer, _started
    if _pid != os.getpid():
        _pid, _writer, _started = os.getpid(), None, False
        _told.clear()
        _armed.clear()


def _launch() -> None:
    global _writer, _started
    if not _started:
        _writer, _started = _start(), True


def _flush() -> None:
    """Write the armed homes to the supervisor (dropped if it could not be started)."""
    while _armed:
        home = _armed.pop(0)
        if _writer is None:
            continue
        try:
            os.write(_writer, (home + "\n").encode())
        except OSError:
            continue
        _told.add(home)


def _start() -> int | None:
    """Spawn the supervisor; the write end of its pipe (never inherited by other children)."""
    global _supervisor
    read_end, write_end = os.pipe()
    owner = os.getpid()
    started = procs.start_time(owner)
    try:
        _supervisor = subprocess.Popen(
            [
                "/bin/sh",
                "-c",
                STAGE_ONE,
                SUPERVISOR,
                sys.executable,
                str(owner),
                str(started or ""),
            ],
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
    """The pids of the supervisors (either stage) watching `owner_pid` (Linux /proc)."""
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
