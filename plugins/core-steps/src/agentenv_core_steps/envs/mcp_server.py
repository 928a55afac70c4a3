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

import builtins
import json
import shlex
import shutil
import time
from pathlib import Path
from typing import Any, ClassVar, TypeGuard

import anyio
import attrs

from agent_env.envs import EnvDeployment, EnvType
from agent_env.errors import SandboxError
from agent_env.sandbox import SandboxSpec
from agentenv_protocol import DEFAULT_PORT, WELL_KNOWN_PATH
from agentenv_protocol.constants import ENV_SECRET_ENV, ENV_SECRET_HEADER

BASE_IMAGE = "python:3.11-slim"
WHEELS_DIR = "agentenv-wheels"
LOG_TAIL = 40
#: Starts of a local env on a fresh port when its port turned out to be another server's.
PORT_ATTEMPTS = 3
#: A path no env serves and every env with a secret guards: the secret check asks it.
OWNER_CHECK_PATH = "/.agentenv/owner-check"


@attrs.frozen(kw_only=True)
class McpServerConfig:
    """An `mcp_server` env folder's `env.toml` (the bundle parser structures it strictly)."""

    type: str | None = None
    id: str | None = None
    description: str | None = None
    #: A shell-like string or an argv list; required when the env has no Dockerfile.
    command: str | list[str] | None = None
    #: A list of requirement strings, or the name of a requirements file in the env folder.
    requirements: str | list[str] | None = None
    port: int = DEFAULT_PORT
    env_vars: dict[str, str] = attrs.field(factory=dict)
    startup_timeout_seconds: float = 120.0
    base_image: str = BASE_IMAGE
    #: The tools the env serves, for `agent-env check` (default: its `@tool` functions).
    tools: list[str] | None = None


class EnvDeployError(Exception):
    """The env did not come up; the message names the env and carries its log tail.
    `failure_class`: `env` when its process exited (its own error, the same on every try),
    `infrastructure` when its port never answered while it ran (a busy machine, a port or
    network problem: not the agent's failure, and `--retry-infra` tries again)."""

    def __init__(self, message: str, *, failure_class: str = "env"):
        super().__init__(message)
        self.failure_class = failure_class


class PortTaken(EnvDeployError):
    """A port race with a process started at the same time: the env's port answered with
    another server (one that refuses the env's secret), or the env's server exited because
    the port was already in use; a new port is tried."""

    def __init__(self, message: str):
        super().__init__(message, failure_class="infrastructure")


@attrs.frozen(kw_only=True)
class McpServerEnv(EnvType):
    """A parsed `mcp_server` env folder (see the module docstring for env.toml's keys)."""

    type: ClassVar[str] = "mcp_server"
    default_for: ClassVar[str | None] = "env"
    config_model: ClassVar[builtins.type | None] = McpServerConfig

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

    @classmethod
    def served_tools(cls, config: dict[str, Any], folder: Path) -> frozenset[str] | None:
        """`tools` from env.toml, else the folder's `@tool` functions; with the gateway's own
        `get_time`, which every env deployed in a task offers the agent."""
        from agentenv_core_steps.envs.tool_names import GATEWAY_TOOLS, scanned_tools

        declared = config.get("tools")
        if isinstance(declared, list) and all(isinstance(t, str) for t in declared):
            tools: frozenset[str] | None = frozenset(declared)
        else:
            tools = scanned_tools(folder)
        return None if tools is None else tools | GATEWAY_TOOLS

    @staticmethod
    def problems(config: dict[str, Any], files: list[str]) -> list[str]:
        """What `McpServerConfig` cannot say about an env folder (empty when it is fine):
        a command that is empty, none without a Dockerfile, a requirements file that is not
        there, a port or timeout out of range. Values of the wrong type are the model's."""
        out = []
        command = config.get("command")
        if (isinstance(command, str) and not command.strip()) or command == []:
            out.append("env.toml: command: expected a non-empty string or list of strings")
        if command is None and "Dockerfile" not in files:
            out.append("env.toml: command: required when the env has no Dockerfile")
        reqs = config.get("requirements")
        if isinstance(reqs, str) and reqs not in files:
            out.append(f"env.toml: requirements: no file {reqs!r} in the env folder")
        port = config.get("port")
        if _number(port) and not 0 < port < 65536:
            out.append(f"env.toml: port: expected an integer in 1..65535, got {port!r}")
        timeout = config.get("startup_timeout_seconds")
        if _number(timeout) and timeout <= 0:
            out.append(
                f"env.toml: startup_timeout_seconds: expected a positive number, got {timeout!r}"
            )
        return out

    @classmethod
    def from_folder(cls, name: str, folder: Path, config: dict[str, Any]) -> McpServerEnv:
        """Parse; `ValueError` listing every problem."""
        files = [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()]
        parsed: McpServerConfig = cls.read_config(config, files)
        command = parsed.command
        if isinstance(command, str):
            command = shlex.split(command)
        reqs = parsed.requirements
        if isinstance(reqs, str):
            requirements = _read_requirements(folder / reqs)
        elif isinstance(reqs, list):
            requirements = list(reqs)
        elif (folder / "requirements.txt").is_file():
            requirements = _read_requirements(folder / "requirements.txt")
        else:
            requirements = []
        return cls(
            name=name,
            folder=folder,
            has_dockerfile=(folder / "Dockerfile").is_file(),
            command=command,
            requirements=requirements,
            port=parsed.port,
            env_vars=dict(parsed.env_vars),
            startup_timeout_seconds=parsed.startup_timeout_seconds,
            base_image=parsed.base_image,
        )

    # -- deploying ------------------------------------------------------------------------

    async def deploy(
        self,
        ctx: Any,
        *,
        sandbox_name: str,
        provider: str,
        secret: str | None = None,
        **limits: Any,
    ) -> EnvDeployment:
        """Bring the env up in a new sandbox of `provider` (limits enforced or refused by it);
        returns what to record (its host URL under `url`). The sandbox belongs to the run, so
        the run's teardown stops the env. With `secret` the server gets it in
        `AGENTENV_ENV_SECRET` and answers only requests carrying it (the gateway's); `limits`
        are `SandboxSpec` fields (`cpus`, `memory`)."""
        extra = {ENV_SECRET_ENV: secret} if secret else {}
        if provider == "local":
            return await self._deploy_process(ctx, sandbox_name, provider, limits, extra)
        return await self._deploy_image(ctx, sandbox_name, provider, limits, extra)

    def unavailable_on(self, ctx: Any, provider: str) -> str | None:
        """Why `provider` cannot host this env (None when it can): a fallback chain
        (`--sandbox local,docker`, a task's `local`) goes on to the next provider."""
        if provider == "local":
            if self.command:
                return None
            return (
                "the env has only a Dockerfile; to run it as a local process give env.toml a "
                "`command` (and its `requirements`), or run it in Docker (--sandbox docker, "
                "with agentenv-docker-sandbox installed)"
            )
        if not getattr(ctx.sandbox_provider(provider), "can_build_images", False):
            return "it cannot build images (use one that can, e.g. --sandbox docker)"
        return None

    async def _deploy_process(
        self,
        ctx: Any,
        sandbox_name: str,
        provider: str,
        limits: dict[str, Any],
        extra: dict[str, str],
    ) -> EnvDeployment:
        why = self.unavailable_on(ctx, provider)
        if why is not None:
            raise EnvDeployError(f"env {self.name!r}: {why}")
        from agent_env.paths import cache_dir
        from agentenv_core_steps.envs.python import RequirementsError, python_for

        try:
            python = await anyio.to_thread.run_sync(python_for, self.requirements, cache_dir())
        except RequirementsError as e:
            raise EnvDeployError(f"env {self.name!r}: {e}") from e
        sandbox = await ctx.create_sandbox(sandbox_name, SandboxSpec(**limits), provider=provider)
        await sandbox.copy_in(self.folder, "/app")
        assert self.command  # unavailable_on refused the local provider without one
        argv = list(self.command)
        if argv[0] in ("python", "python3", "python3.11"):
            argv[0] = python
        env = {"MCP_HOST": "127.0.0.1", "PYTHONUNBUFFERED": "1", **self.env_vars, **extra}
        bindir = str(Path(python).parent)
        import os

        env["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
        for attempt in range(1, PORT_ATTEMPTS + 1):
            forked = await _fork(ctx, sandbox, argv, env)
            process = forked or await sandbox.start_process(argv, env=env, port=self.port)
            try:
                # a host process's exit is a cheap poll; the fork server's costs a round trip
                card = await wait_for_card(
                    self.name,
                    process.url,
                    process,
                    self.startup_timeout_seconds,
                    check_every=5 if forked else 1,
                    secret=extra.get(ENV_SECRET_ENV),
                )
            except PortTaken as e:
                await process.stop()
                if attempt == PORT_ATTEMPTS:
                    raise
                ctx.log(f"{e}; starting it again on another port")
                continue
            return {"url": process.url, "card": card, "python": python, "warm": forked is not None}
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _deploy_image(
        self,
        ctx: Any,
        sandbox_name: str,
        provider: str,
        limits: dict[str, Any],
        extra: dict[str, str],
    ) -> EnvDeployment:
        t0 = time.perf_counter()
        image, workdir = await self.build(ctx, provider)
        t1 = time.perf_counter()
        spec = SandboxSpec(
            image=image,
            env_vars={
                "MCP_HOST": "0.0.0.0",
                "MCP_PORT": str(self.port),
                "PYTHONUNBUFFERED": "1",
                **self.env_vars,
                **extra,
            },
            ports=(self.port,),
            settings={"command": "image", "workdir": workdir},
            **limits,
        )
        sandbox = await ctx.create_sandbox(sandbox_name, spec, provider=provider)
        main = await sandbox.main_process()
        try:
            url = sandbox.url(self.port)
        except SandboxError:
            # a server that exits at once may take its published port with it before the
            # provider saw it: that is the env's failure, told with its log
            if (exited := await exit_code(main, 0, 1)) is None:
                raise
            raise await exited_error(self.name, f"container {sandbox.id}", exited, main) from None
        t2 = time.perf_counter()
        # the container's own command is the server; asking the daemon about it costs a call
        card = await wait_for_card(
            self.name, url, main, self.startup_timeout_seconds, check_every=25
        )
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

    async def build(self, ctx: Any, provider: str) -> tuple[str, str]:
        """(image tag, its working dir), built by `provider` (an image-building one); the
        second build of the same context builds nothing."""
        from agent_env.paths import cache_dir

        builder = ctx.sandbox_provider(provider)
        if not getattr(builder, "can_build_images", False):
            raise EnvDeployError(
                f"env {self.name!r}: sandbox provider {provider!r} cannot build images "
                "(use one that can, e.g. --sandbox docker with agentenv-docker-sandbox)"
            )
        context = await anyio.to_thread.run_sync(self.build_context, cache_dir())
        t0 = time.perf_counter()
        image = await builder.build_image(context, f"env-{self.name}")
        if image.reused:
            ctx.log(f"image {image.tag} reused (same build context)")
        else:
            ctx.log(f"image {image.tag} built in {time.perf_counter() - t0:.1f}s")
        return image.tag, image.workdir


def _number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _read_requirements(path: Path) -> list[str]:
    out = []
    for line in path.read_text().splitlines():
        line = line.split(" #", 1)[0].strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


async def _fork(ctx: Any, sandbox: Any, argv: list[str], env: dict[str, str]) -> Any:
    """Start the env through the warm fork server when it can (a `Process`), else None."""
    from agentenv_core_steps.envs import forkserver

    if not (
        forkserver.enabled()
        and forkserver.entry(argv)
        and hasattr(sandbox, "process_environment")
        and hasattr(sandbox, "adopt_server")
        and not getattr(sandbox, "isolated", False)  # a fork would escape its namespaces
    ):
        return None
    from agent_env.net import free_port

    port = str(free_port())
    full = sandbox.process_environment({**env, "MCP_PORT": port, "PORT": port})
    log = sandbox.new_log_path()
    # the child writes into a FIFO this process drains into `log`, redacted (when it can)
    output = sandbox.redacted_output(log) if hasattr(sandbox, "redacted_output") else log
    try:
        server = await anyio.to_thread.run_sync(forkserver.shared)
        pid = await anyio.to_thread.run_sync(
            lambda: server.spawn(
                argv, cwd=Path(full["APP_DIR"]), env=full, log=output, marker=sandbox.id
            )
        )
    except (RuntimeError, ValueError, OSError) as e:
        ctx.log(f"warm start unavailable ({e}); starting the env as a new process")
        return None
    sandbox.adopt_server(pid, argv, log)
    return forkserver.ForkedProcess(server, pid, log, f"http://127.0.0.1:{port}")


async def wait_for_card(
    name: str,
    url: str,
    process: Any,
    timeout: float,
    *,
    check_every: int = 1,
    secret: str | None = None,
) -> dict[str, Any]:
    """Poll the env's card until it answers 200; `EnvDeployError` with the env's log tail when
    its `process` (a `Process`, asked every `check_every` polls) exits or `timeout` passes.
    With the env's `secret`, the server that answered must accept it: `PortTaken` when it
    refuses it (another env won the port, and ours could not bind it)."""
    import httpx

    from agentenv_protocol._http import tls_context

    deadline = time.monotonic() + timeout
    last = "no answer yet"
    polls = 0
    async with httpx.AsyncClient(
        timeout=httpx.Timeout(5.0, connect=1.0), trust_env=False, verify=tls_context()
    ) as http:
        while True:
            try:
                response = await http.get(url + WELL_KNOWN_PATH)
                if response.status_code == 200:
                    card = response.json()
                    if secret is not None:
                        await _check_owner(http, name, url, secret)
                    return card
                last = f"HTTP {response.status_code}"
            except (httpx.HTTPError, ValueError) as e:
                last = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            polls += 1
            exited = await exit_code(process, polls, check_every)
            if exited is not None:
                raise await exited_error(name, url, exited, process)
            if time.monotonic() > deadline:
                logs = await process_tail(process)
                raise EnvDeployError(
                    f"env {name!r} did not come up at {url}: its card ({WELL_KNOWN_PATH}) did "
                    f"not answer within {timeout:g}s ({last})\n"
                    f"--- env log (last {LOG_TAIL} lines) ---\n{logs or '(empty)'}",
                    failure_class="infrastructure",
                )
            await anyio.sleep(0.01)


async def _check_owner(http: Any, name: str, url: str, secret: str) -> None:
    """`PortTaken` when the server at `url` refuses `secret` (an env server with a secret
    refuses every other one with 401 on every path but its card and health check)."""
    response = await http.get(url + OWNER_CHECK_PATH, headers={ENV_SECRET_HEADER: secret})
    if response.status_code == 401:
        raise PortTaken(
            f"env {name!r}: the server answering at {url} is not this env's (it refuses the "
            "env's secret): another process took the port first"
        )


async def exited_error(name: str, where: str, exited: int, process: Any) -> EnvDeployError:
    """The error of an env whose server `process` exited with code `exited` before serving
    its card at `where`: the env's own failure (class `env`), with its log tail."""
    logs = await process_tail(process)
    tail = f"--- env log (last {LOG_TAIL} lines) ---\n{logs or '(empty)'}"
    if _could_not_bind(logs, where):
        return PortTaken(
            f"env {name!r}: another process took its port at {where} before its server could "
            f"bind it (its process exited with code {exited})\n{tail}"
        )
    return EnvDeployError(
        f"env {name!r} did not come up at {where}: its process exited with code {exited}\n{tail}",
        failure_class="env",
    )


def _could_not_bind(logs: str | None, where: str) -> bool:
    """Whether the env's log says its server could not bind the port it was given (uvicorn:
    "error while attempting to bind on address ('127.0.0.1', PORT): address already in use";
    our SDK names the URL it serves first). An env that fails to bind some other port of its
    own is the env's failure, not a race for ours."""
    if not logs or "address already in use" not in logs.lower():
        return False
    port = where.rsplit(":", 1)[-1].split("/", 1)[0]
    return port.isdigit() and port in logs


async def exit_code(process: Any, polls: int, every: int) -> int | None:
    """The exit code of a server `Process` that already died, asked on every `every`-th poll;
    None while it runs, when it cannot tell, or when there is no process."""
    if process is None or polls % every:
        return None
    try:
        return await process.exit_code()
    except (SandboxError, OSError):
        return None


async def process_tail(process: Any) -> str:
    """The last LOG_TAIL lines a server `Process` printed ("" when it cannot say)."""
    if process is None:
        return ""
    try:
        text = await process.logs(tail=LOG_TAIL)
    except (SandboxError, OSError):
        text = ""
    return "\n".join(text.rstrip().splitlines()[-LOG_TAIL:])
