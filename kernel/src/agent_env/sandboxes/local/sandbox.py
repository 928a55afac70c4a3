"""`LocalSandbox`: a work folder and the host processes started in it (see the package
docstring for the path mapping and the layout of its meta folder)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agent_env.aio import to_thread
from agent_env.errors import SandboxError
from agent_env.net import free_port
from agent_env.sandbox import ExecResult, Sandbox
from agent_env.sandboxes import procs, watchdog
from agent_env.sandboxes.local import isolation, logs, paths
from agent_env.sandboxes.local.exec import answer_test, collect, exec_pool, host_environ
from agent_env.sandboxes.local.process import (
    DRAIN_AFTER_KILL,
    MARKER_ENV,
    LocalProcess,
    kill_all,
    marked_pids,
)

TIMEOUT_EXIT_CODE = 124
MAX_OUTPUT = 16 * 1024 * 1024  # bytes kept per stream of one exec


class LocalSandbox(Sandbox):
    """A work folder and the host processes started in it (see the module docstring)."""

    provider = "local"

    def __init__(
        self,
        sandbox_id: str,
        folder: Path,
        meta: Path,
        *,
        labels: Mapping[str, str],
        env_vars: Mapping[str, str],
        bwrap: str | None = None,
        hidden: Sequence[Path] = (),
        read_only: Sequence[str] = (),
        new: bool = False,
    ):
        self.id = sandbox_id
        #: The bubblewrap executable every process starts under; None runs them unwrapped.
        self.bwrap = bwrap
        #: Host folders no process of this sandbox may see (the agent-env home, the root).
        self.hidden = tuple(hidden)
        #: Host folders every process sees read-only besides the system (the spec's
        #: `settings["read_only"]`: e.g. where a CLI agent is installed).
        self.read_only = tuple(read_only)
        self.folder = folder
        self.meta = meta
        self.labels = dict(labels)
        self.env_vars = dict(env_vars)
        self._tracked: dict[int, dict[str, Any]] = {}
        self._servers: dict[int, subprocess.Popen] = {}
        #: Set when a command died of a SIGKILL this sandbox did not send (`vanished`).
        self._killed_from_outside: str | None = None
        self._torn_down = False
        #: Every process carrying this sandbox's marker was started here under bwrap, each
        #: command the main process of a PID namespace of its own (`new`: created by this
        #: object): killing the tracked groups ends them all, so teardown skips the /proc scan
        #: (a few milliseconds per hundred host processes). Anything else (a sandbox taken
        #: over from `state.json`, a process a fast path started) scans as before.
        self._contained = new and bwrap is not None

    # -- paths (`paths`) -------------------------------------------------------------------

    def host_path(self, path: str) -> Path:
        """The host path of sandbox path `path`; SandboxError outside `/app`."""
        return paths.host_path(self.folder, self.id, path)

    def rewrite(self, text: str) -> str:
        """`text` with every standalone `/app` replaced by the work folder's host path."""
        return paths.rewrite(self.folder, text)

    def _env(self, env: Mapping[str, str] | None, *, bound: bool = False) -> dict[str, str]:
        """The environment of a process about to start here (every start asks for it first),
        so the watchdog starts here too: a process can outlive a crashed controller. Not for
        a `bound` one (`_bound_to_us`): it ends with this process, however this one ends."""
        if not bound:
            watchdog.ensure()
        given: dict[str, str] = {"HOME": str(self.folder)} if self.isolated else {}
        for source in (self.env_vars, env or {}):
            given.update({k: self.rewrite(str(v)) for k, v in source.items()})
        given["APP_DIR"] = str(self.folder)
        given[MARKER_ENV] = self.id
        if self.isolated:
            return isolation.environment(given, host_environ())
        return {**host_environ(), **given}

    @property
    def isolated(self) -> bool:
        """Whether its processes run under bubblewrap (`isolation`)."""
        return self.bwrap is not None

    def _argv(self, command: str | Sequence[str]) -> list[str]:
        if isinstance(command, str):
            return ["/bin/sh", "-c", self.rewrite(command)]
        return [self.rewrite(str(a)) for a in command]

    def _bound_to_us(self) -> bool:
        """Whether a command `exec` starts now dies with this process: under bwrap with
        `--die-with-parent` (a SIGKILL of the controller kills the command's PID namespace,
        so nothing of it outlives us and it needs no watchdog). Not with the watchdog
        switched off: then a killed run's commands wait for the next command, as before."""
        return self.isolated and watchdog.enabled()

    def _launch(
        self,
        command: str | Sequence[str],
        cwd: Path,
        env: Mapping[str, str],
        *,
        bound: bool = False,
    ) -> tuple[list[str], dict[str, str]]:
        """The argv and environment of a process to start: under bwrap when isolated (the
        environment then travels inside the argv, bwrap itself gets none); `bound`: it dies
        with the thread that starts it (`_bound_to_us`)."""
        argv = self._argv(command)
        if self.bwrap is None:
            return argv, dict(env)
        program = argv[0] if argv else ""
        if "/" not in program and shutil.which(program, path=env.get("PATH", os.defpath)) is None:
            # bwrap would exit 1; answer as a shell does (exec: 127, a server: SandboxError)
            raise FileNotFoundError(f"No such file or directory: {program!r}")
        wrapped = isolation.wrap(
            self.bwrap,
            argv,
            folder=self.folder,
            cwd=cwd,
            env=env,
            hidden=self.hidden,
            read_only=self.read_only,
            die_with_parent=bound,
        )
        return wrapped, {MARKER_ENV: self.id}

    def _cwd(self, cwd: str | None) -> Path:
        path = self.host_path(cwd) if cwd else self.folder
        self._require_live()
        return path

    def _require_live(self) -> None:
        if not self.folder.is_dir():
            raise SandboxError(f"local sandbox {self.id} is torn down")

    # -- process tracking ----------------------------------------------------------------

    def restore_tracked(self, processes: Sequence[Mapping[str, Any]]) -> None:
        """Take over the processes a `state.json` lists (on reconnect)."""
        self._contained = False
        self._tracked = {int(p["pid"]): dict(p) for p in processes}

    def add_read_only(self, paths: Sequence[str]) -> None:
        """Let this sandbox's processes started from now on see `paths` read-only (a CLI agent
        installed into a sandbox another step created)."""
        added = [p for p in paths if p not in self.read_only]
        if not all(isinstance(p, str) and p.startswith("/") for p in added):
            raise SandboxError(f"read_only: absolute host paths, not {list(paths)!r}")
        self.read_only = (*self.read_only, *added)
        self.save()

    def save(self) -> None:
        """Write `state.json` (labels and tracked servers) atomically into the meta folder."""
        state = {
            "id": self.id,
            "folder": str(self.folder),
            "labels": self.labels,
            "env_vars": self.env_vars,
            "read_only": list(self.read_only),
            "processes": [p for p in self._tracked.values() if p["kind"] != "exec"],
        }
        tmp = self.meta / "state.json.tmp"
        try:
            tmp.write_text(json.dumps(state))
            os.replace(tmp, self.meta / "state.json")
        except FileNotFoundError:
            pass  # torn down concurrently

    def _track(self, pid: int, kind: str, command: Any) -> None:
        """Servers are written to `state.json`; exec processes are only held in memory: a
        teardown after a crash finds them by the `AGENTENV_SANDBOX` marker instead, which saves
        two file writes per command."""
        self._tracked[pid] = {
            "pid": pid,
            "started": procs.start_time(pid),
            "kind": kind,
            "command": command if isinstance(command, str) else list(command),
        }
        if kind != "exec":
            self.save()

    def _untrack(self, pid: int) -> None:
        entry = self._tracked.pop(pid, None)
        if entry is not None and entry["kind"] != "exec":
            self.save()

    # -- Sandbox API ---------------------------------------------------------------------

    async def exec(
        self,
        command: str | Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
    ) -> ExecResult:
        """Run to completion in its own process group; on timeout the whole group is killed
        and `exit_code` is 124 with `timed_out` set. Background processes the command left
        in its group are killed when it exits (use `start_process` for servers)."""
        cwd_path = self._cwd(cwd)
        answered = answer_test(self._argv(command), cwd_path)
        if answered is not None:
            return ExecResult(exit_code=answered, stdout="", stderr="", timed_out=False)
        # the worker thread that starts the command waits for it to end (`collect`): a
        # command bound to that thread never outlives it
        bound = self._bound_to_us()
        try:
            argv, env_map = self._launch(
                command, cwd_path, self._env(env, bound=bound), bound=bound
            )
        except FileNotFoundError as e:
            return ExecResult(exit_code=127, stdout="", stderr=f"{e}\n", timed_out=False)
        started: dict[str, int | None] = {}

        def run() -> tuple[int | None, bytes, bytes, bool]:
            try:
                popen = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    cwd=cwd_path,
                    env=env_map,
                    start_new_session=True,
                )
            except FileNotFoundError as e:
                return 127, b"", f"{e}\n".encode(), False
            self._track(popen.pid, "exec", command)
            started["pid"] = popen.pid
            started["started"] = self._tracked[popen.pid]["started"]
            return collect(popen, timeout, started["started"], DRAIN_AFTER_KILL, MAX_OUTPUT)

        try:
            code, out, err, timed_out = await to_thread(
                run, executor=exec_pool(), abandon_on_cancel=True
            )
        finally:
            pid = started.get("pid")
            if pid is not None:
                procs.kill_group(pid, started.get("started"))
                self._untrack(pid)
        if code == -signal.SIGKILL and not timed_out:
            shown = command if isinstance(command, str) else shlex.join(map(str, command))
            self._killed_from_outside = (
                f"its command {shown[:80]!r} was killed (SIGKILL) from outside: the out-of-memory "
                "killer, or someone reaping the sandbox"
            )
        code = TIMEOUT_EXIT_CODE if timed_out else code
        return ExecResult(
            exit_code=code if code is not None else -1,
            stdout=out.decode(errors="replace"),
            stderr=err.decode(errors="replace"),
            timed_out=timed_out,
        )

    async def write_file(self, path: str, data: bytes, *, mode: int = 0o644) -> None:
        target = self.host_path(path)
        self._require_live()

        def write() -> None:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            os.chmod(target, mode)

        await to_thread(write)

    async def read_file(self, path: str) -> bytes:
        target = self.host_path(path)
        return await to_thread(target.read_bytes)

    async def copy_in(self, host_path: Path, path: str) -> None:
        self._require_live()
        await to_thread(_copy, Path(host_path), self.host_path(path))

    async def copy_out(self, path: str, host_path: Path) -> None:
        await to_thread(_copy, self.host_path(path), Path(host_path))

    async def start_process(
        self,
        command: str | Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        port: int | None = None,
    ) -> LocalProcess:
        """Start a server in its own process group; output goes to `<id>.meta/proc-<pid>.log`.

        When `port` is given (any value, since host processes share the host's ports) a free
        loopback port is picked, passed as `MCP_PORT` and `PORT` (with `MCP_HOST=127.0.0.1`
        unless `env` sets it), and its URL is the handle's `url`; otherwise `url` is "".
        """
        self._require_live()
        extra = dict(env or {})
        url = ""
        if port is not None:
            chosen = free_port()
            extra.update(MCP_PORT=str(chosen), PORT=str(chosen))
            extra.setdefault("MCP_HOST", "127.0.0.1")  # a host process: stay off the network
            url = f"http://127.0.0.1:{chosen}"
        cwd_path = self._cwd(cwd)
        try:
            argv, env_map = self._launch(command, cwd_path, self._env(extra))
        except FileNotFoundError as e:
            raise SandboxError(f"local sandbox {self.id}: cannot start {command!r}: {e}") from e
        log_path = self.new_log_path()
        output = os.open(self.redacted_output(log_path), os.O_WRONLY)
        try:
            popen = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                cwd=cwd_path,
                env=env_map,
                start_new_session=True,
            )
        except FileNotFoundError as e:
            raise SandboxError(f"local sandbox {self.id}: cannot start {command!r}: {e}") from e
        finally:
            os.close(output)
        self._servers[popen.pid] = popen
        self._track(popen.pid, "server", command)
        self._tracked[popen.pid]["log"] = str(log_path)
        self.save()
        return LocalProcess(popen, log_path, url, self._tracked[popen.pid]["started"])

    def url(self, port: int) -> str:
        """Host processes share the host's ports: `port` on loopback."""
        return f"http://127.0.0.1:{port}"

    # -- for fast paths that start servers by other means (the core-steps fork server) -----

    def new_log_path(self) -> Path:
        """A fresh log file path in the sandbox's meta folder; `process_logs` includes it."""
        return self.meta / f"proc-{uuid.uuid4().hex[:8]}.log"

    def redacted_output(self, log: Path) -> Path:
        """Where a server's output must go so that it reaches `log` redacted while it is
        written (a FIFO this process drains; see `agent_env.sandboxes.local.logs`)."""
        return logs.open_redacted(self.id, log)

    def process_environment(self, env: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment `start_process` gives a server (host env, spec env vars, `env`,
        `APP_DIR`, and the marker that lets teardown find it)."""
        self._contained = False  # the caller starts the process, maybe not under bwrap
        return self._env(env)

    def adopt_server(self, pid: int, argv: Sequence[str], log: Path) -> None:
        """Track a server a fast path started (its own process group), so teardown kills it by
        pid like `start_process`'s servers instead of relying on the marker scan alone."""
        self._contained = False
        self._track(pid, "server", argv)
        self._tracked[pid]["log"] = str(log)
        self.save()

    async def process_logs(self, *, tail: int = 200) -> str:
        def read() -> str:
            chunks = []
            for log in sorted(self.meta.glob("proc-*.log"), key=lambda p: p.stat().st_mtime):
                lines = log.read_text(errors="replace").splitlines()[-tail:]
                if lines:
                    chunks.append("\n".join(lines))
            return "\n".join(chunks)[-64 * 1024 :]

        try:
            return await to_thread(read)
        except OSError:
            return ""

    def describe(self) -> dict[str, Any]:
        return {
            "provider": "local",
            "id": self.id,
            "folder": str(self.folder),
            "pids": sorted(self._tracked),
            "isolated": self.isolated,
        }

    async def vanished(self) -> str | None:
        if self._torn_down:
            return None
        if not self.folder.is_dir():
            return f"its folder {self.folder} is gone"
        return self._killed_from_outside

    async def fence(self) -> list[str]:
        """End what a previous owner's commands still run here: every process carrying this
        sandbox's marker that is not a tracked server, in a server's group or below one."""
        ended = await to_thread(self._fence_sync)  # never abandoned: it waits for the thread
        return ended

    def _fence_sync(self) -> list[str]:
        servers = {
            pid
            for pid, entry in self._tracked.items()
            if entry.get("kind") != "exec" and procs.alive(pid, entry.get("started"))
        }
        stale = [pid for pid in marked_pids(self.id) if not procs.descends_from(pid, servers)]
        ended = [f"{pid} {procs.command_line(pid)}".strip() for pid in stale]
        procs.stop_pids(stale)  # none goes on (`a; b`) when the other is killed first
        procs.kill_pids(stale)
        procs.wait_gone(stale, DRAIN_AFTER_KILL)
        for entry in self._tracked.values():  # the servers' output is drained by us now
            if entry.get("pid") in servers and entry.get("log"):
                log = Path(entry["log"])
                logs.drain(self.id, logs.pipe_for(log), log)
        return ended

    async def teardown(self) -> None:
        """Kill every tracked process group (servers get SIGTERM and a short grace), then any
        process still carrying this sandbox's marker, then remove the folder and meta."""
        await to_thread(self._teardown_sync)  # never abandoned: it waits for the thread

    def _teardown_sync(self) -> None:
        self._torn_down = True
        kill_all(self.id, self._tracked, self._servers.values(), scan=not self._contained)
        logs.close(self.id)
        self._servers.clear()
        self._tracked.clear()
        shutil.rmtree(self.folder, ignore_errors=True)
        shutil.rmtree(self.meta, ignore_errors=True)


def _copy(source: Path, target: Path) -> None:
    if source.is_dir():
        shutil.copytree(source, target, dirs_exist_ok=True, symlinks=True)
    elif source.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    else:
        raise FileNotFoundError(str(source))
