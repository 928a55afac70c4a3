"""A warm starter for local env processes: one helper process per runner that has already
imported `agentenv_protocol` (mcp, starlette, uvicorn) forks a child per env, so a local env
answers in tens of milliseconds instead of paying the ~1-2 s import each time.

Only `python <script> ...` and `python -m <module> ...` run with this interpreter go this way;
anything else uses the sandbox's `start_process`. The child becomes a normal member of its
sandbox: its own session, its output in the sandbox's log folder, and the sandbox marker in
its `/proc/<pid>/environ` (the helper starts with a placeholder of the same length that the
child overwrites in place), so the local provider's teardown and reaping find and kill it.
The helper reads requests on stdin and exits when the runner goes away (EOF).
Set `AGENTENV_ENV_FORKSERVER=0` to turn it off.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from agent_env.aio import shielded, to_thread
from agent_env.sandbox import Process

MARKER = "AGENTENV_SANDBOX"
PLACEHOLDER = "local-" + "X" * 12  # the shape of a local sandbox id
PRELOAD = (
    "agentenv_protocol",
    "agentenv_protocol.server",
    "uvicorn",
    "uvicorn.config",
    "uvicorn.server",
    "uvicorn.main",
    "uvicorn.loops.auto",
    "uvicorn.loops.asyncio",
    "uvicorn.protocols.http.auto",
    "uvicorn.protocols.http.h11_impl",
    "uvicorn.protocols.http.httptools_impl",
    "uvicorn.protocols.websockets.auto",
    "uvicorn.lifespan.on",
    "uvicorn.lifespan.off",
)
READY_TIMEOUT = 60.0

_lock = threading.Lock()
_server: ForkServer | None = None


def enabled() -> bool:
    return (
        os.environ.get("AGENTENV_ENV_FORKSERVER", "1") not in ("0", "false", "no")
        and sys.platform == "linux"
    )


def entry(argv: list[str]) -> tuple[str, str] | None:
    """("path" | "module", target) when `argv` is `python script.py ...` or `python -m mod
    ...` (with `python` already resolved to this interpreter), else None."""
    if len(argv) < 2 or argv[0] != sys.executable:
        return None
    if argv[1] == "-m" and len(argv) >= 3:
        return "module", argv[2]
    if argv[1].startswith("-"):
        return None
    return "path", argv[1]


class ForkServer:
    """The runner's handle on the helper: `spawn(...)` and `status(pid)` (blocking calls)."""

    def __init__(self) -> None:
        env = {**os.environ, MARKER: PLACEHOLDER}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agentenv_core_steps.envs.forkserver"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            text=True,
            bufsize=1,
            start_new_session=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None  # both are PIPEs
        self._requests, self._answers = self.proc.stdin, self.proc.stdout
        self._io = threading.Lock()
        line = self._readline(READY_TIMEOUT)
        if line.strip() != "ready":
            self.stop()
            raise RuntimeError(f"the env fork server did not start ({line.strip() or 'no answer'})")

    def _readline(self, timeout: float) -> str:
        done: list[str] = []
        reader = threading.Thread(target=lambda: done.append(self._answers.readline()), daemon=True)
        reader.start()
        reader.join(timeout)
        return done[0] if done else ""

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        with self._io:
            if self.proc.poll() is not None:
                raise RuntimeError("the env fork server has exited")
            self._requests.write(json.dumps(request) + "\n")
            self._requests.flush()
            line = self._readline(30.0)
            if not line:
                self.proc.kill()  # a late answer would desynchronise the next request
                raise RuntimeError("the env fork server did not answer")
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return answer

    def spawn(
        self, argv: list[str], *, cwd: Path, env: dict[str, str], log: Path, marker: str
    ) -> int:
        kind, target = entry(argv) or ("", "")
        if not kind or len(marker) != len(PLACEHOLDER):
            raise ValueError("not a command the fork server can start")
        return int(
            self._ask(
                {
                    "op": "spawn",
                    "kind": kind,
                    "target": target,
                    "argv": argv[1:],
                    "cwd": str(cwd),
                    "env": env,
                    "log": str(log),
                    "marker": marker,
                }
            )["pid"]
        )

    def status(self, pid: int) -> int | None:
        """The exit code of a child that ended, else None."""
        return self._ask({"op": "status", "pid": pid}).get("exit")

    def stop(self) -> None:
        try:
            self._requests.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class ForkedProcess(Process):
    """A child of the fork server as the kernel's `Process` handle: its exit code from the
    helper, its output from its log file in the sandbox's meta folder."""

    def __init__(self, server: ForkServer, pid: int, log: Path, url: str) -> None:
        self.server = server
        self.pid = pid
        self.log = log
        self.url = url
        self._code: int | None = None

    async def exit_code(self) -> int | None:
        if self._code is None:
            try:
                self._code = await to_thread(self.server.status, self.pid)
            except RuntimeError:
                return None
        return self._code

    async def logs(self, *, tail: int = 200) -> str:
        def read() -> str:
            try:
                return "\n".join(self.log.read_text(errors="replace").splitlines()[-tail:])
            except OSError:
                return ""

        return await to_thread(read)

    async def stop(self) -> None:
        await shielded(self._stop())

    async def _stop(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.pid, sig)
            except (ProcessLookupError, PermissionError):
                return
            for _ in range(20):
                if await self.exit_code() is not None:
                    return
                await asyncio.sleep(0.05)


def shared() -> ForkServer:
    """This process's fork server, started on first use (blocking; call from a thread)."""
    global _server
    with _lock:
        if _server is None or _server.proc.poll() is not None:
            _server = ForkServer()
        return _server


# -- the helper process --------------------------------------------------------------------


def _write_marker(value: str) -> bool:
    """Overwrite the placeholder in this process's original environment block, which is what
    `/proc/<pid>/environ` shows (Linux >= 3.5 exposes its address in /proc/self/stat)."""
    import ctypes

    needle = f"{MARKER}={PLACEHOLDER}".encode()
    with open("/proc/self/environ", "rb") as f:
        block = f.read()
    offset = block.find(b"\0" + needle + b"\0")
    offset = offset + 1 if offset >= 0 else (0 if block.startswith(needle + b"\0") else -1)
    if offset < 0:
        return False
    with open("/proc/self/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    env_start = int(fields[47])
    ctypes.memmove(env_start + offset, f"{MARKER}={value}".encode(), len(needle))
    return True


def _child(request: dict[str, Any]) -> None:
    import runpy
    import traceback

    code = 1
    try:
        os.setsid()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.close(null)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 (the child's own stdio)
        sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
        _write_marker(request["marker"])
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = list(request["argv"])
        if request["kind"] == "module":
            sys.argv = [request["target"], *sys.argv[2:]]
            runpy.run_module(request["target"], run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, str(Path(request["target"]).resolve().parent))
            runpy.run_path(request["target"], run_name="__main__")
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if not isinstance(e.code, int) and e.code is not None:
            print(e.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - the env's crash goes to its log, like a process's
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def main() -> None:
    import importlib

    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001, S112 - an optional accelerator that is not installed
            continue
    statuses: dict[int, int] = {}

    def reap(*_: Any) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            statuses[pid] = os.waitstatus_to_exitcode(status)

    signal.signal(signal.SIGCHLD, reap)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    print("ready", flush=True)
    for line in sys.stdin:
        try:
            request = json.loads(line)
            if request["op"] == "spawn":
                sys.stdout.flush()
                pid = os.fork()
                if pid == 0:
                    _child(request)
                answer: dict[str, Any] = {"pid": pid}
            elif request["op"] == "status":
                reap()
                answer = {"exit": statuses.get(int(request["pid"]))}
            else:
                answer = {"error": f"unknown op {request['op']!r}"}
        except Exception as e:  # noqa: BLE001 - reported to the runner
            answer = {"error": f"{type(e).__name__}: {e}"}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
