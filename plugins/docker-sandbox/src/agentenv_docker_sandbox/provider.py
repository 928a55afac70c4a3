"""The `docker` sandbox provider: one container per sandbox, labelled with its owner, reached
at its own address when this machine hosts the daemon's bridge (else its ports published on
127.0.0.1), limits enforced by the daemon's cgroups or refused, and a teardown that removes the
container, its anonymous volumes and an emptied per-run network."""

from __future__ import annotations

import asyncio
import re
import shlex
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agent_env.aio import shielded, to_thread
from agent_env.errors import SandboxError
from agent_env.sandbox import ExecResult, ImageInfo, Process, Sandbox, SandboxProvider, SandboxSpec
from agent_env.suggest import did_you_mean
from agentenv_docker_sandbox import archive, labels
from agentenv_docker_sandbox.client import (
    enforceable,
    get_client,
    is_podman,
    remote_host,
    run,
    swap_limit,
)
from agentenv_docker_sandbox.resources import (
    ensure_network,
    reap_orphans,
    remove_container,
    remove_network_if_empty,
)

DEFAULT_IMAGE = "python:3.11-slim"
NETWORK_MODES = ("none", "bridge", "run")
_MEMORY = re.compile(r"^\d+(\.\d+)?[bkmg]?$", re.IGNORECASE)
LOG_DIR = "/tmp/.agentenv"

#: Exit codes of a container's program killed from outside (SIGKILL: `docker kill`, `rm -f`,
#: the OOM killer; SIGTERM: `docker stop`).
KILLED_EXIT_CODES = (137, 143)


def _errors():
    import docker.errors

    return docker.errors


#: Marks the processes `exec` starts (and theirs), so `fence` can end them.
EXEC_MARKER = "AGENTENV_EXEC"
#: Stops every marked process but itself (so none goes on when its child dies), then kills
#: them all; prints `pid command` of each (POSIX sh, grep, tr, cut). Two passes: the second
#: catches a child started while the first ran.
_FENCE_PASS = (
    'for d in /proc/[0-9]*; do p=${d#/proc/}; [ "$p" = "$$" ] && continue; '
    f"if grep -qa '{EXEC_MARKER}=1' \"$d/environ\" 2>/dev/null; then "
    'kill -STOP "$p" 2>/dev/null; pids="$pids $p"; '
    "echo \"$p $(tr '\\000' ' ' < $d/cmdline 2>/dev/null | cut -c1-60)\"; fi; done; "
)
_FENCE = f"pids=''; {_FENCE_PASS}{_FENCE_PASS}[ -n \"$pids\" ] && kill -9 $pids 2>/dev/null; true"


def _sh(command: str | Sequence[str]) -> list[str]:
    """argv for `exec`: a string runs under `sh -c`; a list runs as is, through `sh` so a
    missing program is exit 127 with a readable message."""
    if isinstance(command, str):
        return ["sh", "-c", command]
    return ["sh", "-c", 'exec "$@"', "sh", *[str(c) for c in command]]


def _network_name(run_id: str, sandbox_id: str) -> str:
    if run_id:
        return "agentenv-run-" + re.sub(r"[^a-zA-Z0-9_.-]", "-", run_id)[:100]
    return f"{sandbox_id}-net"


class DockerProcess(Process):
    """A process `start_process` runs through `docker exec`; output in a log file in the
    container, its pid in `<log>.pid` (for `stop`)."""

    def __init__(self, sandbox: DockerSandbox, exec_id: str, log: str, url: str):
        self.sandbox = sandbox
        self.exec_id = exec_id
        self.log = log
        self.url = url

    async def exit_code(self) -> int | None:
        api = self.sandbox.client.api
        try:
            info = await run(api.exec_inspect, self.exec_id)
        except _errors().APIError:
            return None
        if info.get("Running") or info.get("ExitCode") is None:
            return None
        return int(info["ExitCode"])

    async def logs(self, *, tail: int = 200) -> str:
        result = await self.sandbox.exec(
            f"tail -n {int(tail)} {shlex.quote(self.log)} 2>/dev/null", timeout=30
        )
        return result.stdout.rstrip("\n")

    async def stop(self) -> None:
        pid = shlex.quote(self.log + ".pid")
        try:
            await shielded(
                self.sandbox.exec(
                    f"p=$(cat {pid} 2>/dev/null) || exit 0; kill $p 2>/dev/null || exit 0; "
                    f"for i in 1 2 3 4 5 6 7 8 9 10; do kill -0 $p 2>/dev/null || exit 0; "
                    f"sleep 0.1; done; kill -9 $p 2>/dev/null; exit 0",
                    timeout=10,
                )
            )
        except SandboxError:
            pass  # the container is gone: so is the process


class ContainerProcess(Process):
    """The container's own command (an image's CMD): exit code and logs from the daemon."""

    def __init__(self, sandbox: DockerSandbox):
        self.sandbox = sandbox

    async def exit_code(self) -> int | None:
        api, cid = self.sandbox.client.api, self.sandbox.container_id
        try:
            info = await run(lambda: api.inspect_container(cid).get("State") or {})
        except _errors().APIError:
            return None
        if info.get("Status") in ("exited", "dead"):
            return int(info.get("ExitCode") or 0)
        return None

    async def logs(self, *, tail: int = 200) -> str:
        api, cid = self.sandbox.client.api, self.sandbox.container_id
        try:
            raw = await run(api.logs, cid, tail=int(tail))
        except _errors().APIError:
            return ""
        return raw.decode("utf-8", "replace").rstrip("\n")

    async def stop(self) -> None:
        api, cid = self.sandbox.client.api, self.sandbox.container_id
        try:
            await run(api.stop, cid, timeout=1)  # waits for the daemon even when cancelled
        except _errors().APIError:
            pass


class DockerSandbox(Sandbox):
    """A running container; every call goes through the daemon in a worker thread."""

    provider = "docker"

    def __init__(
        self,
        client: Any,
        *,
        id: str,
        container_id: str,
        workdir: str,
        ports: dict[int, int],
        network: str | None,
        ip: str | None,
        settings: Mapping[str, Any],
    ):
        self.client = client
        self.id = id
        self.container_id = container_id
        self.workdir = workdir
        self.ports = dict(ports)
        self.network = network
        self.ip = ip
        self.settings = dict(settings)
        self._torn_down = False
        self._proc_logs: list[str] = []
        #: Set when a command died of SIGKILL without a timeout (`vanished`).
        self._killed: str | None = None

    # -- exec ----------------------------------------------------------------------------

    async def exec(self, command, *, env=None, cwd=None, timeout=None) -> ExecResult:
        argv = _sh(command)
        if timeout is not None:
            argv = ["timeout", "-s", "KILL", f"{max(float(timeout), 0.01):.3f}", *argv]
        api = self.client.api

        def go() -> tuple[int, bytes, bytes]:
            try:
                created = api.exec_create(
                    self.container_id,
                    argv,
                    environment={**dict(env or {}), EXEC_MARKER: "1"},
                    workdir=archive.sandbox_path(cwd, self.workdir) if cwd else self.workdir,
                )
                out, err = api.exec_start(created["Id"], demux=True)
                code = api.exec_inspect(created["Id"])["ExitCode"]
            except _errors().NotFound as e:
                raise SandboxError(f"sandbox {self.id} is gone: {e.explanation or e}") from e
            except _errors().APIError as e:
                raise SandboxError(f"exec in sandbox {self.id} failed: {e.explanation or e}") from e
            return code, out or b"", err or b""

        started = time.monotonic()
        if timeout is None:
            code, out, err = await run(go)
        else:
            # `timeout` inside kills the whole process group; this is the daemon's safety net.
            try:
                async with asyncio.timeout(float(timeout) + 30):
                    code, out, err = await to_thread(go, abandon_on_cancel=True)
            except TimeoutError:
                raise SandboxError(
                    f"exec in sandbox {self.id}: the Docker daemon did not answer within {timeout}s + 30s"
                ) from None
        timed_out = (
            timeout is not None
            and code == 137
            and time.monotonic() - started >= float(timeout) * 0.9
        )
        if code == 137 and not timed_out:  # SIGKILL from outside: see `vanished`
            self._killed = f"its command {shlex.join(argv)[:80]!r} was killed (SIGKILL)"
        return ExecResult(
            exit_code=124 if timed_out else (code if code is not None else -1),
            stdout=out.decode("utf-8", "replace"),
            stderr=err.decode("utf-8", "replace"),
            timed_out=timed_out,
        )

    async def fence(self) -> list[str]:
        """End every command `exec` started (marked `AGENTENV_EXEC=1`, with what it started)
        that still runs: a resume adopting this container after its controller died calls it
        before any step runs again. The servers `start_process` started are not marked."""
        api = self.client.api

        def go() -> list[str]:
            created = api.exec_create(self.container_id, ["sh", "-c", _FENCE])
            out = api.exec_start(created["Id"]) or b""
            return [line for line in out.decode("utf-8", "replace").splitlines() if line]

        try:
            return await run(go)
        except (_errors().APIError, SandboxError) as e:
            raise SandboxError(f"cannot fence sandbox {self.id}: {e}") from e

    # -- files ---------------------------------------------------------------------------

    async def _put(self, data: bytes) -> None:
        def go() -> None:
            try:
                ok = self.client.api.put_archive(self.container_id, "/", data)
            except _errors().APIError as e:
                raise SandboxError(
                    f"copy into sandbox {self.id} failed: {e.explanation or e}"
                ) from e
            if not ok:
                raise SandboxError(f"copy into sandbox {self.id} failed")

        await run(go)

    async def _get(self, path: str) -> bytes:
        def go() -> bytes:
            try:
                stream, _ = self.client.api.get_archive(self.container_id, path)
                return b"".join(stream)
            except _errors().NotFound as e:
                raise FileNotFoundError(f"{path} (in sandbox {self.id})") from e
            except _errors().APIError as e:
                raise SandboxError(
                    f"copy out of sandbox {self.id} failed: {e.explanation or e}"
                ) from e

        return await run(go)

    async def write_file(self, path: str, data: bytes, *, mode: int = 0o644) -> None:
        await self._put(archive.file_tar(archive.sandbox_path(path, self.workdir), data, mode))

    async def read_file(self, path: str) -> bytes:
        target = archive.sandbox_path(path, self.workdir)
        for _ in range(8):
            member, data = archive.single_file(await self._get(target), target)
            if data is not None:
                return data
            if member.isdir():
                raise IsADirectoryError(f"{target} (in sandbox {self.id}) is a folder")
            if not member.issym():
                raise SandboxError(f"{target} in sandbox {self.id} is not a regular file")
            target = archive.sandbox_path(member.linkname, target.rsplit("/", 1)[0] or "/")
        raise SandboxError(f"{path} in sandbox {self.id}: too many levels of symbolic links")

    async def copy_in(self, host_path: Path, path: str) -> None:
        tar = await run(archive.tree_tar, Path(host_path), archive.sandbox_path(path, self.workdir))
        await self._put(tar)

    async def copy_out(self, path: str, host_path: Path) -> None:
        data = await self._get(archive.sandbox_path(path, self.workdir))
        await run(archive.extract, data, Path(host_path))

    # -- servers -------------------------------------------------------------------------

    async def start_process(self, command, *, env=None, cwd=None, port=None) -> DockerProcess:
        env = dict(env or {})
        if port is not None:
            env.setdefault("PORT", str(port))
            env.setdefault("MCP_PORT", str(port))
        log = f"{LOG_DIR}/proc-{len(self._proc_logs) + 1}-{uuid.uuid4().hex[:6]}.log"
        argv = [
            "sh",
            "-c",
            f'mkdir -p {LOG_DIR} && echo $$ >{log}.pid && exec "$@" >>{log} 2>&1',
            "sh",
            *_sh(command),
        ]
        url = self.url(port) if port is not None else ""

        def go() -> str:
            try:
                created = self.client.api.exec_create(
                    self.container_id,
                    argv,
                    environment=env or None,
                    workdir=archive.sandbox_path(cwd, self.workdir) if cwd else self.workdir,
                )
                self.client.api.exec_start(created["Id"], detach=True)
            except _errors().APIError as e:
                raise SandboxError(
                    f"start_process in sandbox {self.id} failed: {e.explanation or e}"
                ) from e
            return created["Id"]

        exec_id = await run(go)
        self._proc_logs.append(log)
        return DockerProcess(self, exec_id, log, url)

    async def main_process(self) -> Process | None:
        """The container's own command: the image's CMD with `command="image"`, else the
        provider's idle command (which only exits with the container)."""
        return ContainerProcess(self)

    def url(self, port: int) -> str:
        """The URL of container port `port` from this machine: its published port when it was
        published (a port declared in `SandboxSpec.ports`, on 127.0.0.1 or on a remote
        daemon's host), otherwise the container's address on its network (local daemons only;
        declared ports are not published when this machine reaches that address:
        `DockerProvider.reaches_containers`)."""
        remote = remote_host(self.settings)
        if port in self.ports:
            return f"http://{remote or '127.0.0.1'}:{self.ports[port]}"
        if self.ip and not remote:
            return f"http://{self.ip}:{port}"
        where = f"the Docker host {remote}" if remote else "127.0.0.1"
        raise SandboxError(
            f"port {port} of sandbox {self.id} cannot be reached from this machine: declare it "
            f"in the sandbox spec's `ports` (published on {where})"
            + ("" if remote else ", or use a network other than 'none'")
        )

    async def process_logs(self, *, tail: int = 200) -> str:
        if not self._proc_logs:
            return ""
        files = " ".join(shlex.quote(p) for p in self._proc_logs)
        result = await self.exec(f"tail -q -n {int(tail)} {files} 2>/dev/null", timeout=30)
        return result.stdout

    # -- identity and teardown -----------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "id": self.id,
            "container_id": self.container_id,
            "workdir": self.workdir,
            "ports": {str(k): v for k, v in self.ports.items()},
            "network": self.network,
            "ip": self.ip,
        }

    async def vanished(self) -> str | None:
        """The container was removed, or stopped (killed, out of memory) under a live sandbox.
        A container whose own program exited with its own code (an env server that crashed)
        did not vanish: that failure is the program's, classed by the step that ran it, as on
        the local provider (docs/failures.md)."""
        if self._torn_down:
            return None
        api = self.client.api

        def state() -> dict[str, Any] | None:
            try:
                return api.inspect_container(self.container_id).get("State") or {}
            except _errors().NotFound:
                return None

        # a command killed because the container is being removed ends before the daemon
        # shows the container stopped: give the daemon a moment then
        deadline = time.monotonic() + (3.0 if self._killed else 0.0)
        while True:
            try:
                found = await run(state)
            except Exception:  # noqa: BLE001 - the daemon cannot say: not evidence of anything
                return None
            if found is None:
                return f"its container {self.container_id[:12]} was removed"
            running = found.get("Running") and found.get("Status") != "removing"
            if not running and found.get("Status") not in ("created", "paused"):
                oom, code = bool(found.get("OOMKilled")), found.get("ExitCode")
                if not oom and code not in KILLED_EXIT_CODES:
                    return None  # its program exited by itself
                why = " (out of memory)" if oom else ""
                return (
                    f"its container {self.container_id[:12]} stopped{why} with exit code "
                    f"{found.get('ExitCode')}"
                )
            if time.monotonic() >= deadline:
                return None
            await asyncio.sleep(0.1)

    async def teardown(self) -> None:
        if self._torn_down:
            return
        await run(remove_container, self.client, self.container_id)
        if self.network:
            await run(remove_network_if_empty, self.client, self.network)
        self._torn_down = True


class DockerProvider(SandboxProvider):
    """Settings (`[sandbox.docker]`): `image` (default python:3.11-slim), `network` (default
    "bridge"), `base_url` (the daemon: a unix socket, or `tcp://host:2376` on another
    machine), `tls_verify`/`tls_ca_cert`/`tls_client_cert`/`tls_client_key` (TLS to a TCP
    daemon), `publish_host` (the address this machine reaches a remote daemon's published
    ports at; default the `base_url` host), `pull` (pull a missing image, default true),
    `init`, `direct` (default true: reach a local daemon's containers at their own address
    when this machine can, publishing no ports; false: publish declared ports on
    127.0.0.1)."""

    type = "docker"

    @property
    def client(self) -> Any:
        return get_client(self.settings)

    def _lease_path(self, sandbox_id: str) -> str:
        return str(Path(self.home) / "leases" / f"{sandbox_id}.json") if self.home else ""

    def _limits(self, spec: SandboxSpec) -> dict[str, Any]:
        wanted = {"cpus": spec.cpus, "memory": spec.memory, "pids": spec.pids}
        wanted = {k: v for k, v in wanted.items() if v is not None}
        if not wanted:
            return {}
        can = enforceable(self.client)
        refused = [k for k in wanted if not can[k]]
        if refused:
            raise SandboxError(
                f"the Docker daemon cannot enforce the {', '.join(refused)} limit(s) (its cgroups "
                "lack the controller); refusing to create a sandbox that would ignore them"
            )
        out: dict[str, Any] = {}
        if spec.cpus is not None:
            if not spec.cpus > 0:
                raise SandboxError(f"cpus must be > 0, got {spec.cpus!r}")
            out["nano_cpus"] = int(float(spec.cpus) * 1e9)
        if spec.memory is not None:
            memory = str(spec.memory).strip()
            if not _MEMORY.match(memory):
                raise SandboxError(f"memory {spec.memory!r}: expected a size like '512m' or '2g'")
            out["mem_limit"] = memory
            if swap_limit(self.client):
                out["memswap_limit"] = memory
        if spec.pids is not None:
            if int(spec.pids) < 1:
                raise SandboxError(f"pids must be >= 1, got {spec.pids!r}")
            out["pids_limit"] = int(spec.pids)
        return out

    async def create(self, spec: SandboxSpec) -> Sandbox:
        mode = spec.network or self.settings.get("network") or "bridge"
        if mode not in NETWORK_MODES:
            raise SandboxError(
                f"network {mode!r} is not a docker sandbox network mode{did_you_mean(mode, NETWORK_MODES)}"
                f" (choose from {', '.join(NETWORK_MODES)})"
            )
        if mode == "none" and spec.ports:
            raise SandboxError("a sandbox with network 'none' cannot publish ports")
        settings = {**self.settings, **dict(spec.settings)}
        image = spec.image or settings.get("image") or DEFAULT_IMAGE
        sandbox_id = f"agentenv-{uuid.uuid4().hex[:16]}"
        workdir = str(settings.get("workdir") or "/app")
        limits = await run(self._limits, spec)
        gateway = await run(self._host_gateway) if mode != "none" else None
        spec_labels = {str(k): str(v) for k, v in spec.labels.items()}
        container_labels = labels.container_labels(
            sandbox_id, spec_labels, self._lease_path(sandbox_id)
        )
        command = settings.get("command")
        kwargs: dict[str, Any] = dict(
            name=sandbox_id,
            labels=container_labels,
            environment=dict(spec.env_vars),
            working_dir=workdir,
            init=bool(settings.get("init", True)),
            detach=True,
            **limits,
        )
        if command in (None, "sleep"):
            kwargs.update(entrypoint=["sleep"], command=["infinity"])
        elif command != "image":
            kwargs.update(
                command=list(command) if not isinstance(command, str) else ["sh", "-c", command]
            )
        if spec.ports and not (mode != "none" and await run(self.reaches_containers, settings)):
            # a remote daemon publishes on its host's interfaces: this machine connects there
            bind = "0.0.0.0" if remote_host(settings) else "127.0.0.1"
            kwargs["ports"] = {f"{int(p)}/tcp": (bind, None) for p in spec.ports}
        network = None
        if mode == "none":
            kwargs["network_mode"] = "none"
        else:
            kwargs["extra_hosts"] = {"host.docker.internal": gateway}
            if mode == "run":
                network = _network_name(spec_labels.get("run_id", ""), sandbox_id)
            else:
                kwargs["network_mode"] = "bridge"
        pull = bool(settings.get("pull", True))
        owner = container_labels[labels.OWNER]
        run_label = container_labels[labels.RUN]
        alias = spec_labels.get("sandbox_name")

        def go() -> DockerSandbox:
            if network:
                ensure_network(self.client, network, owner=owner, run_id=run_label)
                kwargs["network"] = network
                if alias:
                    kwargs["networking_config"] = {
                        network: self.client.api.create_endpoint_config(aliases=[alias])
                    }
            container = _create(self.client, image, kwargs, pull)
            try:
                container.start()
                container.reload()
                return self._wrap(container, network)
            except BaseException as e:
                remove_container(self.client, container.id)
                if network:
                    remove_network_if_empty(self.client, network)
                if isinstance(e, _errors().APIError):
                    raise SandboxError(
                        f"cannot start a container from {image}: {e.explanation or e}"
                    ) from e
                raise

        sandbox = await run(go)
        return sandbox

    def _wrap(self, container: Any, network: str | None) -> DockerSandbox:
        attrs = container.attrs
        ports: dict[int, int] = {}
        for key, bindings in (attrs.get("NetworkSettings", {}).get("Ports") or {}).items():
            for binding in bindings or []:
                if binding.get("HostIp") in ("127.0.0.1", "", "0.0.0.0"):
                    ports[int(key.split("/")[0])] = int(binding["HostPort"])
                    break
        nets = attrs.get("NetworkSettings", {}).get("Networks") or {}
        ip = None
        if network and network in nets:
            ip = nets[network].get("IPAddress") or None
        else:
            ip = next((n.get("IPAddress") for n in nets.values() if n.get("IPAddress")), None)
        return DockerSandbox(
            self.client,
            id=container.name,
            container_id=container.id,
            workdir=attrs.get("Config", {}).get("WorkingDir") or "/app",
            ports=ports,
            network=network,
            ip=ip,
            settings=self.settings,
        )

    async def connect(self, info: Mapping[str, Any]) -> Sandbox:
        ref = info.get("container_id") or info.get("id")
        if not ref:
            raise SandboxError(
                f"cannot reconnect to a docker sandbox without an id: {dict(info)!r}"
            )

        def go() -> DockerSandbox:
            errors = _errors()
            try:
                container = self.client.containers.get(str(info.get("id") or ref))
            except errors.NotFound:
                raise SandboxError(
                    f"docker sandbox {info.get('id') or ref} no longer exists"
                ) from None
            except errors.APIError as e:
                raise SandboxError(
                    f"cannot reach docker sandbox {ref}: {e.explanation or e}"
                ) from e
            if labels.MANAGED not in (container.labels or {}):
                raise SandboxError(f"container {ref} is not an agent-env sandbox")
            if container.status in ("exited", "created"):
                try:  # after a daemon restart: files survive, processes do not
                    container.start()
                    container.reload()
                except errors.APIError as e:
                    raise SandboxError(
                        f"docker sandbox {container.name} is {container.status} and "
                        f"cannot be restarted: {e.explanation or e}"
                    ) from e
            elif container.status == "paused":
                container.unpause()
                container.reload()
            if container.status != "running":
                raise SandboxError(
                    f"docker sandbox {container.name} is {container.status}, not running"
                )
            network = info.get("network") or None
            return self._wrap(container, network)

        return await run(go)

    async def reap(self, *, adopt: Sequence[str] = ()) -> list[str]:
        return await run(reap_orphans, self.client, set(adopt))

    can_build_images = True
    on_this_machine = True

    async def build_image(self, context_dir: Path, name: str) -> ImageInfo:
        """Build `context_dir` content-addressed (`<name>:<digest>`); a second build of the
        same context only looks the image up."""
        from agentenv_docker_sandbox.images import build_image, context_digest, image_tag

        expected = image_tag(name, await run(context_digest, context_dir))
        existed = await run(self._image_config, expected)
        tag = await build_image(context_dir, name, settings=self.settings)
        config = (
            existed
            if existed is not None and tag == expected
            else await run(self._image_config, tag)
        )
        return ImageInfo(
            tag=tag, workdir=(config or {}).get("WorkingDir") or "/", reused=existed is not None
        )

    def _image_config(self, tag: str) -> dict[str, Any] | None:
        try:
            return self.client.images.get(tag).attrs.get("Config") or {}
        except _errors().ImageNotFound:
            return None

    def _host_gateway(self) -> str:
        """What `host.docker.internal` maps to in a container: Docker's `host-gateway`; podman
        before 4.7 does not know that name (the agent in its container then cannot resolve the
        host, found by tests/test_redteam_docker.py), so its bridge's gateway address."""
        if is_podman(self.client):
            address = self.host_address()
            if address and address != "0.0.0.0":
                return address
        return "host-gateway"

    def reaches_containers(self, settings: Mapping[str, Any] | None = None) -> bool:
        """Whether this machine reaches containers at their own address, so that their ports
        need no publishing: the daemon is local, `direct` is on (the default), and its bridge's
        gateway address is one of this machine's (Docker Engine on Linux; not a daemon in a VM,
        rootless Docker or another machine). A published port goes through a `docker-proxy`
        process per port, which costs every request about 70 us of CPU and 40-75 us of latency
        (measured on a 2-core machine)."""
        settings = self.settings if settings is None else settings
        if not settings.get("direct", True) or remote_host(settings):
            return False
        key = id(self.client)
        if key not in _REACHES:
            _REACHES[key] = _is_local_address(self.host_address())
        return _REACHES[key]

    def host_address(self) -> str | None:
        """The host's address on the docker bridge (what `host.docker.internal` resolves
        to); "0.0.0.0" when the daemon does not say (a host server then listens everywhere)."""
        try:
            network = self.client.networks.get("bridge")
            return str(network.attrs["IPAM"]["Config"][0]["Gateway"])
        except Exception:  # noqa: BLE001 - no daemon detail: listen everywhere
            return "0.0.0.0"


#: id(client) -> whether this machine reaches that daemon's containers at their own address.
_REACHES: dict[int, bool] = {}


def _is_local_address(address: str | None) -> bool:
    """Whether `address` is one of this machine's own (binding to it works)."""
    import socket

    if not address or address in ("0.0.0.0", "::"):
        return False
    try:
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((address, 0))
    except OSError:
        return False
    return True


def _create(client: Any, image: str, kwargs: dict[str, Any], pull: bool) -> Any:
    errors = _errors()
    try:
        return client.containers.create(image, **kwargs)
    except errors.ImageNotFound as e:
        if not pull:
            raise SandboxError(f"image {image!r} is not in the local Docker daemon") from e
        try:
            client.images.pull(image)
        except errors.APIError as pull_error:
            raise SandboxError(
                f"image {image!r} is not in the local Docker daemon and pulling it failed: "
                f"{pull_error.explanation or pull_error}"
            ) from pull_error
        return client.containers.create(image, **kwargs)
    except errors.APIError as e:
        raise SandboxError(f"cannot create a container from {image!r}: {e.explanation or e}") from e
