"""Process identity and killing that stay correct when the OS reuses a pid.

A pid alone is not an identity: `(pid, start_time)` is. `start_time` is the process start in
clock ticks since boot (field 22 of `/proc/<pid>/stat`), or None where there is no /proc.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

_PROC = Path("/proc")


def start_time(pid: int) -> int | None:
    """The start time of `pid` in clock ticks since boot; None if unknown or not running."""
    try:
        stat = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    fields = stat[stat.rindex(")") + 2 :].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def alive(pid: int, started: int | None = None) -> bool:
    """True when `pid` runs and (if `started` is given and knowable) is the same process."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    if _is_zombie(pid):
        return False
    if started is not None:
        now = start_time(pid)
        if now is not None and now != started:
            return False
    return True


def _is_zombie(pid: int) -> bool:
    try:
        stat = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2 :].startswith("Z")


def hostname() -> str:
    return socket.gethostname()


_VALUE = r"^(?P<pid>\d+):(?P<start>\d*)@(?P<host>.*)$"


@attrs.frozen(kw_only=True)
class ProcessIdentity:
    """One process, told apart from a later one that reuses its pid: `(pid, start_time, host)`.

    The one form in which leases, container labels and run records name their owner.
    """

    pid: int
    start_time: int | None
    host: str

    @classmethod
    def current(cls) -> ProcessIdentity:
        """This process (computed once per pid: it never changes)."""
        global _CURRENT
        pid = os.getpid()
        if _CURRENT is None or _CURRENT.pid != pid:
            _CURRENT = cls(pid=pid, start_time=start_time(pid), host=hostname())
        return _CURRENT

    def on_this_host(self) -> bool:
        return self.host == hostname()

    def alive(self) -> bool:
        """Runs and is the same process (a reused pid with another start time is not).

        An owner on another host counts as alive: not ours to judge.
        """
        if not self.on_this_host():
            return True
        return alive(self.pid, self.start_time)

    def to_labels(self) -> dict[str, str]:
        """`owner_pid`/`owner_start_time`/`owner_host` labels (start time left out if unknown)."""
        labels = {"owner_pid": str(self.pid), "owner_host": self.host}
        if self.start_time is not None:
            labels["owner_start_time"] = str(self.start_time)
        return labels

    @classmethod
    def from_labels(cls, labels: Mapping[str, Any]) -> ProcessIdentity | None:
        """The owner named by `to_labels()` labels; None without a usable `owner_pid`.

        A missing `owner_host` means this host (labels written before hosts were recorded).
        """
        try:
            pid = int(labels["owner_pid"])
        except (KeyError, TypeError, ValueError):
            return None
        started = labels.get("owner_start_time")
        try:
            start = int(started) if started not in (None, "") else None
        except (TypeError, ValueError):
            start = None
        return cls(pid=pid, start_time=start, host=str(labels.get("owner_host") or hostname()))

    def to_label_value(self) -> str:
        """The one-string form `pid:start_time@host` (start time empty if unknown)."""
        start = "" if self.start_time is None else str(self.start_time)
        return f"{self.pid}:{start}@{self.host}"

    @classmethod
    def from_label_value(cls, value: str | None) -> ProcessIdentity | None:
        """Parse `to_label_value()`; None for anything else."""
        match = re.match(_VALUE, value or "")
        if not match:
            return None
        start = int(match["start"]) if match["start"] else None
        return cls(pid=int(match["pid"]), start_time=start, host=match["host"])


_CURRENT: ProcessIdentity | None = None


def kill_group(pgid: int, leader_started: int | None, *, grace: float = 0.0) -> None:
    """Kill the process group `pgid` that we created with a leader started at `leader_started`.

    If the leader still runs but is a different process (pid reused), the group is not ours
    and is left alone. With `grace` > 0 the group gets SIGTERM first and that long to exit.
    """
    if leader_started is not None and start_time(pgid) not in (None, leader_started):
        return
    if grace > 0:
        if not _signal_group(pgid, signal.SIGTERM):
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if not _group_exists(pgid):
                return
            time.sleep(0.005)
    _signal_group(pgid, signal.SIGKILL)


def _signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return any(not _is_zombie(pid) for pid in group_members(pgid))


def group_members(pgid: int) -> list[int]:
    """Pids whose process group is `pgid` (Linux /proc; empty elsewhere)."""
    out = []
    for pid in _pids():
        try:
            if os.getpgid(pid) == pgid:
                out.append(pid)
        except OSError:
            continue
    return out


def _pids() -> Iterable[int]:
    try:
        names = os.listdir(_PROC)
    except OSError:
        return []
    return [int(n) for n in names if n.isdigit()]


def pids_with_env(key: str, value: str) -> list[int]:
    """Pids whose environment holds `key=value`: catches processes that left their group."""
    needle = f"{key}={value}".encode()
    found = []
    me = os.getpid()
    for pid in _pids():
        if pid == me:
            continue
        try:
            environ = (_PROC / str(pid) / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(pid)
    return found


def env_values(key: str) -> dict[str, list[int]]:
    """value -> pids for every process (but this one) whose environment sets `key`."""
    prefix = key.encode() + b"="
    found: dict[str, list[int]] = {}
    me = os.getpid()
    for pid in _pids():
        if pid == me:
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read()
        except OSError:
            continue
        if prefix not in environ:
            continue
        for item in environ.split(b"\0"):
            if item.startswith(prefix):
                found.setdefault(item[len(prefix) :].decode(errors="replace"), []).append(pid)
    return found


class EnvScanner:
    """Shares one /proc environment scan between the teardowns that ask at about the same
    time: a caller gets the result of a scan that started after it asked, so nothing it
    killed before asking is missed, but 32 concurrent teardowns cost one scan, not 32."""

    def __init__(self, key: str):
        self.key = key
        self._lock = threading.Lock()
        self._started = float("-inf")
        self._result: dict[str, list[int]] = {}

    def pids(self, value: str) -> list[int]:
        asked = time.monotonic()
        with self._lock:
            if self._started < asked:
                self._started = time.monotonic()
                self._result = env_values(self.key)
            return list(self._result.get(value, ()))


def parent(pid: int) -> int | None:
    """The parent pid of `pid` (Linux /proc); None if unknown."""
    try:
        stat = (_PROC / str(pid) / "stat").read_text()
        return int(stat[stat.rindex(")") + 2 :].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def descends_from(pid: int, ancestors: set[int]) -> bool:
    """Whether `pid` is one of `ancestors`, in one of their process groups, or their
    descendant (what a server started stays the server's)."""
    for _ in range(64):
        if pid in ancestors:
            return True
        try:
            if os.getpgid(pid) in ancestors:
                return True
        except OSError:
            return False
        up = parent(pid)
        if up is None or up <= 1:
            return False
        pid = up
    return False


def command_line(pid: int, limit: int = 60) -> str:
    """`pid`'s command line, shortened to `limit` characters ("" when unknown)."""
    try:
        args = (_PROC / str(pid) / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return ""
    text = " ".join(a.decode(errors="replace") for a in args if a)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def stop_pids(pids: Iterable[int]) -> None:
    """SIGSTOP each of `pids` (so a shell does not run its next command when its child is
    killed before it)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGSTOP)
        except (ProcessLookupError, PermissionError):
            pass


def children_of(pid: int) -> list[int]:
    """The direct children of `pid` (Linux `/proc/<pid>/task/<pid>/children`; empty when it
    cannot tell): one file read, no scan of every process."""
    try:
        return [
            int(c) for c in (_PROC / str(pid) / "task" / str(pid) / "children").read_text().split()
        ]
    except (OSError, ValueError):
        return []


def kill_pids(pids: Iterable[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def wait_gone(pids: Iterable[int], timeout: float) -> list[int]:
    """Wait until none of `pids` runs (SIGKILL is delivered asynchronously); the survivors."""
    pending = [pid for pid in pids]
    deadline = time.monotonic() + timeout
    while pending:
        pending = [pid for pid in pending if alive(pid)]
        if not pending or time.monotonic() > deadline:
            break
        time.sleep(0.005)
    return pending
