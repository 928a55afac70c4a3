"""One shell command run for the proxy, in a process group of its own.

The command is done when its shell exits; what it started in the background runs on. Output
that arrives within the grace period after the exit is kept, later output is read and dropped
(so a background writer never blocks on a full pipe). A timeout, or `kill()`, ends the whole
group with SIGKILL.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, Process

from agentenv_protocol.a2a_agent.proxy_types import BashResult

#: At most this many bytes of each stream are kept in a result; the rest is counted.
MAX_OUTPUT_BYTES = 1_000_000
#: The exit code a shell reports for a command it couldn't start.
CANNOT_START = 126
#: Linux refuses to exec a single argument this long or longer (32 pages).
_MAX_ARG_BYTES = 32 * 4096


def _too_long(argv: list[str]) -> bool:
    """Whether exec would refuse `argv` as too long: checked first, so no process is begun."""
    sizes = [len(arg.encode()) + 1 for arg in argv]
    environment = sum(len(k) + len(v) + 2 for k, v in os.environ.items())
    limit = os.sysconf("SC_ARG_MAX") if hasattr(os, "sysconf") else 2**21
    single = sys.platform.startswith("linux") and max(sizes) > _MAX_ARG_BYTES
    return single or sum(sizes) + environment > limit


class _Sink:
    """Collects one output stream until told to drop what comes next."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.dropped = 0
        self.keep = True
        self.closed = anyio.Event()

    async def drain(self, stream: ByteReceiveStream) -> None:
        try:
            async for chunk in stream:
                if self.keep:  # later output is read (so its writer never blocks) and dropped
                    room = max(MAX_OUTPUT_BYTES - len(self.data), 0)
                    self.data += chunk[:room]
                    self.dropped += max(len(chunk) - room, 0)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            self.closed.set()
            with contextlib.suppress(Exception):
                await stream.aclose()

    def text(self) -> str:
        self.keep = False
        text = self.data.decode("utf-8", errors="replace")
        if self.dropped:
            text += f"\n[{self.dropped} more bytes of output were dropped]"
        return text


class Command:
    """`argv` run in `cwd`; `run` returns its `BashResult`, `kill` stops its process group."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        self.argv = argv
        self.cwd = cwd
        self.pgid: int | None = None

    def kill(self) -> None:
        """SIGKILL the command's whole process group (what it left behind included)."""
        if self.pgid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pgid, signal.SIGKILL)

    async def run(self, *, timeout: float, grace: float, spawn: Callable[..., Any]) -> BashResult:
        """Run to the shell's exit or `timeout`; `spawn(fn, arg)` starts the pipe readers in a
        task group that outlives this call (they keep draining what the background writes)."""
        if _too_long(self.argv):
            return _not_started(self.argv[0], "Argument list too long")
        try:
            process = await anyio.open_process(
                self.argv,
                cwd=self.cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as e:
            return _not_started(self.argv[0], e.strerror or str(e))
        self.pgid = process.pid
        out, err = _Sink(), _Sink()
        spawn(_drain, process, out, err)
        try:
            with anyio.move_on_after(timeout) as deadline:
                code: int | None = await process.wait()
            if deadline.cancelled_caught:
                self.kill()
                await process.wait()
                code = None
            with anyio.move_on_after(grace):
                await out.closed.wait()
                await err.closed.wait()
        except BaseException:
            self.kill()
            with anyio.CancelScope(shield=True):
                await process.wait()
            raise
        if code is not None and code < 0:  # ended by a signal, as a shell reports it
            code = 128 - code
        return BashResult(
            exit_code=code,
            stdout=out.text(),
            stderr=err.text(),
            timed_out=code is None,
        )


async def _drain(process: Process, out: _Sink, err: _Sink) -> None:
    """Read both streams to their end (or until the app stops), then close the process's
    transport while the event loop still runs (asyncio would close it when collected, after
    the loop is gone)."""
    assert process.stdout is not None and process.stderr is not None
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(out.drain, process.stdout)
            group.start_soon(err.drain, process.stderr)
    finally:
        # after the shell's exit is collected (closing earlier would reap it under asyncio's
        # child watcher, which then reports 255); anyio has no public way to close it
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            await process.wait()
        transport = getattr(getattr(process, "_process", None), "_transport", None)
        if transport is not None:
            transport.close()


def _not_started(shell: str, reason: str) -> BashResult:
    return BashResult(
        exit_code=CANNOT_START,
        stdout="",
        stderr=f"{shell}: couldn't start the command: {reason}\n",
        timed_out=False,
    )
