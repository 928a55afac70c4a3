"""`deploy_agent`: deploy an agent for the task and record it under `agents.<agent_name>`.

Which agent: `agent-env run --agent NAME` (`ctx.agent_override`, else config `[agents]
override`) wins, else the step's `a2a_agent_id`, else `[agents] default`, else `tool-loop`. A name is an agent folder of the
bundle (its `agent.toml` `type`, default `a2a_agent`) or a registered agent type (`scripted`,
`oracle`, `tool-loop`, `a2a_agent`, ...). The agent gets the run gateway's MCP endpoint with a
token bound to its `role` (default: the agent name), its `env_vars`, system prompt and model.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs

from agent_env.context import StepContext
from agent_env.errors import PluginError, SandboxError, StepFailed
from agent_env.models import RunOverride, Step
from agentenv_core_steps.steps.add_skills import Skill
from agentenv_core_steps.targets import DEFAULT_AGENT, POSIX_NAME, artifact_for

DEFAULT_KIND = "tool-loop"


def run_setting(ctx: StepContext, key: str, section: str = "agents") -> Any:
    """`[agents] <key>` from the config, None when unset."""
    config = getattr(ctx, "config", None)
    return None if config is None else config.get(section, key)


def agent_override(ctx: StepContext) -> str | None:
    """The run's `--agent`, else the config's `[agents] override`."""
    return ctx.agent_override or run_setting(ctx, "override")


def model_override(ctx: StepContext) -> str | None:
    """The run's `--model`, else the config's `[agents] model_override`."""
    return ctx.model_override or run_setting(ctx, "model_override")


def agent_and_model(agents: Mapping[str, Any]) -> dict[str, str | None]:
    """`agent` and `model` for the run record (and the trial export): what the deployed agents
    were (`kind` or `kind:ref`, comma-joined when several)."""
    kinds: list[str] = []
    models: list[str] = []
    for info in agents.values():
        if not isinstance(info, Mapping):
            continue
        kind, ref = info.get("type"), info.get("ref")
        label = f"{kind}:{ref}" if kind and ref and ref != kind else kind
        if label and label not in kinds:
            kinds.append(label)
        if info.get("model") and info["model"] not in models:
            models.append(info["model"])
    return {"agent": ", ".join(kinds) or None, "model": ", ".join(models) or None}


@attrs.frozen(kw_only=True)
class DeployAgent(Step):
    type: ClassVar[str] = "deploy_agent"
    bundle_refs: ClassVar[dict[str, tuple[str, ...]]] = {
        "env": ("env_ids[]",),
        "agent": ("a2a_agent_id",),
        "artifact": ("agent_snapshot_files_artifact_id",),
    }
    run_overrides: ClassVar[dict[str, RunOverride]] = {"provider": RunOverride(("sandbox_type",))}

    env_ids: list[str] = attrs.field(factory=list)
    env_step_id: str | None = None
    a2a_agent_id: str | None = None
    a2a_agent_version: int | None = None
    agent_name: str = DEFAULT_AGENT
    agent_description: str | None = None
    env_vars: dict[str, str] = attrs.field(factory=dict)
    skills: list[Skill] = attrs.field(factory=list)
    system_prompt: str | None = None
    disk_size_gb: float | None = None
    litellm_base_url: str | None = None
    sandbox_type: str | None = None
    ttl_seconds: int | None = None
    cpu: float | None = None
    memory_mb: int | None = None
    agent_snapshot_files_artifact_id: str | None = None
    agent_snapshot_files_artifact_version: int | None = None
    agent_snapshot_target_context_id: str | None = None
    priority: int | None = None
    network_policy: dict[str, Any] | None = None
    role: str | None = None
    enable_agent_changelog: bool = False
    agent_changelog_object_url: str | None = None
    agent_changelog_s3_prefix: str | None = None
    agent_changelog_toolcall_position_exclusive: int | None = None
    sandbox_name: str | None = None
    enable_docker: bool = False
    metadata: dict[str, Any] = attrs.field(factory=dict)

    def check(self, bundle: Any) -> list[str]:
        problems = [
            f"env_vars: {k!r} is not a valid environment variable name"
            for k in self.env_vars
            if not POSIX_NAME.match(str(k))
        ]
        problems += [
            f"env_vars.{k}: must be a string"
            for k, v in self.env_vars.items()
            if not isinstance(v, str)
        ]
        solution = self.metadata.get("solution")
        if isinstance(solution, (list, dict)):
            from agentenv_core_steps.agents.scripted import parse_solution

            try:
                parse_solution(solution, "metadata.solution")
            except ValueError as e:
                problems.append(str(e))
        elif isinstance(solution, str):
            artifacts = getattr(bundle, "artifacts", {}) or {}
            name = solution.rstrip("/").rsplit("/", 1)[-1]
            if name not in artifacts:
                from agent_env.suggest import did_you_mean

                problems.append(
                    f"metadata.solution: no artifact {name!r} in the bundle"
                    f"{did_you_mean(name, artifacts)}"
                )
        elif solution is not None:
            problems.append(
                "metadata.solution: a list of turns, {'turns': [...]}, or an artifact name"
            )
        return problems

    def has_solution(self) -> bool:
        """True when the task ships a solution for the oracle."""
        return self.metadata.get("solution") is not None

    def _refuse_unisolated(self, ctx: StepContext, agent: str) -> None:
        """Fail before an untrusted agent starts when it or an env of the task runs on
        `local` and local sandboxes cannot be isolated (unless the user opted out)."""
        envs = ctx.get("envs", default={}) or {}
        used: list[Any] = [self.sandbox_type or ctx.default_provider]
        used += [e.get("provider") for e in envs.values() if isinstance(e, dict)]
        if not any(str(p or "").split(",")[0].strip() == "local" for p in used):
            return
        provider = ctx.sandbox_provider("local")
        refuse = getattr(provider, "refuse_untrusted", None)
        if refuse is None:
            return
        try:
            refuse(agent)
        except SandboxError as e:
            raise StepFailed(self.id, str(e), failure_class="infrastructure") from None

    async def execute(self, ctx: StepContext) -> None:
        from agent_env.agents import AgentSpec
        from agentenv_core_steps.agents.folder import (
            known_agents,
            load_agent,
            unknown_agent_message,
        )

        t0 = time.perf_counter()
        name = self.agent_name
        if ctx.get("agents", name) is not None:
            raise StepFailed(self.id, f"agent {name!r} is already deployed in this task")
        ref = (
            agent_override(ctx) or self.a2a_agent_id or run_setting(ctx, "default") or DEFAULT_KIND
        )
        stored = await load_agent(
            ctx, ref, None if ref != self.a2a_agent_id else self.a2a_agent_version
        )
        kind_name = stored.type if stored is not None else ref
        try:
            kind_cls = ctx.plugins.agents.get(kind_name)
        except PluginError:
            kinds = list(ctx.plugins.agents.names())
            if stored is not None:
                raise StepFailed(
                    self.id,
                    f"agent folder {stored.name!r} has type {kind_name!r}, which no "
                    f"plugin registers; agent types: {', '.join(kinds)}",
                ) from None
            raise StepFailed(
                self.id, unknown_agent_message(ref, await known_agents(ctx), kinds)
            ) from None
        kind = kind_cls()
        # an oracle replays the answer key: nothing to hide; an A2A agent built from its
        # Dockerfile in a sandbox of its own runs in a container, never as a host process
        # (`agents.placement`)
        contained = (
            kind_name == "a2a_agent"
            and stored is not None
            and stored.folder is not None
            and (stored.folder / "Dockerfile").is_file()
            and not (stored.config or {}).get("url")
            and (self.sandbox_name or "") not in (ctx.get("sandboxes", default={}) or {})
        )
        if not kind.needs_solution and not contained:
            self._refuse_unisolated(ctx, kind_name if stored is None else ref)
        settings = {
            **(stored.config if stored else {}),
            **{k: v for k, v in self.metadata.items() if k != "solution"},
        }
        role = self.role or name
        mcp_url = token = None
        envs = ctx.get("envs", default={}) or {}
        scope = [e.rstrip("/").rsplit("/", 1)[-1] for e in self.env_ids]
        missing = [e for e, name in zip(self.env_ids, scope, strict=True) if name not in envs]
        if missing:
            raise StepFailed(
                self.id,
                f"env_ids names env(s) not deployed in this task: {', '.join(missing)}; "
                f"deployed: {', '.join(sorted(envs)) or 'none'}",
                failure_class="env",
            )
        if envs:
            from agentenv_core_steps.gateway import gateway_for, issue_token

            gateway = await gateway_for(ctx)
            # the token reaches only the envs the step names (every env when it names none)
            mcp_url = gateway.mcp_url
            token = issue_token(ctx, gateway, role, scope or None)
        model = model_override(ctx) or settings.get("model") or run_setting(ctx, "default", "model")
        spec = AgentSpec(
            name=name,
            role=role,
            settings=settings,
            folder=stored.folder if stored else None,
            folder_id=stored.entity_id if stored else None,
            env_vars={str(k): str(v) for k, v in self.env_vars.items()},
            system_prompt=self.system_prompt or settings.get("system_prompt"),
            model=model,
            model_base_url=self.litellm_base_url,
            mcp_url=mcp_url,
            token=token,
            sandbox_name=self.sandbox_name or f"agent:{name}",
            sandbox_provider=self.sandbox_type,
            solution=await self._solution(ctx) if kind.needs_solution else None,
            step_id=self.id,
        )
        record = await kind.deploy(ctx, spec)
        record.update(
            type=kind_name,
            ref=ref,
            role=role,
            model=model,
            system_prompt=spec.system_prompt,
            env_vars=spec.env_vars,
            mcp_url=record.get("mcp_url") or mcp_url,
            env_scope=scope or None,
            folder=spec.folder_id,
            deployed_by=self.id,
        )
        ctx.set("agents", name, value=record)
        ctx.record_fields(**agent_and_model(ctx.get("agents", default={}) or {}))
        where = f" at {record['url']}" if record.get("url") else ""
        ctx.log(
            f"agent {name!r} ({kind_name}{', ' + ref if ref != kind_name else ''}) ready{where} "
            f"in {time.perf_counter() - t0:.2f}s; role {role!r}"
        )

    async def _solution(self, ctx: StepContext) -> Any:
        solution = self.metadata.get("solution")
        if not isinstance(solution, str):
            return solution
        handle = artifact_for(ctx, solution)
        path = handle.path
        if handle.kind != "file":
            files = sorted(p for p in path.rglob("*.json") if p.is_file())
            if len(files) != 1:
                raise StepFailed(
                    self.id, f"solution artifact {handle.name!r} must hold one JSON file"
                )
            path = files[0]
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise StepFailed(
                self.id, f"solution artifact {handle.name!r} is not JSON: {e}"
            ) from None
