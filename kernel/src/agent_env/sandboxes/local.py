"""The built-in `local` sandbox provider: a work folder plus host processes, no isolation.

Layout under `<home>/sandboxes/`: `<id>/` is the work folder (the sandbox's `/app`) and
`<id>.meta/` holds `state.json` (labels and every tracked process) and server logs.

Path mapping: a sandbox path `/app[/...]` or a relative path maps into the work folder; any
other absolute path is refused (the host's own `/tmp` or `/etc` are not the sandbox's). For
commands, the working directory is the folder, every standalone `/app` in the command string,
its arguments and env values is rewritten to the folder path, and `APP_DIR` holds it. Processes
inherit the host environment plus the spec's `env_vars`, and carry `AGENTENV_SANDBOX=<id>` so
teardown also finds processes that left their process group.

Limits it cannot enforce (image, cpus, memory, pids, network "none") are refused with
`SandboxError` rather than ignored.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import anyio

from agent_env.errors import SandboxError
from agent_env.net import free_port
from agent_env.sandbox import ExecResult, Process, Sandbox, SandboxProvider, SandboxSpec
from agent_env.sandboxes import procs
from agent_env.sandboxes.local_exec import (
    answer_test,
    collect,
    exec_limiter,
    host_environ,
)
from agent_env.suggest import did_you_mean

MARKER_ENV = "AGENTENV_SANDBOX"
#: One /proc scan for the marker serves every teardown that asks at about the same time.
_MARKED = procs.EnvScanner(MARKER_ENV)
TIMEOUT_EXIT_CODE = 124
MAX_OUTPUT = 16 * 1024 * 1024  # bytes kept per stream of one exec
_APP = re.compile(r"(?<![\w./~$}-])/app(?![\w.-])")
_NETWORKS = (None, "bridge", "host", "run")
_SETTINGS = ("root",)
_STOP_GRACE = 1.0
_DRAIN_AFTER_KILL = 2.0


class LocalProcess(Process):
    """A host process `LocalSandbox.start_process` started; output in its log file."""

    def __init__(self, popen: subprocess.Popen, log: Path, url: str, started: int | None):
        self.popen = popen
        self.pid = popen.pid
        self.log = log
        self.url = url
        self._started = started

    async def exit_code(self) -> int | None:
        return self.popen.poll()

    async def logs(self, *, tail: int = 200) -> str:
        return await anyio.to_thread.run_sync(tail_file, self.log, tail)

    async def stop(self) -> None:
        def go() -> None:
            procs.kill_group(self.pid, self._started, grace=_STOP_GRACE)
            try:
                self.popen.wait(timeout=_DRAIN_AFTER_KILL)
            except subprocess.TimeoutExpired:
                pass

        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(go)


def tail_file(path: Path, tail: int) -> str:
    """The last `tail` lines of a log file ("" when it is gone)."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-tail:])
    except OSError:
        return ""


class LocalProvider(SandboxProvider):
    """Sandboxes that are a folder plus host processes (what `hello` uses; no Docker)."""

    type = "local"

    def __init__(self, settings: Mapping[str, Any] | None = None, *, home: Path | None = None):
        super().__init__(settings, home=home)
        unknown = sorted(set(self.settings) - set(_SETTINGS))
        if unknown:
            raise SandboxError(
                f"[sandbox.local] has unknown setting {unknown[0]!r}"
                f"{did_you_mean(unknown[0], _SETTINGS)}; known: {', '.join(_SETTINGS)}"
            )
        from agent_env.paths import home as default_home

        base = home or default_home()
        self.lease_dir = base / "leases"
        root = self.settings.get("root")
        self.root = Path(root).expanduser() if root else base / "sandboxes"

    async def create(self, spec: SandboxSpec) -> LocalSandbox:
        _refuse_unenforceable(spec)
        sandbox_id = f"local-{uuid.uuid4().hex[:12]}"
        folder = self.root / sandbox_id
        meta = self.root / f"{sandbox_id}.meta"
        # The meta folder (with the owner labels) appears atomically before the work folder,
        # so a SIGKILL at any point leaves either nothing visible or something `reap` finds.
        staging = self.root / f".{sandbox_id}.meta.tmp"
        staging.mkdir(parents=True)
        sandbox = LocalSandbox(
            sandbox_id,
            folder,
            staging,
            labels=dict(spec.labels),
            env_vars=dict(spec.env_vars),
        )
        sandbox._save()
        os.rename(staging, meta)
        sandbox.meta = meta
        folder.mkdir()
        return sandbox

    async def connect(self, info: Mapping[str, Any]) -> LocalSandbox:
        sandbox_id = info.get("id")
        if not isinstance(sandbox_id, str) or not sandbox_id.startswith("local-"):
            raise SandboxError(f"not a local sandbox description: {dict(info)!r}")
        meta = self.root / f"{sandbox_id}.meta"
        try:
            state = json.loads((meta / "state.json").read_text())
        except FileNotFoundError:
            raise SandboxError(f"local sandbox {sandbox_id} is gone (no {meta})") from None
        sandbox = LocalSandbox(
            sandbox_id,
            Path(state["folder"]),
            meta,
            labels=state.get("labels", {}),
            env_vars=state.get("env_vars", {}),
        )
        sandbox._tracked = {int(p["pid"]): p for p in state.get("processes", [])}
        return sandbox

    async def reap(self, *, adopt: Sequence[str] = ()) -> list[str]:
        """Tear down every local sandbox under the root whose owner (labels) is dead."""
        reaped = []
        try:
            names = os.listdir(self.root)
        except FileNotFoundError:
            return []
        for name in sorted(names):
            if not name.endswith(".meta"):
                continue
            sandbox_id = name[: -len(".meta")]
            if sandbox_id in adopt:
                continue
            try:
                sandbox = await self.connect({"id": sandbox_id})
            except SandboxError:
                continue
            if self._leased_alive(sandbox_id) or owner_alive(sandbox.labels):
                continue
            await sandbox.teardown()
            reaped.append(sandbox_id)
        return reaped

    def _leased_alive(self, sandbox_id: str) -> bool:
        """A lease (written by SandboxManager, re-owned on adopt) overrides the labels."""
        from agent_env.sandboxes import leases

        lease = leases.read(self.lease_dir / f"{sandbox_id}{leases.SUFFIX}")
        return lease is not None and leases.owner_alive(lease)


def owner_alive(labels: Mapping[str, str]) -> bool:
    """Whether the process named by `owner_pid`/`owner_start_time`/`owner_host` still runs.

    A sandbox without an owner, or owned on another host, counts as alive (not ours to judge).
    """
    owner = procs.ProcessIdentity.from_labels(labels)
    return owner is None or owner.alive()


def _refuse_unenforceable(spec: SandboxSpec) -> None:
    if spec.image:
        raise SandboxError(
            f"the local sandbox runs host processes and cannot run image {spec.image!r}; "
            "use a provider that runs images (e.g. --sandbox docker) or drop `image`"
        )
    for field, value in (
        ("cpus", spec.cpus),
        ("memory", spec.memory),
        ("pids", spec.pids),
    ):
        if value is not None:
            raise SandboxError(
                f"the local sandbox cannot enforce a {field} limit ({value!r}); "
                "use a provider that can (e.g. docker) or drop the limit"
            )
    if spec.network not in _NETWORKS:
        raise SandboxError(
            f"the local sandbox cannot enforce network {spec.network!r} (its processes share "
            f"the host network); supported: bridge, host, run"
        )
    if spec.settings:
        raise SandboxError(
            f"the local sandbox does not understand settings {sorted(spec.settings)}"
        )


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
    ):
        self.id = sandbox_id
        self.folder = folder
        self.meta = meta
        self.labels = dict(labels)
        self.env_vars = dict(env_vars)
        self._tracked: dict[int, dict[str, Any]] = {}
        self._servers: dict[int, subprocess.Popen] = {}

    # -- paths ---------------------------------------------------------------------------

    def host_path(self, path: str) -> Path:
        """The host path of sandbox path `path`; SandboxError outside `/app`."""
        p = PurePosixPath(path)
        if p.is_absolute():
            parts = p.parts
            if len(parts) < 2 or parts[1] != "app":
                raise SandboxError(
                    f"local sandbox {self.id}: {path!r} is outside /app, the only sandbox "
                    "path the local provider maps (into its work folder)"
                )
            rel = PurePosixPath(*parts[2:]) if len(parts) > 2 else PurePosixPath()
        else:
            rel = p
        if ".." in rel.parts:
            resolved = os.path.normpath(self.folder / rel)
            if resolved != str(self.folder) and not resolved.startswith(str(self.folder) + "/"):
                raise SandboxError(f"local sandbox {self.id}: {path!r} escapes /app")
        return self.folder.joinpath(*rel.parts) if rel.parts else self.folder

    def rewrite(self, text: str) -> str:
        """`text` with every standalone `/app` replaced by the work folder's host path."""
        folder = str(self.folder)
        return _APP.sub(lambda _m: folder, text)

    def _env(self, env: Mapping[str, str] | None) -> dict[str, str]:
        merged = host_environ()
        for source in (self.env_vars, env or {}):
            merged.update({k: self.rewrite(str(v)) for k, v in source.items()})
        merged["APP_DIR"] = str(self.folder)
        merged[MARKER_ENV] = self.id
        return merged

    def _argv(self, command: str | Sequence[str]) -> list[str]:
        if isinstance(command, str):
            return ["/bin/sh", "-c", self.rewrite(command)]
        return [self.rewrite(str(a)) for a in command]

    def _cwd(self, cwd: str | None) -> Path:
        path = self.host_path(cwd) if cwd else self.folder
        self._require_live()
        return path

    def _require_live(self) -> None:
        if not self.folder.is_dir():
            raise SandboxError(f"local sandbox {self.id} is torn down")

    # -- process tracking ----------------------------------------------------------------

    def _save(self) -> None:
        state = {
            "id": self.id,
            "folder": str(self.folder),
            "labels": self.labels,
            "env_vars": self.env_vars,
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
            self._save()

    def _untrack(self, pid: int) -> None:
        entry = self._tracked.pop(pid, None)
        if entry is not None and entry["kind"] != "exec":
            self._save()

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
        argv = self._argv(command)
        cwd_path = self._cwd(cwd)
        answered = answer_test(argv, cwd_path)
        if answered is not None:
            return ExecResult(exit_code=answered, stdout="", stderr="", timed_out=False)
        env_map = self._env(env)
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
            return collect(popen, timeout, started["started"], _DRAIN_AFTER_KILL, MAX_OUTPUT)

        try:
            code, out, err, timed_out = await anyio.to_thread.run_sync(
                run, abandon_on_cancel=True, limiter=exec_limiter()
            )
        finally:
            pid = started.get("pid")
            if pid is not None:
                procs.kill_group(pid, started.get("started"))
                self._untrack(pid)
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

        await anyio.to_thread.run_sync(write)

    async def read_file(self, path: str) -> bytes:
        target = self.host_path(path)
        return await anyio.to_thread.run_sync(target.read_bytes)

    async def copy_in(self, host_path: Path, path: str) -> None:
        self._require_live()
        await anyio.to_thread.run_sync(_copy, Path(host_path), self.host_path(path))

    async def copy_out(self, path: str, host_path: Path) -> None:
        await anyio.to_thread.run_sync(_copy, self.host_path(path), Path(host_path))

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
        log_path = self.new_log_path()
        with open(log_path, "wb") as log:
            try:
                popen = subprocess.Popen(
                    self._argv(command),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=self._cwd(cwd),
                    env=self._env(extra),
                    start_new_session=True,
                )
            except FileNotFoundError as e:
                raise SandboxError(f"local sandbox {self.id}: cannot start {command!r}: {e}") from e
        self._servers[popen.pid] = popen
        self._track(popen.pid, "server", command)
        self._tracked[popen.pid]["log"] = str(log_path)
        self._save()
        return LocalProcess(popen, log_path, url, self._tracked[popen.pid]["started"])

    def url(self, port: int) -> str:
        """Host processes share the host's ports: `port` on loopback."""
        return f"http://127.0.0.1:{port}"

    # -- for fast paths that start servers by other means (the core-steps fork server) -----

    def new_log_path(self) -> Path:
        """A fresh log file path in the sandbox's meta folder; `process_logs` includes it."""
        return self.meta / f"proc-{uuid.uuid4().hex[:8]}.log"

    def process_environment(self, env: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment `start_process` gives a server (host env, spec env vars, `env`,
        `APP_DIR`, and the marker that lets teardown find it)."""
        return self._env(env)

    def adopt_server(self, pid: int, argv: Sequence[str], log: Path) -> None:
        """Track a server a fast path started (its own process group), so teardown kills it by
        pid like `start_process`'s servers instead of relying on the marker scan alone."""
        self._track(pid, "server", argv)
        self._tracked[pid]["log"] = str(log)
        self._save()

    async def process_logs(self, *, tail: int = 200) -> str:
        def read() -> str:
            chunks = []
            for log in sorted(self.meta.glob("proc-*.log"), key=lambda p: p.stat().st_mtime):
                lines = log.read_text(errors="replace").splitlines()[-tail:]
                if lines:
                    chunks.append("\n".join(lines))
            return "\n".join(chunks)[-64 * 1024 :]

        try:
            return await anyio.to_thread.run_sync(read)
        except OSError:
            return ""

    def describe(self) -> dict[str, Any]:
        return {
            "provider": "local",
            "id": self.id,
            "folder": str(self.folder),
            "pids": sorted(self._tracked),
        }

    async def teardown(self) -> None:
        """Kill every tracked process group (servers get SIGTERM and a short grace), then any
        process still carrying this sandbox's marker, then remove the folder and meta."""
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._teardown_sync)

    def _teardown_sync(self) -> None:
        for pid, entry in list(self._tracked.items()):
            grace = _STOP_GRACE if entry.get("kind") == "server" else 0.0
            procs.kill_group(pid, entry.get("started"), grace=grace)
        marked = _MARKED.pids(self.id)
        procs.kill_pids(marked)
        ours = [pid for pid, e in self._tracked.items() if procs.alive(pid, e.get("started"))]
        procs.wait_gone([*ours, *marked], _DRAIN_AFTER_KILL)
        for popen in self._servers.values():
            try:
                popen.wait(timeout=_DRAIN_AFTER_KILL)
            except subprocess.TimeoutExpired:
                pass
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
