"""`run_docker_container`: build an image from a bundle artifact (or a zip at an http(s) URL)
and run it as a container next to the sandbox `sandbox_name`, on that sandbox's provider.

Our sandboxes are one container each, so the container is a sandbox of its own, named
`container_name` (address it by that name, e.g. in `verify_sandbox`; steps naming the
sandbox and the container find it too). It runs the image's own command unless
`command_override` is set. A user-defined `network` name puts it on the run's shared network,
where the run's containers reach each other by name, as on a Docker network of the existing
product's VM. Recorded under `containers.<sandbox_name>.<container_name>`.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, ClassVar

import anyio
import attrs

from agent_env.context import StepContext
from agent_env.errors import SandboxError, StepFailed
from agent_env.models import Step, compat_ignored
from agent_env.sandbox import SandboxSpec
from agentenv_core_steps.targets import artifact_for

READY_ATTEMPTS = 60
READY_INTERVAL = 2.0
_ARG = re.compile(r"^(\s*ARG\s+)([A-Za-z_][A-Za-z0-9_]*)(=\S*)?\s*$", re.IGNORECASE)
_BUILTIN_NETWORKS = ("bridge", "none")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
#: Fields whose container settings the sandbox interface cannot express: refused when set.
UNSUPPORTED = ("devices", "cap_add", "privileged", "volumes", "shm_size")


def with_build_args(dockerfile: str, build_args: dict[str, str]) -> str:
    """`dockerfile` with each `ARG NAME[=default]` of `build_args` given the value as default,
    which is what `docker build --build-arg NAME=value` makes of it."""
    out = []
    for line in dockerfile.splitlines():
        match = _ARG.match(line)
        if match and match.group(2) in build_args:
            line = f"{match.group(1)}{match.group(2)}={build_args[match.group(2)]}"
        out.append(line)
    return "\n".join(out) + "\n"


@attrs.frozen(kw_only=True)
class RunDockerContainer(Step):
    """Fields as the existing bundles use them."""

    type: ClassVar[str] = "run_docker_container"

    sandbox_name: str
    docker_context_artifact_id: str | None = None
    docker_context_artifact_version: int | None = None
    docker_context_url: str | None = None
    dockerfile_path: str = "Dockerfile"
    container_name: str = "task-container"
    ports: list[int] | None = None
    env_vars: dict[str, str] | None = None
    build_args: dict[str, str] | None = None
    command_override: str | None = None
    keep_alive_with_base_command: bool = False
    network: str | None = None
    ready_command: str | None = None
    devices: list[str] | None = None
    cap_add: list[str] | None = None
    privileged: bool = False
    volumes: list[str] | None = None
    shm_size: str | None = None
    image_tag: str | None = compat_ignored("images are tagged by the digest of their context")
    extra_networks: list[str] | None = compat_ignored(
        "a run's containers share one network already"
    )

    def check(self, bundle: Any) -> list[str]:
        problems = []
        if self.docker_context_artifact_id and self.docker_context_url:
            problems.append("set either docker_context_artifact_id or docker_context_url, not both")
        elif not (self.docker_context_artifact_id or self.docker_context_url):
            problems.append(
                "names no build context: set docker_context_artifact_id (an artifact folder "
                "with a Dockerfile) or docker_context_url"
            )
        if self.command_override and self.keep_alive_with_base_command:
            problems.append("set either command_override or keep_alive_with_base_command, not both")
        if self.docker_context_url and not re.match(r"https?://.+\.zip$", self.docker_context_url):
            problems.append(
                f"docker_context_url: {self.docker_context_url!r} must be an http(s) URL of a .zip"
            )
        if not _NAME.match(self.container_name):
            problems.append(
                f"container_name: {self.container_name!r} must be letters, digits, '_', '.' or "
                "'-' (it is the container's host name on the run's network)"
            )
        path = Path(self.dockerfile_path)
        if path.is_absolute() or ".." in path.parts:
            problems.append(
                f"dockerfile_path: {self.dockerfile_path!r} must be relative to the context"
            )
        if self.docker_context_artifact_id and bundle is not None:
            from agent_env.suggest import did_you_mean

            artifacts = getattr(bundle, "artifacts", {}) or {}
            name = self.docker_context_artifact_id.rstrip("/").rsplit("/", 1)[-1]
            if artifacts and name not in artifacts:
                problems.append(
                    f"docker_context_artifact_id: no artifact {name!r} in the bundle"
                    f"{did_you_mean(name, artifacts)}"
                )
        return problems

    def _refused(self) -> list[str]:
        set_ = [f for f in UNSUPPORTED if getattr(self, f) not in (None, False, [])]
        if self.keep_alive_with_base_command:
            set_.append("keep_alive_with_base_command")
        return set_

    async def execute(self, ctx: StepContext) -> None:
        refused = self._refused()
        if refused:
            raise StepFailed(
                self.id,
                f"{', '.join(refused)}: not supported here (the sandbox interface cannot pass "
                "them to a container); remove them from the step",
            )
        name = self.container_name
        if ctx.get("sandboxes", name) is not None:
            raise StepFailed(
                self.id,
                f"a sandbox named {name!r} already runs in this task; the container is a "
                "sandbox of that name, so give it another container_name",
            )
        host = await ctx.sandbox(self.sandbox_name)
        provider = ctx.sandbox_provider(host.provider)
        if not getattr(provider, "can_build_images", False):
            raise StepFailed(
                self.id,
                f"sandbox {self.sandbox_name!r} runs on provider {host.provider!r}, which cannot "
                'build images; deploy it with "sandbox_type": "docker" (or run with '
                "--sandbox docker)",
            )
        with tempfile.TemporaryDirectory(prefix="agentenv-container-") as tmp:
            context = await self._stage(ctx, Path(tmp))
            try:
                image = await provider.build_image(context, f"container-{self.container_name}")
            except SandboxError as e:
                raise StepFailed(self.id, f"building the image failed: {e}") from None
        ports = [int(p) for p in self.ports or []]
        command: Any = self.command_override or "image"
        network = None
        if self.network:
            network = self.network if self.network in _BUILTIN_NETWORKS else "run"
        try:
            sandbox = await ctx.create_sandbox(
                name,
                SandboxSpec(
                    image=image.tag,
                    env_vars=dict(self.env_vars or {}),
                    ports=tuple(ports),
                    network=network,
                    settings={"command": command, "workdir": image.workdir},
                ),
                provider=host.provider,
            )
        except SandboxError as e:
            raise StepFailed(self.id, f"cannot start container {name!r}: {e}") from None
        if self.ready_command:
            await self._wait_ready(sandbox)
        urls = {str(p): sandbox.url(p) for p in ports}
        ctx.set(
            "containers",
            self.sandbox_name,
            self.container_name,
            value={"sandbox": name, "image": image.tag, "ports": urls, "network": self.network},
        )
        ctx.log(f"container {name!r} running {image.tag}" + (f"; ports {urls}" if urls else ""))

    async def _stage(self, ctx: StepContext, tmp: Path) -> Path:
        """The build context on this host, with the chosen Dockerfile as `Dockerfile`."""
        context = tmp / "context"
        if self.docker_context_url:
            await _download_zip(self.id, self.docker_context_url, tmp / "context.zip", context)
        else:
            handle = artifact_for(ctx, str(self.docker_context_artifact_id))
            if handle.kind == "file":
                raise StepFailed(
                    self.id,
                    f"docker_context_artifact_id {handle.name!r} is one file; a build "
                    "context is a folder with a Dockerfile",
                )
            await anyio.to_thread.run_sync(lambda: shutil.copytree(handle.path, context))
        dockerfile = context / self.dockerfile_path
        if not dockerfile.is_file():
            raise StepFailed(
                self.id, f"no Dockerfile at {self.dockerfile_path!r} inside the build context"
            )
        text = dockerfile.read_text()
        if self.build_args:
            text = with_build_args(text, {k: str(v) for k, v in self.build_args.items()})
        (context / "Dockerfile").write_text(text)
        return context

    async def _wait_ready(self, sandbox: Any) -> None:
        last = ""
        for _ in range(READY_ATTEMPTS):
            done = await sandbox.exec(["sh", "-c", str(self.ready_command)], timeout=30)
            if done.exit_code == 0:
                return
            last = (done.stderr or done.stdout).strip()[-300:]
            await anyio.sleep(READY_INTERVAL)
        raise StepFailed(
            self.id,
            f"container {self.container_name!r} not ready after "
            f"{READY_ATTEMPTS * READY_INTERVAL:g}s: {self.ready_command!r} kept failing"
            + (f" ({last})" if last else ""),
        )


async def _download_zip(step_id: str, url: str, archive: Path, into: Path) -> None:
    import zipfile

    import httpx

    try:
        async with httpx.AsyncClient(timeout=120, follow_redirects=True) as http:
            response = await http.get(url)
            response.raise_for_status()
    except httpx.HTTPError as e:
        raise StepFailed(step_id, f"docker_context_url {url}: {e}") from None
    archive.write_bytes(response.content)
    try:
        with zipfile.ZipFile(archive) as zipped:
            for member in zipped.namelist():
                if member.startswith("/") or ".." in Path(member).parts:
                    raise StepFailed(step_id, f"docker_context_url {url}: unsafe path {member!r}")
            zipped.extractall(into)
    except zipfile.BadZipFile as e:
        raise StepFailed(step_id, f"docker_context_url {url}: not a zip archive: {e}") from None
