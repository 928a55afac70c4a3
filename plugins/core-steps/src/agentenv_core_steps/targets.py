"""Finding the sandbox a step addresses: by `sandbox_name`, an agent's or an env's sandbox.

Deploy steps record `agents.<agent_name>`, `envs.<env name>` and
`containers.<sandbox_name>.<container_name>` in the task state with a `sandbox` key naming
the entry under `sandboxes.<name>` they run in.
"""

from __future__ import annotations

import re
from typing import Any

from agent_env.context import ArtifactHandle, StepContext
from agent_env.errors import StepFailed

DEFAULT_AGENT = "default-agent"
#: A POSIX environment variable name (what `env_vars` keys must be).
POSIX_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _env_entry(ctx: StepContext, env_id: str) -> Any:
    envs = ctx.get("envs", default={}) or {}
    for key in (env_id, env_id.rstrip("/").rsplit("/", 1)[-1]):
        if key in envs:
            return envs[key]
    return None


async def sandbox_for(
    ctx: StepContext,
    *,
    sandbox_name: str | None = None,
    agent_name: str | None = None,
    env_id: str | None = None,
    container_name: str | None = None,
    single_sandbox_fallback: bool = False,
) -> Any:
    """The live sandbox the fields point at; StepFailed naming what is missing. A
    `container_name` on `sandbox_name` is a container `run_docker_container` started."""
    if sandbox_name and container_name:
        entry = ctx.get("containers", sandbox_name, container_name)
        if not isinstance(entry, dict) or not entry.get("sandbox"):
            raise StepFailed(
                ctx.step_id,
                f"no container {container_name!r} on sandbox {sandbox_name!r}; start it with "
                "a run_docker_container step first",
            )
        return await ctx.sandbox(entry["sandbox"])
    if sandbox_name:
        return await ctx.sandbox(sandbox_name)
    if env_id:
        entry = _env_entry(ctx, env_id)
        if not isinstance(entry, dict) or not entry.get("sandbox"):
            raise StepFailed(
                ctx.step_id, f"env {env_id!r} is not deployed in a sandbox in this task"
            )
        return await ctx.sandbox(entry["sandbox"])
    name = agent_name or DEFAULT_AGENT
    entry = (ctx.get("agents", default={}) or {}).get(name)
    if isinstance(entry, dict) and entry.get("sandbox"):
        return await ctx.sandbox(entry["sandbox"])
    sandboxes = ctx.get("sandboxes", default={}) or {}
    if single_sandbox_fallback and not agent_name and len(sandboxes) == 1:
        return await ctx.sandbox(next(iter(sandboxes)))
    raise StepFailed(
        ctx.step_id,
        f"agent {name!r} is not deployed in this task; set sandbox_name to one of: "
        + (", ".join(sorted(sandboxes)) or "none"),
    )


def artifact_for(ctx: StepContext, ref: str) -> ArtifactHandle:
    """The bundle artifact named by `ref` (a bundle name or a full `@...` id)."""
    if ref.startswith("@"):
        name = ref.rstrip("/").rsplit("/", 1)[-1]
        try:
            handle = ctx.artifact(name)
        except StepFailed:
            handle = None
        if handle is not None and handle.id == ref:
            return handle
    return ctx.artifact(ref)
