"""`load_artifact`: copy bundle artifacts (and downloads) into a sandbox, or seed an env
through its data plane.

A `file` artifact lands at `<destination_path>/<its file name>`, a `fileset` is copied into
`<destination_path>/` with its layout. Without `destination_path`: `/loaded` for a
`sandbox_name` target and `/tmp/file_artifacts` for an agent (as the existing framework does;
the local provider only maps `/app`, so set `destination_path` under `/app` for it).

With `via = "data_plane"` (and `env_id`), the artifacts' files are handed to the env's
`@add_data` handler as one `data/add` request (`seed_parts` says how files become parts): the
env has its data before the step ends, so a later `prompt_agent` sees a seeded env.
"""

from __future__ import annotations

import os
import posixpath
import urllib.parse
from typing import Any, ClassVar

import attrs

from agent_env.aio import to_thread
from agent_env.context import StepContext
from agent_env.errors import SandboxError, StepFailed
from agent_env.models import Step
from agentenv_core_steps.sandbox_paths import WORKDIR, escapes
from agentenv_core_steps.targets import artifact_for, sandbox_for

URL_TIMEOUT = 120.0
VIAS = ("files", "data_plane")


@attrs.frozen(kw_only=True)
class ArtifactRef:
    id: str
    version: int | None = None


@attrs.frozen(kw_only=True)
class LoadArtifact(Step):
    type: ClassVar[str] = "load_artifact"
    bundle_refs: ClassVar[dict[str, tuple[str, ...]]] = {
        "artifact": ("artifact_id", "artifacts[].id"),
        "env": ("env_id",),
    }

    artifact_id: str | None = None
    artifact_version: int | None = None
    artifacts: list[ArtifactRef] | None = None
    urls: list[str | dict[str, str]] | None = None
    destination_path: str | None = None
    sandbox_name: str | None = None
    agent_name: str | None = None
    container_name: str | None = None
    env_id: str | None = None
    env_step_id: str | None = None
    artifact_from_step_id: str | None = None
    collected_artifacts_step_id: str | None = None
    snapshot_after_load: bool | None = None
    #: "files" (copy into the sandbox) or "data_plane" (`data/add` to the env's handler)
    via: str = "files"

    def refs(self) -> list[ArtifactRef]:
        if self.artifacts is not None:
            return list(self.artifacts)
        if self.artifact_id is not None:
            return [ArtifactRef(id=self.artifact_id, version=self.artifact_version)]
        return []

    def check(self, bundle: Any) -> list[str]:
        problems = []
        if self.via not in VIAS:
            from agent_env.suggest import did_you_mean

            problems.append(
                f"via: {self.via!r} is not one of {', '.join(VIAS)}{did_you_mean(self.via, VIAS)}"
            )
        elif self.via == "data_plane":
            return problems + self._data_plane_problems(bundle)
        if self.artifacts is not None and self.artifact_id is not None:
            problems.append("set either artifacts or artifact_id, not both")
        if not (
            self.refs()
            or self.urls
            or self.artifact_from_step_id
            or self.collected_artifacts_step_id
        ):
            problems.append(
                "needs a source: artifact_id, artifacts, urls, artifact_from_step_id or "
                "collected_artifacts_step_id"
            )
        if not (self.sandbox_name or self.agent_name or self.env_id):
            problems.append("needs a target: sandbox_name, agent_name or env_id")
        if self.container_name and not self.sandbox_name:
            problems.append("container_name needs sandbox_name")
        if self.agent_name and self.container_name:
            problems.append("set either agent_name or container_name, not both")
        for ref in self.refs():
            spec = _bundle_artifact(bundle, ref.id)
            if spec is not None and spec.kind == "image":
                problems.append(f"artifact {ref.id!r} is an image; it cannot be loaded as files")
        try:
            _downloads(self.urls or [])
        except ValueError as e:
            problems.append(f"urls: {e}")
        if self.destination_path and escapes(self.destination_path, WORKDIR):
            problems.append(
                f"destination_path: {self.destination_path!r} leads outside the sandbox's work "
                f"folder {WORKDIR}; give an absolute path or one inside it"
            )
        return problems

    def _data_plane_problems(self, bundle: Any) -> list[str]:
        problems = []
        if not self.env_id:
            problems.append('via = "data_plane" needs env_id (the env whose @add_data gets it)')
        for name in ("sandbox_name", "agent_name", "container_name", "destination_path", "urls"):
            if getattr(self, name):
                problems.append(f'{name}: not used with via = "data_plane" (remove it)')
        if not self.refs():
            problems.append('via = "data_plane" needs artifact_id or artifacts')
        for ref in self.refs():
            spec = _bundle_artifact(bundle, ref.id)
            if spec is not None and spec.kind == "image":
                problems.append(f"artifact {ref.id!r} is an image; it cannot be sent as data")
        return problems

    async def _seed(self, ctx: StepContext) -> None:
        """`data/add` of every artifact's files to the env, through the run's gateway."""
        from agentenv_core_steps.gateway import gateway_for
        from agentenv_core_steps.steps.reset_env import deployed_env
        from agentenv_core_steps.steps.seed_parts import parts_for
        from agentenv_protocol.client import EnvClient
        from agentenv_protocol.errors import ProtocolError

        name, _ = deployed_env(ctx, self.env_id or "")
        parts: list[dict[str, Any]] = []
        seeded: list[dict[str, Any]] = []
        for ref in self.refs():
            handle = artifact_for(ctx, ref.id)
            if handle.kind == "file":
                files = [(handle.path.name, handle.path)]
            elif handle.kind == "fileset":
                files = [(rel, handle.path / rel) for rel in _members(handle.path)]
            else:
                raise StepFailed(
                    self.id, f"artifact {ref.id!r} is an {handle.kind}; it cannot be sent as data"
                )
            try:
                mine = await to_thread(parts_for, files, handle.id)
            except (OSError, ValueError) as e:
                raise StepFailed(self.id, f"artifact {ref.id!r}: {e}") from None
            parts += mine
            seeded.append(
                {"id": handle.id, "version": handle.version, "files": [n for n, _ in files]}
            )
        if not parts:
            raise StepFailed(self.id, "the artifacts hold no files to send")
        gateway = await gateway_for(ctx)
        try:
            async with EnvClient(
                f"{gateway.url}/svc/{name}", token=gateway.admin_token, timeout=URL_TIMEOUT
            ) as client:
                await client.add(parts)
        except ProtocolError as e:
            raise StepFailed(
                self.id, f"env {name!r}: data/add failed: {e}", failure_class="env"
            ) from None
        ctx.set("outputs", self.id, value={"seeded": seeded, "env_id": self.env_id})
        ctx.log(f"env {name!r} seeded through its data plane: {len(parts)} part(s)")

    def _destination(self) -> str:
        if self.destination_path:
            return self.destination_path.rstrip("/") or "/"
        return "/loaded" if self.sandbox_name else "/tmp/file_artifacts"

    async def execute(self, ctx: StepContext) -> None:
        if self.via == "data_plane":
            await self._seed(ctx)
            return
        if self.artifact_from_step_id or self.collected_artifacts_step_id:
            raise StepFailed(
                self.id, "artifact_from_step_id / collected_artifacts_step_id are not supported yet"
            )
        sandbox = await sandbox_for(
            ctx,
            sandbox_name=self.sandbox_name,
            agent_name=self.agent_name,
            env_id=self.env_id,
            container_name=self.container_name,
        )
        destination = self._destination()
        loaded: list[dict[str, Any]] = []
        try:
            for ref in self.refs():
                handle = artifact_for(ctx, ref.id)
                if ref.version is not None and ref.version != handle.version:
                    ctx.log(
                        f"artifact {ref.id!r}: loading v{handle.version} (the bundle's), "
                        f"not v{ref.version}"
                    )
                if handle.kind == "file":
                    target = posixpath.join(destination, handle.path.name)
                    await sandbox.copy_in(handle.path, target)
                    files = [target]
                elif handle.kind == "fileset":
                    members = _members(handle.path)
                    if (handle.path / "artifact.toml").exists():
                        for rel in members:
                            await sandbox.copy_in(
                                handle.path / rel, posixpath.join(destination, rel)
                            )
                    else:
                        await sandbox.copy_in(handle.path, destination)
                    files = [posixpath.join(destination, rel) for rel in members]
                else:
                    raise StepFailed(
                        self.id,
                        f"artifact {ref.id!r} is an {handle.kind}; it cannot be loaded as files",
                    )
                loaded.append(
                    {
                        "id": handle.id,
                        "version": handle.version,
                        "destination_path": destination,
                        "files": files,
                    }
                )
                ctx.log(
                    f"artifact {handle.name} v{handle.version} -> {destination} "
                    f"({len(files)} files)"
                )
            for url, filename in _downloads(self.urls or []):
                data = await to_thread(_fetch, url)
                target = posixpath.join(destination, filename)
                await sandbox.write_file(target, data)
                loaded.append({"url": url, "destination_path": destination, "files": [target]})
                ctx.log(f"{url} -> {target} ({len(data)} bytes)")
        except (SandboxError, OSError) as e:
            raise StepFailed(self.id, f"loading into {destination}: {e}") from e
        ctx.set("outputs", self.id, value={"loaded": loaded})


def _members(folder: Any) -> list[str]:
    """Relative POSIX paths of a fileset's files (its `artifact.toml` is not content)."""
    return [
        p.relative_to(folder).as_posix()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.relative_to(folder).as_posix() != "artifact.toml"
    ]


def _bundle_artifact(bundle: Any, ref: str) -> Any:
    artifacts = getattr(bundle, "artifacts", {}) or {}
    name = ref.rstrip("/").rsplit("/", 1)[-1] if ref.startswith("@") else ref
    return artifacts.get(name)


def _downloads(urls: list[Any]) -> list[tuple[str, str]]:
    """Each entry as `(url, file name)`: a bare URL keeps its path's last segment (repeats get
    `-1`, `-2`...), an object `{url, filename}` names its file."""
    out: list[tuple[str, str]] = []
    taken: set[str] = set()
    seen: dict[str, int] = {}
    for entry in urls:
        if isinstance(entry, dict):
            extra = sorted(set(entry) - {"url", "filename"})
            url, filename = entry.get("url"), entry.get("filename")
            if extra:
                raise ValueError(f"entry {entry!r} has unknown keys {extra}")
            if not url or not filename or "/" in filename or filename in (".", ".."):
                raise ValueError(f"entry {entry!r} needs a `url` and a plain `filename`")
        else:
            url = entry
            base = (
                urllib.parse.unquote(os.path.basename(urllib.parse.urlparse(url).path))
                or "downloaded"
            )
            count = seen.get(base, 0)
            seen[base] = count + 1
            if "/" in base or "\\" in base or base in (".", ".."):
                raise ValueError(
                    f"{url!r} would be saved as {base!r}, outside destination_path; "
                    "give it a plain file name: {url, filename}"
                )
            stem, ext = os.path.splitext(base)
            filename = base if count == 0 else f"{stem}-{count}{ext}"
        if filename in taken:
            raise ValueError(f"two entries are saved as {filename!r}")
        taken.add(filename)
        out.append((url, filename))
    return out


def _fetch(url: str) -> bytes:
    import urllib.request  # ~25 ms to import; only steps with `urls` pay for it

    with urllib.request.urlopen(url, timeout=URL_TIMEOUT) as response:
        return response.read()
