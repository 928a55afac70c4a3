"""How the local sandbox runs a command: in a worker thread of its own limiter (not an
asyncio subprocess), with bounded output and process-group kills, and `test -e|-d|-f PATH`
answered with a stat."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

from agent_env.aio import pool
from agent_env.sandboxes import procs

_TESTS = {"-e": os.path.exists, "-d": os.path.isdir, "-f": os.path.isfile}


def answer_test(argv: Sequence[str], cwd: Path) -> int | None:
    """The exit code of `test -e|-d|-f PATH` (the probe verifiers run most), answered without
    starting a process: a fork and exec costs milliseconds, a stat microseconds. None for
    any other command."""
    if len(argv) != 3 or argv[0] not in ("test", "/usr/bin/test", "/bin/test"):
        return None
    check = _TESTS.get(argv[1])
    if check is None or not argv[2]:
        return None
    return 0 if check(os.path.join(cwd, argv[2])) else 1


#: Commands waiting at once, each in a worker thread of its own (`exec_pool`).
EXEC_THREADS = 100_000


def host_environ() -> dict[str, str]:
    """A copy of this process's environment, the base of every command's environment."""
    return dict(os.environ)


def exec_pool() -> Executor:
    """Commands wait in their own worker threads, outside the default pool that store calls
    share, so long-running commands never starve the journal."""
    return pool(EXEC_THREADS)


def collect(
    popen: subprocess.Popen,
    timeout: float | None,
    started: int | None,
    drain_after_kill: float,
    max_output: int,
) -> tuple[int | None, bytes, bytes, bool]:
    """In a worker thread: read both pipes (keeping `max_output` bytes of each) until the
    command exits, killing its group when it exits or times out; then drain what is left for
    at most `drain_after_kill` seconds. (exit code, stdout, stderr, timed out)."""
    import selectors
    import time

    sinks: dict[Any, list[bytes]] = {popen.stdout: [], popen.stderr: []}
    kept = dict.fromkeys(sinks, 0)
    now = time.monotonic()
    deadline = None if timeout is None else now + timeout
    drain_until: float | None = None
    timed_out = False
    with selectors.DefaultSelector() as sel:
        for stream in sinks:
            os.set_blocking(stream.fileno(), False)
            sel.register(stream, selectors.EVENT_READ)
        while sel.get_map():
            now = time.monotonic()
            if drain_until is None:
                if popen.poll() is not None:
                    procs.kill_group(popen.pid, started)
                    drain_until = now + drain_after_kill
                elif deadline is not None and now >= deadline:
                    timed_out = True
                    procs.kill_group(popen.pid, None)
                    drain_until = now + drain_after_kill
            if drain_until is not None and now >= drain_until:
                break
            limit = drain_until if drain_until is not None else deadline
            wait = 0.05 if limit is None else max(0.0, min(0.05, limit - now))
            for key, _ in sel.select(wait):
                stream = key.fileobj
                try:
                    chunk = os.read(key.fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(stream)
                    continue
                if kept[stream] < max_output:
                    sinks[stream].append(chunk[: max_output - kept[stream]])
                    kept[stream] += len(chunk)
                    if kept[stream] >= max_output:
                        sinks[stream].append(b"\n[output truncated]\n")
    if drain_until is None:
        try:
            popen.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
            procs.kill_group(popen.pid, None)
        else:
            procs.kill_group(popen.pid, started)
    try:
        popen.wait(drain_after_kill)
    except subprocess.TimeoutExpired:
        pass
    for stream in sinks:
        stream.close()
    return (
        popen.returncode,
        b"".join(sinks[popen.stdout]),
        b"".join(sinks[popen.stderr]),
        timed_out,
    )
