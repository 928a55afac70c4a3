"""CPU of a command and of every process it started, detached ones included (Linux).

The benchmark process makes itself a child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`): a
process the command starts and leaves behind (a daemon in its own session, a supervisor it
never waits for) is re-parented to us when its parent ends, so we reap it and `wait4` hands us
its user + system time, which already holds whatever it waited for in turn. Descendants still
running `linger` seconds after the command ended are killed, reaped and counted as left behind.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from typing import IO

import attrs

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> None:
    """Make orphans of our descendants our children (once per benchmark process)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


@attrs.frozen(kw_only=True)
class TreeRun:
    """One run of a command: wall time until it exited, CPU of it alone (with what it waited
    for), CPU of every process of the tree, how many processes outlived it, and how many of
    those still ran after the linger time (killed, their CPU counted)."""

    wall_ms: float
    own_cpu_ms: float
    tree_cpu_ms: float
    outlived: int
    left_running: int
    exit_code: int


def _cpu_ms(usage: resource.struct_rusage) -> float:
    return (usage.ru_utime + usage.ru_stime) * 1000


def _children() -> list[int]:
    pids: list[int] = []
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as f:
                pids.extend(int(p) for p in f.read().split())
        except OSError:
            continue
    return pids


def tree_pids(root: int) -> list[int]:
    """`root` and every process below it that runs now (Linux /proc), `root` first."""
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    todo.extend(int(p) for p in f.read().split())
            except OSError:
                continue
    return out


def run_tree(
    cmd: Sequence[str],
    env: Mapping[str, str],
    *,
    linger: float = 10.0,
    cwd: str | None = None,
    stdout: IO[bytes] | int = subprocess.DEVNULL,
    stderr: IO[bytes] | int = subprocess.DEVNULL,
) -> TreeRun:
    """Run `cmd` (output to `stdout`/`stderr`, discarded by default) and account for its
    whole process tree. The caller must have called `become_subreaper()` and must have no
    other children running."""
    start = time.perf_counter()
    proc = subprocess.Popen(list(cmd), stdout=stdout, stderr=stderr, env=dict(env), cwd=cwd)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait
    wall = (time.perf_counter() - start) * 1000
    own = total = _cpu_ms(usage)
    outlived = 0
    killed: set[int] = set()
    deadline = time.monotonic() + linger
    while True:
        try:
            pid, _, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid:
            outlived += 1
            total += _cpu_ms(usage)
            continue
        if time.monotonic() >= deadline:  # kill what still runs (and orphans it leaves)
            for child in set(_children()) - killed:
                killed.add(child)
                try:
                    os.kill(child, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        time.sleep(0.002)
    return TreeRun(
        wall_ms=wall,
        own_cpu_ms=own,
        tree_cpu_ms=total,
        outlived=outlived,
        left_running=len(killed),
        exit_code=proc.returncode,
    )
