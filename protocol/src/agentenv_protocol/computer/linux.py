"""The POSIX defaults of a computer driver: run a command in the session (its own process
group, killed whole at its timeout; output a background app keeps open is drained after the
call returns) and write a file atomically under the home."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import tempfile
from pathlib import Path

from agentenv_protocol.computer.results import ExecResult

#: How long output is still read (and dropped) after a command returned; then the pipe closes.
DRAIN_S = 30.0
#: How long to wait, once the command exited, for output already written to arrive.
SETTLE_S = 0.1
CHUNK = 65536
POLL_S = 0.02
_draining: set = set()


async def _read(stream: asyncio.StreamReader, sink: bytearray, cap: int, over: list) -> None:
    while True:
        chunk = await stream.read(CHUNK)
        if not chunk:
            return
        room = cap + 1 - len(sink)
        if room > 0:
            sink += chunk[:room]
        if len(sink) > cap:
            over[0] = True


def _kill_group(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


async def _exited(process: asyncio.subprocess.Process) -> int:
    """The exit code once the process exited. Polled: `Process.wait()` also waits for its pipes
    to close, which a background child holding them open delays."""
    while process.returncode is None:
        await asyncio.sleep(POLL_S)
    return process.returncode


async def _drain(readers: list[asyncio.Task]) -> None:
    try:
        await asyncio.wait_for(asyncio.gather(*readers, return_exceptions=True), DRAIN_S)
    except TimeoutError:
        pass
    finally:
        for reader in readers:
            reader.cancel()


async def run(
    argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float, cap: int
) -> ExecResult:
    """Run `argv`; its streams are kept up to `cap` + 1 bytes (so a caller sees the cut)."""
    process = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env={**os.environ, **env},
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    out, err, over = bytearray(), bytearray(), [False]
    assert process.stdout is not None and process.stderr is not None
    readers = [
        asyncio.ensure_future(_read(process.stdout, out, cap, over)),
        asyncio.ensure_future(_read(process.stderr, err, cap, over)),
    ]
    timed_out = False
    try:
        await asyncio.wait_for(_exited(process), timeout_s)
    except TimeoutError:
        timed_out = True
        _kill_group(process)
        await _exited(process)
    except BaseException:
        _kill_group(process)
        raise
    _, pending = await asyncio.wait(readers, timeout=SETTLE_S)
    if pending:
        drain = asyncio.ensure_future(_drain(list(pending)))
        _draining.add(drain)
        drain.add_done_callback(_draining.discard)
    if timed_out:
        return ExecResult(None, bytes(out), bytes(err), True)
    return ExecResult(process.returncode, bytes(out), bytes(err), False)


def write_atomic(target: Path, data: bytes) -> None:
    """Write `data` to `target` through a temporary file in its folder (fsync, rename); the
    temporary file is removed when anything fails."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
