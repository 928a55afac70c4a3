"""`collect_artifacts`: copy files out of a sandbox into the stores as a new version of a
`file_artifact_universe` entity, with lineage to the run (its content names the run, task
instance and step).

Where from (mutually exclusive): the agent's sandbox (default, `agent_name`), an env's sandbox
(`env_id`), a sandbox (`sandbox_name`) or a container on it (`container_name`). Which paths, in
priority order: the manifest a prompt step produced (`manifest_step_id`: its
`structured_output.artifacts`, or a JSON response `{"artifacts": {name: absolute path}}`), the
seed's `artifacts_key` (comma-separated), `artifact_paths`, else every file under `base_path`.
Relative entries join `base_path`; absolute ones are stored under their path minus the leading
`/`; URL entries (`x://`) are skipped, and so are missing files.
"""

from __future__ import annotations

import hashlib
import json
import mimetypes
import posixpath
import re
import shlex
from typing import Any, ClassVar

import attrs

from agent_env.context import StepContext
from agent_env.errors import SandboxError, StepFailed
from agent_env.models import Step
from agentenv_core_steps.targets import DEFAULT_AGENT, sandbox_for

KIND = "file_artifact_universe"
OBJECT_PREFIX = "collected_artifacts"
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


@attrs.frozen(kw_only=True)
class CollectArtifacts(Step):
    """Fields as the existing bundles use them."""

    type: ClassVar[str] = "collect_artifacts"
    bundle_refs: ClassVar[dict[str, tuple[str, ...]]] = {"env": ("env_id",)}

    agent_name: str = DEFAULT_AGENT
    base_path: str = "/app/artifact"
    artifacts_key: str = "expected_artifacts"
    artifact_paths: list[str] = attrs.field(factory=list)
    env_id: str | None = None
    manifest_step_id: str | None = None
    exclude_basenames: list[str] | None = None
    sandbox_name: str | None = None
    container_name: str | None = None
    universe_id_suffix: str | None = None

    def check(self, bundle: Any) -> list[str]:
        problems = []
        if self.container_name and not self.sandbox_name:
            problems.append("container_name needs sandbox_name")
        if self.env_id and self.sandbox_name:
            problems.append("collect from env_id or sandbox_name, not both")
        if not self.base_path.startswith("/"):
            problems.append(f"base_path must be absolute, got {self.base_path!r}")
        return problems

    @property
    def base(self) -> str:
        return self.base_path.rstrip("/") or "/"

    def _manifest(self, ctx: StepContext) -> dict[str, str] | None:
        if not self.manifest_step_id:
            return None
        output = ctx.get("outputs", self.manifest_step_id, default=None) or {}
        manifest = (output.get("structured_output") or {}).get("artifacts")
        if manifest is None and isinstance(output.get("response"), str):
            try:
                manifest = json.loads(output["response"]).get("artifacts")
            except (ValueError, AttributeError):
                manifest = None
        if not isinstance(manifest, dict):
            ctx.log(f"manifest step {self.manifest_step_id!r} produced no artifacts map")
            return None
        return {
            str(k): v
            for k, v in manifest.items()
            if isinstance(v, str) and v.startswith("/") and not any(c in v for c in "*?[")
        }

    def _entries(self, ctx: StepContext) -> list[tuple[str, str]] | None:
        """(key, sandbox path) pairs, or None to enumerate `base_path`."""
        manifest = self._manifest(ctx)
        if manifest:
            return list(manifest.items())
        seeded = (ctx.get("seed", default={}) or {}).get(self.artifacts_key)
        paths = (
            [p.strip() for p in seeded.split(",") if p.strip()]
            if isinstance(seeded, str)
            else list(self.artifact_paths)
        )
        if not paths:
            return None
        out = []
        for path in paths:
            if _URL.match(path):
                ctx.log(f"skipped {path!r}: a URL, not a file in the sandbox")
                continue
            if path.startswith("/"):
                out.append((path.lstrip("/"), path))
            else:
                out.append((path, posixpath.join(self.base, path)))
        return out

    async def _enumerate(self, sandbox: Any) -> list[tuple[str, str]]:
        result = await sandbox.exec(
            f"cd {shlex.quote(self.base)} 2>/dev/null && find . -type f", timeout=60
        )
        rels = sorted(line[2:] for line in result.stdout.splitlines() if line.startswith("./"))
        return [(rel, posixpath.join(self.base, rel)) for rel in rels]

    async def execute(self, ctx: StepContext) -> None:
        sandbox = await sandbox_for(
            ctx,
            sandbox_name=self.sandbox_name,
            agent_name=None if (self.sandbox_name or self.env_id) else self.agent_name,
            env_id=self.env_id,
            container_name=self.container_name,
        )
        entries = self._entries(ctx)
        if entries is None:
            entries = await self._enumerate(sandbox)
        excluded = set(self.exclude_basenames or [])
        universe = f"{ctx.get('universe_id', default=None) or ctx.task_instance_id}"
        universe += self.universe_id_suffix or ""
        files: dict[str, dict[str, Any]] = {}
        urls: dict[str, str] = {}
        failed: list[str] = []
        for key, path in entries:
            if posixpath.basename(path) in excluded:
                continue
            try:
                data = await sandbox.read_file(path)
            except FileNotFoundError:
                ctx.log(f"skipped {path}: not found")
                continue
            except (SandboxError, OSError) as e:
                failed.append(f"{path}: {e}")
                continue
            digest = hashlib.sha256(data).hexdigest()
            object_key = f"{OBJECT_PREFIX}/{universe}/{digest}/{posixpath.basename(path)}"
            try:
                await ctx.stores.objects.put(object_key, data)
            except Exception as e:  # noqa: BLE001 - any store failure fails the file
                failed.append(f"{path}: upload failed: {e}")
                continue
            content_type = mimetypes.guess_type(path)[0] or "application/octet-stream"
            files[key] = {
                "path": path,
                "object_key": object_key,
                "sha256": digest,
                "size": len(data),
                "content_type": content_type,
            }
            urls[key] = f"object://{object_key}"
        version = None
        if files:
            content = {
                "files": files,
                "run_id": ctx.run_id,
                "task_id": ctx.task_id,
                "task_instance_id": ctx.task_instance_id,
                "step_id": self.id,
            }
            digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()
            put = await ctx.stores.entities.put(
                KIND,
                universe,
                content,
                digest=f"sha256:{digest}",
                files={k: f["sha256"] for k, f in files.items()},
            )
            version = {"id": universe, "version": put.version}
            ctx.log(f"collected {len(files)} file(s) -> {KIND} {universe} {put.describe()}")
        for key, url in urls.items():
            ctx.set("artifacts", key, value=url)
        ctx.set(
            "collected_artifacts",
            self.id,
            value={"artifacts": urls, "file_artifact_universe": version},
        )
        ctx.set("file_artifact_universe", value=version)
        if failed:
            raise StepFailed(
                self.id,
                f"{len(failed)} artifact(s) exist in the sandbox but could not be collected: "
                + "; ".join(failed[:5]),
            )
        if entries and not files:
            raise StepFailed(
                self.id,
                f"none of the {len(entries)} artifact path(s) exists in the sandbox: "
                + ", ".join(p for _, p in entries[:5]),
            )
