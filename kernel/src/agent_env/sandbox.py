"""The sandbox interface. Providers (the built-in `local`, the docker plugin, ...) implement it.

A provider class is registered through `agentenv_register_sandbox_providers` and keyed by
`type`. Every sandbox carries the labels the engine sets (`run_id`, `task_instance_id`,
`owner_pid`, `owner_host`) so orphans of a dead owner can be reaped by the next command.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import attrs

from agent_env.errors import SandboxError


@attrs.frozen(kw_only=True)
class SandboxSpec:
    """What to create. A provider refuses (SandboxError) what it cannot enforce."""

    image: str | None = None
    env_vars: Mapping[str, str] = attrs.field(factory=dict)
    cpus: float | None = None
    memory: str | None = None  # "512m", "2g"
    pids: int | None = None
    network: str | None = None  # None = provider default; "none"; "bridge"; "run"
    ports: Sequence[int] = ()  # ports inside the sandbox to make reachable from the host
    labels: Mapping[str, str] = attrs.field(factory=dict)
    settings: Mapping[str, Any] = attrs.field(factory=dict)  # provider-specific extras


@attrs.frozen(kw_only=True)
class ExecResult:
    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool = False


class Process(abc.ABC):
    """A long-running process a sandbox started (`Sandbox.start_process`) or the sandbox's own
    command (`Sandbox.main_process`). `url` is the host URL of its port ("" without one)."""

    url: str = ""

    @abc.abstractmethod
    async def exit_code(self) -> int | None:
        """Its exit code once it exited, None while it runs (or when it cannot tell)."""

    @abc.abstractmethod
    async def logs(self, *, tail: int = 200) -> str:
        """The last `tail` lines of its output (stdout and stderr); "" when none are kept."""

    @abc.abstractmethod
    async def stop(self) -> None:
        """Stop it (a short grace, then a kill); idempotent. Teardown stops it anyway."""


class Sandbox(abc.ABC):
    """A live sandbox. Paths are sandbox paths (the work folder is `/app`)."""

    id: str
    provider: str
    workdir: str = "/app"

    @abc.abstractmethod
    async def exec(
        self,
        command: str | Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
    ) -> ExecResult:
        """Run a command to completion (a string runs under `sh -c`)."""

    @abc.abstractmethod
    async def write_file(self, path: str, data: bytes, *, mode: int = 0o644) -> None: ...

    @abc.abstractmethod
    async def read_file(self, path: str) -> bytes:
        """The file's bytes; `FileNotFoundError` when it does not exist."""

    @abc.abstractmethod
    async def copy_in(self, host_path: Path, path: str) -> None:
        """Copy a host file or folder to `path` in the sandbox (parents created)."""

    @abc.abstractmethod
    async def copy_out(self, path: str, host_path: Path) -> None:
        """Copy a sandbox file or folder to `host_path` on the host."""

    @abc.abstractmethod
    async def start_process(
        self,
        command: str | Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        port: int | None = None,
    ) -> Process:
        """Start a long-running process (a server); its handle's `url` is the host URL of
        `port` if given.

        The process lives until teardown. For host processes the provider may pick a free
        port and pass it as `MCP_PORT`/`PORT`; `Process.url` is what the host reaches.
        """

    @abc.abstractmethod
    def url(self, port: int) -> str:
        """The host URL (`http://host:port`) where port `port` of the sandbox is reachable;
        SandboxError when the host cannot reach it."""

    async def main_process(self) -> Process | None:
        """The sandbox's own command (an image's CMD run as the sandbox), None when the
        sandbox has none (the default)."""
        return None

    @abc.abstractmethod
    def describe(self) -> dict[str, Any]:
        """JSON that `SandboxProvider.connect` accepts to reconnect (journaled)."""

    @abc.abstractmethod
    async def teardown(self) -> None:
        """Stop everything and release every resource; idempotent."""

    async def process_logs(self, *, tail: int = 200) -> str:
        """The last `tail` lines of output of the processes `start_process` started (for error
        messages when a server does not come up); "" when the provider keeps none."""
        return ""

    async def vanished(self) -> str | None:
        """Why this sandbox is no longer there although nobody tore it down (its container
        removed, its folder deleted, its commands killed from outside), None while it is (or
        when the provider cannot tell: the default). The engine asks after a step that went
        wrong, so that such a trial is classed `infrastructure`, not the agent's failure."""
        return None

    async def fence(self) -> list[str]:
        """End every command (`exec`) a previous owner of this sandbox started that still
        runs, sparing the servers `start_process` started: a resume adopting the sandbox of a
        dead run calls it before any step runs again, so the dead run's copy of a step never
        runs alongside the new one. What was ended (for the log); the default ends nothing
        (a provider whose commands cannot outlive their caller)."""
        return []


class SandboxProvider(abc.ABC):
    """Creates, reconnects and reaps sandboxes of one kind."""

    type: ClassVar[str] = ""

    def __init__(self, settings: Mapping[str, Any] | None = None, *, home: Path | None = None):
        self.settings = dict(settings or {})
        self.home = home

    @abc.abstractmethod
    async def create(self, spec: SandboxSpec) -> Sandbox: ...

    @abc.abstractmethod
    async def connect(self, info: Mapping[str, Any]) -> Sandbox:
        """Reconnect to a sandbox from `Sandbox.describe()`; SandboxError if it is gone."""

    @abc.abstractmethod
    async def reap(self, *, adopt: Sequence[str] = ()) -> list[str]:
        """Tear down sandboxes whose owner process is dead, except those with an id in
        `adopt` (which now belong to this process). Returns the ids torn down."""

    # -- optional capabilities (check with `can_build_images` before calling) ------------

    can_build_images: ClassVar[bool] = False
    #: True for a provider whose sandboxes run on this machine (the local Docker daemon, say):
    #: an env deployed on `local` falls back to it when it cannot run as a host process (it
    #: has only a Dockerfile), as the existing `agent-env`'s `local` means (`provider_chain`).
    on_this_machine: ClassVar[bool] = False

    async def build_image(self, context_dir: Path, name: str) -> ImageInfo:
        """Build (or reuse, content-addressed) the image of build context `context_dir`;
        only providers with `can_build_images` implement it."""
        raise SandboxError(f"sandbox provider {self.type!r} cannot build images")

    def host_address(self) -> str | None:
        """The address the host has as seen from inside this provider's sandboxes (where a
        host server must listen to be reachable by them); None when they share the host's
        loopback (the default)."""
        return None


@attrs.frozen(kw_only=True)
class ImageInfo:
    """A built image: its tag, its working dir, and whether this build reused it."""

    tag: str
    workdir: str = "/"
    reused: bool = False


def provider_chain(spec: str, providers: Any, *, local_machine: bool = False) -> tuple[str, ...]:
    """The provider names to try, in order, for `spec`: one name or a fallback chain `a,b`
    (`agent-env run --sandbox`, a step's `sandbox_type`). Each name is checked against the
    `providers` registry (`PluginError` with a did-you-mean). With `local_machine`, `local`
    means this machine, as in the existing `agent-env`: it is followed by the registered
    providers that build images `on_this_machine` (for what host processes cannot run)."""
    names = [n.strip() for n in spec.split(",")]
    if not spec.strip() or not all(names):
        raise SandboxError(
            f"sandbox provider {spec!r}: expected a provider name or a comma-separated "
            "fallback chain such as local,docker"
        )
    for name in names:
        if name not in providers:
            providers.get(name)  # the unknown-name error, with a did-you-mean
    out: list[str] = []
    for name in names:
        out.append(name)
        if name == "local" and local_machine:
            out.extend(
                other
                for other in providers.names()
                if other not in names
                and providers.attribute(other, "on_this_machine", False)
                and providers.attribute(other, "can_build_images", False)
            )
    return tuple(dict.fromkeys(out))
