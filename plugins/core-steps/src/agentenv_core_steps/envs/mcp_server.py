"""The `mcp_server` env type: an env folder with a `Dockerfile`, or with an `env.toml` naming a
`command` (and its `requirements`), served over the AgentEnv protocol on one port.

- on a host-process provider (`local`) the folder is copied to the sandbox's `/app` and
  `command` runs there, with this interpreter when it satisfies the requirements, else a cached
  venv; the provider picks a free port (`MCP_PORT`);
- on an image provider (`docker`) the image is built content-addressed from the env's
  `Dockerfile` (or a standard one generated from `env.toml`), with the protocol wheel in the
  build context under `agentenv-wheels/`, and the container runs the image's command with its
  port published on loopback.
"""

from __future__ import annotations

import json
import shlex
import shutil
import time
from pathlib import Path
from typing import Any, ClassVar

import anyio
import attrs
from agent_env.errors import SandboxError
from agent_env.sandbox import SandboxSpec
from agent_env.suggest import did_you_mean

DEFAULT_PORT = 18765
BASE_IMAGE = "python:3.11-slim"
WHEELS_DIR = "agentenv-wheels"
CARD_PATH = "/.well-known/agent-env.json"
KEYS = ("type", "id", "description", "command", "requirements", "port", "env_vars",
        "startup_timeout_seconds", "base_image")
LOG_TAIL = 40


class EnvDeployError(Exception):
    """The env did not come up; the message names the env and carries its log tail."""


@attrs.frozen(kw_only=True)
class McpServerEnv:
    """A parsed `mcp_server` env folder (see the module docstring for env.toml's keys)."""

    type: ClassVar[str] = "mcp_server"

    name: str
    folder: Path
    has_dockerfile: bool
    command: list[str] | None = None
    requirements: list[str] = attrs.field(factory=list)
    port: int = DEFAULT_PORT
    env_vars: dict[str, str] = attrs.field(factory=dict)
    startup_timeout_seconds: float = 120.0
    base_image: str = BASE_IMAGE

    # -- parsing --------------------------------------------------------------------------

    @staticmethod
    def problems(config: dict[str, Any], files: list[str]) -> list[str]:
        """Every mistake in an env folder's `env.toml` (empty when it is fine)."""
        out = []
        for key in config:
            if key not in KEYS:
                out.append(f"env.toml: unknown key {key!r}{did_you_mean(key, KEYS)}")
        command = config.get("command")
        if command is not None and not (
            (isinstance(command, str) and command.strip())
            or (isinstance(command, list) and command and all(isinstance(c, str) for c in command))
        ):
            out.append("env.toml: command: expected a string or a non-empty list of strings")
        if command is None and "Dockerfile" not in files:
            out.append("env.toml: command: required when the env has no Dockerfile")
        reqs = config.get("requirements")
        if reqs is not None and not (
            isinstance(reqs, str) or (isinstance(reqs, list) and all(isinstance(r, str) for r in reqs))
        ):
            out.append("env.toml: requirements: expected a list of requirement strings or a file name")
        elif isinstance(reqs, str) and reqs not in files:
            out.append(f"env.toml: requirements: no file {reqs!r} in the env folder")
        port = config.get("port", DEFAULT_PORT)
        if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
            out.append(f"env.toml: port: expected an integer in 1..65535, got {port!r}")
        env_vars = config.get("env_vars", {})
        if not isinstance(env_vars, dict) or not all(isinstance(v, str) for v in env_vars.values()):
            out.append("env.toml: env_vars: expected a table of strings")
        timeout = config.get("startup_timeout_seconds", 120)
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
            out.append("env.toml: startup_timeout_seconds: expected a positive number")
        if not isinstance(config.get("base_image", BASE_IMAGE), str):
            out.append("env.toml: base_image: expected a string")
        return out

    @classmethod
    def from_folder(cls, name: str, folder: Path, config: dict[str, Any]) -> McpServerEnv:
        """Parse; `ValueError` listing every problem."""
        files = [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()]
        problems = cls.problems(config, files)
        if problems:
            raise ValueError("; ".join(problems))
        command = config.get("command")
        if isinstance(command, str):
            command = shlex.split(command)
        reqs = config.get("requirements")
        if isinstance(reqs, str):
            requirements = _read_requirements(folder / reqs)
        elif isinstance(reqs, list):
            requirements = list(reqs)
        elif (folder / "requirements.txt").is_file():
            requirements = _read_requirements(folder / "requirements.txt")
        else:
            requirements = []
        return cls(
            name=name, folder=folder, has_dockerfile=(folder / "Dockerfile").is_file(),
            command=command, requirements=requirements,
            port=int(config.get("port", DEFAULT_PORT)),
            env_vars=dict(config.get("env_vars", {})),
            startup_timeout_seconds=float(config.get("startup_timeout_seconds", 120)),
            base_image=str(config.get("base_image", BASE_IMAGE)),
        )

    # -- deploying ------------------------------------------------------------------------

    async def deploy(self, ctx: Any, *, sandbox_name: str, provider: str, cpus: float | None = None,
                     memory: str | None = None) -> dict[str, Any]:
        """Bring the env up in a new sandbox of `provider` (limits enforced or refused by it);
        returns what to record (its host URL under `url`). The sandbox belongs to the run, so
        the run's teardown stops the env."""
        limits = {"cpus": cpus, "memory": memory}
        if provider == "local":
            return await self._deploy_process(ctx, sandbox_name, provider, limits)
        return await self._deploy_image(ctx, sandbox_name, provider, limits)

    async def _deploy_process(self, ctx: Any, sandbox_name: str, provider: str,
                              limits: dict[str, Any]) -> dict[str, Any]:
        if not self.command:
            raise EnvDeployError(
                f"env {self.name!r} has only a Dockerfile; to run it as a local process give "
                "env.toml a `command` (and its `requirements`), or use an image provider "
                "(--sandbox docker)"
            )
        from agent_env.paths import cache_dir

        from agentenv_core_steps.envs.python import RequirementsError, python_for

        try:
            python = await anyio.to_thread.run_sync(python_for, self.requirements, cache_dir())
        except RequirementsError as e:
            raise EnvDeployError(f"env {self.name!r}: {e}") from e
        sandbox = await ctx.create_sandbox(sandbox_name, SandboxSpec(**limits), provider=provider)
        await sandbox.copy_in(self.folder, "/app")
        argv = list(self.command)
        if argv[0] in ("python", "python3", "python3.11"):
            argv[0] = python
        env = {"MCP_HOST": "127.0.0.1", "PYTHONUNBUFFERED": "1", **self.env_vars}
        bindir = str(Path(python).parent)
        import os

        env["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
        started = await _fork(ctx, sandbox, argv, env)
        if started is not None:
            url, exited = started
        else:
            url, exited = (await sandbox.start_process(argv, env=env, port=self.port)).url, None
        card = await wait_for_card(self.name, url, sandbox, self.startup_timeout_seconds, exited)
        return {"url": url, "card": card, "python": python, "warm": started is not None}

    async def _deploy_image(self, ctx: Any, sandbox_name: str, provider: str,
                            limits: dict[str, Any]) -> dict[str, Any]:
        t0 = time.perf_counter()
        image, workdir = await self.build(ctx)
        t1 = time.perf_counter()
        spec = SandboxSpec(
            image=image,
            env_vars={"MCP_HOST": "0.0.0.0", "MCP_PORT": str(self.port), "PYTHONUNBUFFERED": "1",
                      **self.env_vars},
            ports=(self.port,),
            settings={"command": "image", "workdir": workdir},
            **limits,
        )
        sandbox = await ctx.create_sandbox(sandbox_name, spec, provider=provider)
        url = sandbox.url(self.port)
        t2 = time.perf_counter()
        card = await wait_for_card(self.name, url, sandbox, self.startup_timeout_seconds)
        phases = {"image": t1 - t0, "container": t2 - t1, "card": time.perf_counter() - t2}
        return {"url": url, "card": card, "image": image, "phases": phases}

    def build_context(self, out: Path) -> Path:
        """The docker build context: the env's files, the protocol wheel under
        `agentenv-wheels/`, and a generated Dockerfile when the env has none."""
        from agentenv_core_steps.envs.wheels import protocol_wheel

        wheel = protocol_wheel(out / "wheels")
        context = out / "contexts" / f"{self.folder.name}-{wheel.parent.name}"
        if (context / "Dockerfile").is_file():
            return context
        staging = context.with_name(context.name + f".{time.time_ns()}")
        shutil.copytree(self.folder, staging)
        (staging / WHEELS_DIR).mkdir(exist_ok=True)
        shutil.copy2(wheel, staging / WHEELS_DIR / wheel.name)
        if not self.has_dockerfile:
            (staging / "Dockerfile").write_text(self.generated_dockerfile(wheel.name))
        try:
            staging.rename(context)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
        return context

    def generated_dockerfile(self, wheel: str) -> str:
        """The standard image of an env.toml-only env."""
        reqs = " ".join(shlex.quote(r) for r in self.requirements)
        return (
            f"FROM {self.base_image}\n"
            "WORKDIR /app\n"
            f"COPY {WHEELS_DIR}/ /tmp/{WHEELS_DIR}/\n"
            f"RUN pip install --no-cache-dir --disable-pip-version-check /tmp/{WHEELS_DIR}/{wheel} {reqs}\n"
            "COPY . /app\n"
            f"ENV MCP_HOST=0.0.0.0 MCP_PORT={self.port} PYTHONUNBUFFERED=1\n"
            f"EXPOSE {self.port}\n"
            f"CMD {json.dumps(self.command)}\n"
        )

    async def build(self, ctx: Any) -> tuple[str, str]:
        """(image tag, its working dir); the second build of the same context builds nothing."""
        try:
            from agentenv_docker_sandbox.images import build_image
        except ImportError as e:
            raise EnvDeployError(
                f"env {self.name!r}: building its image needs agentenv-docker-sandbox "
                f"(pip install agentenv-docker-sandbox): {e}") from e
        from agent_env.paths import cache_dir
        from agentenv_docker_sandbox.images import context_digest, image_tag

        settings = _docker_settings(ctx)
        context = await anyio.to_thread.run_sync(self.build_context, cache_dir())
        name = f"env-{self.name}"
        expected = image_tag(name, await anyio.to_thread.run_sync(context_digest, context))
        existed = await anyio.to_thread.run_sync(_image_config, settings, expected)
        t0 = time.perf_counter()
        tag = await build_image(context, name, settings=settings)
        config = existed if existed is not None and tag == expected else \
            await anyio.to_thread.run_sync(_image_config, settings, tag)
        if existed is None:
            ctx.log(f"image {tag} built in {time.perf_counter() - t0:.1f}s")
        else:
            ctx.log(f"image {tag} reused (same build context)")
        return tag, (config or {}).get("WorkingDir") or "/"


def _image_config(settings: dict[str, Any], tag: str) -> dict[str, Any] | None:
    """The image's `Config` (workdir, command), or None when the daemon does not have it."""
    import docker.errors
    from agentenv_docker_sandbox.client import get_client

    try:
        return get_client(settings).images.get(tag).attrs.get("Config") or {}
    except docker.errors.ImageNotFound:
        return None


def _docker_settings(ctx: Any) -> dict[str, Any]:
    config = getattr(ctx, "config", None)
    if config is None:
        return {}
    table = config.table("sandbox") or {}
    settings = table.get("docker", {})
    return dict(settings) if isinstance(settings, dict) else {}


def _read_requirements(path: Path) -> list[str]:
    out = []
    for line in path.read_text().splitlines():
        line = line.split(" #", 1)[0].strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


async def _fork(ctx: Any, sandbox: Any, argv: list[str], env: dict[str, str]) -> Any:
    """Start the env through the warm fork server when it can: (url, exit probe), else None."""
    from agentenv_core_steps.envs import forkserver

    folder, meta = getattr(sandbox, "folder", None), getattr(sandbox, "meta", None)
    if not (forkserver.enabled() and forkserver.entry(argv) and folder and meta):
        return None
    import os
    import uuid

    from agent_env.sandboxes.local import free_port

    port = str(free_port())
    full = {**os.environ, **dict(getattr(sandbox, "env_vars", {}) or {}), **env, "MCP_PORT": port,
            "PORT": port, "APP_DIR": str(folder), forkserver.MARKER: sandbox.id}
    log = Path(meta) / f"proc-{uuid.uuid4().hex[:8]}.log"
    try:
        server = await anyio.to_thread.run_sync(forkserver.shared)
        pid = await anyio.to_thread.run_sync(
            lambda: server.spawn(argv, cwd=Path(folder), env=full, log=log, marker=sandbox.id))
    except (RuntimeError, ValueError, OSError) as e:
        ctx.log(f"warm start unavailable ({e}); starting the env as a new process")
        return None

    async def exited() -> int | None:
        try:
            return await anyio.to_thread.run_sync(server.status, pid)
        except RuntimeError:
            return None

    return f"http://127.0.0.1:{port}", exited


async def wait_for_card(name: str, url: str, sandbox: Any, timeout: float,
                        exited_probe: Any = None) -> dict[str, Any]:
    """Poll the env's card until it answers 200; `EnvDeployError` with the env's log tail when
    the process exits or `timeout` passes."""
    import httpx

    deadline = time.monotonic() + timeout
    last = "no answer yet"
    polls = 0
    async with httpx.AsyncClient(timeout=httpx.Timeout(5.0, connect=1.0), trust_env=False) as http:
        while True:
            try:
                response = await http.get(url + CARD_PATH)
                if response.status_code == 200:
                    return response.json()
                last = f"HTTP {response.status_code}"
            except (httpx.HTTPError, ValueError) as e:
                last = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            polls += 1
            exited = await _exited(sandbox, check_container=polls % 25 == 0)
            if exited is None and exited_probe is not None and polls % 5 == 0:
                exited = await exited_probe()
            if exited is not None or time.monotonic() > deadline:
                logs = await _logs(sandbox)
                why = (f"its process exited with code {exited}" if exited is not None
                       else f"its card ({CARD_PATH}) did not answer within {timeout:g}s ({last})")
                raise EnvDeployError(f"env {name!r} did not come up at {url}: {why}\n"
                                     f"--- env log (last {LOG_TAIL} lines) ---\n{logs or '(empty)'}")
            await anyio.sleep(0.01)


async def _exited(sandbox: Any, *, check_container: bool) -> int | None:
    """The exit code of a server the sandbox runs that already died: host processes it
    started, or (checked less often, it costs a daemon call) a container whose own command is
    the server. None when all run or it cannot tell."""
    for popen in list((getattr(sandbox, "_servers", None) or {}).values()):
        code = popen.poll()
        if code is not None:
            return code
    container_id, client = getattr(sandbox, "container_id", None), getattr(sandbox, "client", None)
    if check_container and container_id and client is not None:
        def state() -> dict[str, Any]:
            return client.api.inspect_container(container_id).get("State") or {}

        try:
            info = await anyio.to_thread.run_sync(state)
        except Exception:  # noqa: BLE001 - a gone container is reported by the timeout
            return None
        if info.get("Status") in ("exited", "dead"):
            return int(info.get("ExitCode") or 0)
    return None


async def _logs(sandbox: Any) -> str:
    text = ""
    try:
        text = await sandbox.process_logs(tail=LOG_TAIL)
    except (SandboxError, OSError):
        text = ""
    if not text and getattr(sandbox, "container_id", None) and getattr(sandbox, "client", None):
        def container_logs() -> str:
            raw = sandbox.client.api.logs(sandbox.container_id, tail=LOG_TAIL)
            return raw.decode("utf-8", "replace")

        try:
            text = await anyio.to_thread.run_sync(container_logs)
        except Exception:  # noqa: BLE001 - logs are a courtesy in an error message
            text = ""
    return "\n".join(text.rstrip().splitlines()[-LOG_TAIL:])
