"""`install_agent`: run an agent folder of the bundle inside a sandbox that is already up (the
task's container from `run_docker_container`, or a `deploy_sandbox` sandbox) instead of a
sandbox of its own, and record it under `agents.<agent_name>` like `deploy_agent`.

The folder is copied to `workspace_dir` (default: the sandbox's work folder) and its
`agent.toml` `command` is started there, serving A2A on `a2a_port` (default 8000; a container
sandbox must publish it). The existing product runs the agent image's install/v1 commands
instead; an agent is installable here when its folder has a `command`.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from agent_env.context import StepContext
from agent_env.errors import StepFailed
from agent_env.models import Step
from agentenv_core_steps.targets import DEFAULT_AGENT, sandbox_for

INSTALLABLE = "a2a_agent"


@attrs.frozen(kw_only=True)
class InstallAgent(Step):
    """Fields as the existing bundles use them."""

    type: ClassVar[str] = "install_agent"
    bundle_refs: ClassVar[dict[str, tuple[str, ...]]] = {"agent": ("a2a_agent_id",)}

    sandbox_name: str
    container_name: str | None = None
    a2a_agent_id: str | None = None
    a2a_agent_version: int | None = None
    agent_name: str = DEFAULT_AGENT
    a2a_port: int | None = None
    workspace_dir: str | None = None

    def check(self, bundle: Any) -> list[str]:
        # `a2a_agent_id` is checked with every agent reference (`bundles.check`): an agent
        # folder of the bundle or a registered agent kind (a CLI agent installs itself).
        problems = []
        if self.a2a_port is not None and not 0 < self.a2a_port < 65536:
            problems.append(f"a2a_port: {self.a2a_port} is not a TCP port")
        return problems

    async def execute(self, ctx: StepContext) -> None:
        from agentenv_core_steps.agents.folder import load_agent
        from agentenv_core_steps.steps.deploy_agent import DeployAgent, agent_override, run_setting

        # StepFailed naming what is missing when the sandbox or container is not up
        await sandbox_for(ctx, sandbox_name=self.sandbox_name, container_name=self.container_name)
        target = (
            str(ctx.get("containers", self.sandbox_name, self.container_name, "sandbox"))
            if self.container_name
            else self.sandbox_name
        )
        ref = agent_override(ctx) or self.a2a_agent_id or run_setting(ctx, "default")
        if not ref:
            raise StepFailed(
                self.id, "a2a_agent_id: name the agent folder to install (or set [agents] default)"
            )
        stored = await load_agent(
            ctx, ref, self.a2a_agent_version if ref == self.a2a_agent_id else None
        )
        kind_name = stored.type if stored is not None else ref
        if getattr(
            _kind_or_none(ctx, kind_name), "installs_into_sandbox", False
        ):  # a CLI agent kind (agentenv-cli-agents) installs itself into the sandbox
            await DeployAgent(
                id=self.id, a2a_agent_id=ref, agent_name=self.agent_name, sandbox_name=target
            ).execute(ctx)
            ctx.set("agents", self.agent_name, "installed_in", value=target)
            return
        if stored is None:
            raise StepFailed(
                self.id,
                f"{ref!r} is not an agent folder of the bundle; install_agent installs a "
                "folder's agent.toml command into a sandbox (use deploy_agent for agent types)",
            )
        if stored.type != INSTALLABLE or not stored.config.get("command"):
            raise StepFailed(
                self.id,
                f"agent {stored.name!r} (type {stored.type!r}) has no agent.toml `command` to "
                "run inside the sandbox; give it one, or deploy it with deploy_agent",
            )
        settings = {
            k: v
            for k, v in (("port", self.a2a_port), ("workdir", self.workspace_dir))
            if v is not None
        }
        deploy = DeployAgent(
            id=self.id,
            a2a_agent_id=ref,
            a2a_agent_version=self.a2a_agent_version if ref == self.a2a_agent_id else None,
            agent_name=self.agent_name,
            sandbox_name=target,
            metadata=settings,
        )
        await deploy.execute(ctx)
        ctx.set("agents", self.agent_name, "installed_in", value=target)


def _kind_or_none(ctx: StepContext, name: str) -> type | None:
    from agent_env.errors import PluginError

    try:
        return ctx.plugins.agents.get(name)
    except PluginError:
        return None
