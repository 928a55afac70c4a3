"""`snapshot_env`: save a deployed env's state, read through its data plane (`data/get`, via the
run's gateway), as a new version of an `env_snapshot` entity in the stores.

The parts are stored content-addressed in the object store (`snapshots/<sha256>.json`); the
entity (`snapshot_id`, default `<bundle>/<env>-snapshot-<step id>`) gets a new version only
when they changed. `include_env_trajectory` adds the gateway's calls to that env. The entity
id and version are kept under `env_snapshotted_universes.<step id>`.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any, ClassVar

import anyio
import attrs

from agent_env.context import StepContext
from agent_env.errors import StepFailed
from agent_env.models import Step, compat_ignored
from agentenv_core_steps.gateway import gateway_for
from agentenv_core_steps.steps.reset_env import deployed_env

KIND = "env_snapshot"


@attrs.frozen(kw_only=True)
class SnapshotEnv(Step):
    """Fields as the existing bundles use them; the env is `env_id`, else the one deployed by
    `env_step_id`, else the task's only env."""

    type: ClassVar[str] = "snapshot_env"
    bundle_refs: ClassVar[dict[str, tuple[str, ...]]] = {"env": ("env_id",)}

    env_id: str | None = None
    env_step_id: str | None = None
    snapshot_id: str | None = None
    export_timeout_seconds: int = 600
    include_env_trajectory: bool = False
    env_instance_id: str | None = compat_ignored(
        "a task's envs are addressed by env_id or env_step_id"
    )
    gateway_url: str | None = compat_ignored("the snapshot is read through the run's own gateway")
    original_universe_artifact_id: str | None = compat_ignored(
        "snapshots carry no universe metadata"
    )
    include_env_changes: bool = compat_ignored(
        "the change log extension (urn:agentenv:changes/v1) is not supported", default=False
    )

    def check(self, bundle: Any) -> list[str]:
        if self.export_timeout_seconds <= 0:
            return ["export_timeout_seconds: must be positive"]
        return []

    def _env_name(self, ctx: StepContext) -> str:
        if self.env_id:
            return deployed_env(ctx, self.env_id)[0]
        envs = {n: e for n, e in (ctx.get("envs", default={}) or {}).items() if isinstance(e, dict)}
        if self.env_step_id:
            envs = {n: e for n, e in envs.items() if e.get("deployed_by") == self.env_step_id}
        if len(envs) == 1:
            return next(iter(envs))
        where = f" by step {self.env_step_id!r}" if self.env_step_id else ""
        raise StepFailed(
            self.id,
            f"{len(envs)} envs deployed{where} ({', '.join(sorted(envs)) or 'none'}); "
            "set env_id to the one to snapshot",
        )

    async def execute(self, ctx: StepContext) -> None:
        from agentenv_protocol import METHOD_GET
        from agentenv_protocol.client import EnvClient
        from agentenv_protocol.errors import MethodNotFound, ProtocolError

        name = self._env_name(ctx)
        record = ctx.get("envs", name)
        gateway = await gateway_for(ctx)
        timeout = float(self.export_timeout_seconds)
        try:
            async with EnvClient(
                f"{gateway.url}/svc/{name}", token=gateway.admin_token, timeout=timeout
            ) as client:
                result = await client.rpc(METHOD_GET, {}, timeout=timeout)
        except MethodNotFound:
            raise StepFailed(
                self.id,
                f"env {name!r} serves no data/get, so its state cannot be snapshotted "
                "(give the env a @get_data handler)",
                failure_class="env",
            ) from None
        except ProtocolError as e:
            from agentenv_core_steps.faults import gateway_failure_class

            raise StepFailed(
                self.id,
                f"env {name!r}: data/get failed: {e}",
                failure_class=gateway_failure_class(e) or "env",
            ) from None
        parts = (result or {}).get("parts") or []
        doc: dict[str, Any] = {"env": name, "parts": parts}
        if self.include_env_trajectory:
            doc["trajectory"] = [c for c in gateway.calls() if c.get("env") == name]
        data = json.dumps(ctx.redact(doc), sort_keys=True, default=str).encode()
        digest = hashlib.sha256(data).hexdigest()
        key = f"snapshots/{digest}.json"
        await ctx.stores.objects.put(key, data)
        entity_id = self.snapshot_id or f"{ctx.task_id.rsplit('/', 1)[0]}/{name}-snapshot-{self.id}"
        content = {
            "env": name,
            "env_entity": record.get("env"),
            "env_version": record.get("version"),
            "object_key": key,
            "parts": len(parts),
            "taken_by": self.id,
            "taken_at": time.time(),
        }
        with anyio.fail_after(timeout):
            put = await ctx.stores.entities.put(KIND, entity_id, content, digest=f"sha256:{digest}")
        ctx.set(
            "env_snapshotted_universes",
            self.id,
            value={"id": entity_id, "version": put.version, "object_key": key},
        )
        ctx.log(
            f"env {name!r} snapshot: {len(parts)} part(s) -> {KIND} {entity_id} {put.describe()}"
        )
