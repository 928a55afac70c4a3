"""Lease files: one JSON file per live sandbox under `<home>/leases/`, naming its owner.

The owner is `(owner_pid, owner_start_time, host)` so a reused pid never looks alive. A reaper
claims a lease by renaming it to `<id>.reaping-<pid>`, so two reapers never tear down the same
sandbox twice, and a claim left by a reaper that died is claimed again.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from agent_env.fsutil import atomic_write
from agent_env.sandboxes import procs

SUFFIX = ".json"
CLAIM = ".reaping-"
#: Names a creation under way (written before the provider creates, removed once leased).
PENDING = "pending-"
#: Starts the name of a lease being written (`.tmp-<writer pid>-...`).
TEMP = ".tmp-"


def me() -> dict[str, Any]:
    """This process as a lease owner (its `ProcessIdentity` in the lease's field names)."""
    ident = procs.ProcessIdentity.current()
    return {"owner_pid": ident.pid, "owner_start_time": ident.start_time, "host": ident.host}


def write(path: Path, lease: dict[str, Any]) -> None:
    # No fsync: a lease only has to outlive its process, not a power cut (every create pays it).
    # Compact JSON: `indent` makes `json` use its pure-Python encoder (~10x slower).
    # The temp file names its writer, so the reaper can remove one a SIGKILL left half written.
    body = json.dumps(lease, separators=(",", ":"))
    atomic_write(path, body, fsync=False, prefix=f"{TEMP}{os.getpid()}-")


def discard_dead_temps(lease_dir: Path, names: list[str]) -> None:
    """Remove the temp files of lease writers that died mid-write."""
    for name in names:
        if not name.startswith(TEMP):
            continue
        try:
            pid = int(name[len(TEMP) :].split("-", 1)[0])
        except ValueError:
            continue
        if not procs.alive(pid):
            (Path(lease_dir) / name).unlink(missing_ok=True)


def write_pending(lease_dir: Path, lease: dict[str, Any]) -> Path:
    """Record a creation under way; returns the file to remove once the real lease exists."""
    import uuid

    path = Path(lease_dir) / f"{PENDING}{uuid.uuid4().hex}{SUFFIX}"
    write(path, {**lease, "pending": True})
    return path


def read(path: Path) -> dict[str, Any] | None:
    try:
        lease = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return lease if isinstance(lease, dict) else None  # not a lease this module wrote


def owner_alive(lease: dict[str, Any]) -> bool:
    """Alive, or on another host (not ours to judge)."""
    pid = lease.get("owner_pid")
    if not isinstance(pid, int):
        return lease.get("host") not in (None, procs.hostname())
    started = lease.get("owner_start_time")
    return procs.ProcessIdentity(
        pid=pid,
        start_time=started if isinstance(started, int) else None,
        host=lease.get("host") or procs.hostname(),
    ).alive()


def held(home: Path, sandbox_id: str) -> bool:
    """Whether a live owner holds the lease of `sandbox_id` under agent-env home `home`: a
    provider's label-based `reap` must spare it (a resumed run adopted it from a dead one)."""
    lease = read(Path(home) / "leases" / f"{sandbox_id}{SUFFIX}")
    return lease is not None and owner_alive(lease)


def claim(path: Path) -> Path | None:
    """Atomically take `path` for reaping; None when another process got there first."""
    target = path.with_name(
        path.name.split(CLAIM)[0].removesuffix(SUFFIX) + CLAIM + str(os.getpid())
    )
    try:
        os.rename(path, target)
    except FileNotFoundError:
        return None
    return target


def unclaim(claimed: Path, path: Path) -> None:
    """Give back a claim (its lease was not an orphan after all), unless a newer lease was
    written at `path` meanwhile (that one wins)."""
    try:
        os.link(claimed, path)
    except FileExistsError:
        pass
    except OSError:
        return
    claimed.unlink(missing_ok=True)


def mine(lease: dict[str, Any]) -> bool:
    """Whether this process owns `lease`."""
    ident = procs.ProcessIdentity.current()
    return lease.get("owner_pid") == ident.pid and lease.get("host") in (None, ident.host)


def take(path: Path) -> dict[str, Any] | None:
    """Re-own the lease at `path`, whose owner is dead, to this process (a resume adopting what
    a dead run left): claimed first like a reaper, so a reaper and a resume never both get it.
    The lease as it was; None when another process got it or its owner turned out alive."""
    claimed = claim(path)
    if claimed is None:
        return None
    lease = read(claimed)
    if lease is None or owner_alive(lease):
        unclaim(claimed, path)
        return None
    write(path, {**lease, **me(), "taken_from_pid": lease.get("owner_pid")})
    claimed.unlink(missing_ok=True)
    return lease


def stale_claim(name: str) -> bool:
    """A claim file whose reaper process is gone."""
    try:
        pid = int(name.rsplit(CLAIM, 1)[1])
    except (IndexError, ValueError):
        return False
    return pid != os.getpid() and not procs.alive(pid)


def has_leases(home: Path) -> bool:
    """Whether any lease file exists under `home` (one `listdir`; what every command pays)."""
    try:
        return any(not name.startswith(".") for name in os.listdir(Path(home) / "leases"))
    except (FileNotFoundError, NotADirectoryError):
        return False


def now() -> float:
    return time.time()
