"""Process logs redacted while they are written: a server's output goes into a FIFO beside its
log file, and a thread of this process copies it into the log (0600) through
`agent_env.redact.process_redactor()`, so a secret the process prints never reaches the disk.

The draining process keeps a write end of the FIFO open itself, so the copy does not end before
the child opened it (a fork server's child opens it on its own); `close(sandbox_id)` (at
teardown), or `finish(pipe)` once the child exited, lets it end once the child's own write ends
close. A resumed run that adopts the sandbox drains it again (`drain`); between the
controller's death and then, the process's writes fail (no reader), nothing is written
unredacted.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from agent_env.redact import process_redactor

#: sandbox id -> {FIFO: the write end this process holds open} (closed at teardown, or by
#: `finish` once the FIFO's process exited)
_HELD: dict[str, dict[str, int]] = {}
#: the FIFOs this process is copying -> the thread copying it
_DRAINING: dict[str, threading.Thread] = {}
_LOCK = threading.Lock()
CHUNK = 65536


def pipe_for(log: Path) -> Path:
    return log.with_name(log.name + ".pipe")


def open_redacted(sandbox_id: str, log: Path) -> Path:
    """Make the FIFO of `log` and start copying it into `log`, redacted; the path the child's
    output must go to (open it for writing: it never blocks)."""
    pipe = pipe_for(log)
    os.mkfifo(pipe, 0o600)
    drain(sandbox_id, pipe, log)
    return pipe


def drain(sandbox_id: str, pipe: Path, log: Path) -> bool:
    """Copy what is written to FIFO `pipe` into `log`, redacted, in a daemon thread; False when
    `pipe` is gone."""
    with _LOCK:
        if str(pipe) in _DRAINING:  # already copied by this process
            return True
        try:
            reader = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            return False
        holder = os.open(pipe, os.O_WRONLY)
        _HELD.setdefault(sandbox_id, {})[str(pipe)] = holder
        os.set_blocking(reader, True)
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        copier = threading.Thread(
            target=_copy, args=(reader, fd, str(pipe)), daemon=True, name=f"log-{log.name}"
        )
        _DRAINING[str(pipe)] = copier
    copier.start()
    return True


def finish(pipe: Path, timeout: float) -> None:
    """Let the copy of FIFO `pipe` end once its process exited: drop this process's write end
    of it, then wait (at most `timeout` seconds) until every byte the process wrote is in the
    log, the last ones held back for redaction included. Without it, the log of a process
    that just exited can still miss its last lines: the error a reader wants."""
    key = str(pipe)
    with _LOCK:
        holder = next((h.pop(key) for h in _HELD.values() if key in h), None)
        copier = _DRAINING.get(key)
    if holder is not None:
        try:
            os.close(holder)
        except OSError:
            pass
    if copier is not None:  # it ends when the last write end closes (a child may hold one)
        copier.join(timeout)


def close(sandbox_id: str) -> None:
    """Drop this process's write ends of the sandbox's FIFOs: each copy ends once its
    process's own write ends are closed (the process exited or was killed)."""
    with _LOCK:
        held = _HELD.pop(sandbox_id, {})
    for fd in held.values():
        try:
            os.close(fd)
        except OSError:
            pass


def _copy(reader: int, out: int, pipe: str) -> None:
    redactor = process_redactor()
    buf = b""
    try:
        while True:
            chunk = os.read(reader, CHUNK)
            if not chunk:
                break
            buf += chunk
            cut = len(buf) - redactor.pending(buf)  # hold back what may begin a secret
            if cut:
                _write(out, redactor.data(buf[:cut]))
                buf = buf[cut:]
        if buf:
            _write(out, redactor.data(buf))
    except OSError:
        pass
    finally:
        os.close(reader)
        os.close(out)
        with _LOCK:
            _DRAINING.pop(pipe, None)


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
