"""`reset_env`: call a deployed env's data-plane `data/reset` through the run's gateway.
Best effort by default (`fail_task_on_error` false), as the existing bundles expect."""

from __future__ import annotations

from typing import ClassVar

import attrs

from agent_env.context import StepContext
from agent_env.errors import StepFailed
from agent_env.models import Step
from agentenv_core_steps.env_resets import RESET_TIMEOUT, reset_envs
from agentenv_core_steps.envs.folder import env_name
from agentenv_core_steps.gateway import gateway_for

__all__ = ["RESET_TIMEOUT", "ResetEnv", "deployed_env", "reset_envs"]


def deployed_env(ctx: StepContext, env_id: str) -> tuple[str, dict]:
    """(name, `envs.<name>` record) of a deployed env; StepFailed naming the deployed ones."""
    name = env_name(env_id)
    envs = ctx.get("envs", default={}) or {}
    entry = envs.get(name)
    if not isinstance(entry, dict):
        from agent_env.suggest import did_you_mean

        raise StepFailed(
            ctx.step_id,
            f"env {name!r} is not deployed in this task"
            f"{did_you_mean(name, envs)}; deployed: "
            f"{', '.join(sorted(envs)) or 'none'} (add a deploy_env step)",
        )
    return name, entry


@attrs.frozen(kw_only=True)
class ResetEnv(Step):
    type: ClassVar[str] = "reset_env"
    bundle_refs: ClassVar[dict[str, tuple[str, ...]]] = {"env": ("env_id",)}

    fail_task_on_error: bool = False
    env_id: str

    async def execute(self, ctx: StepContext) -> None:
        from agentenv_protocol.errors import ProtocolError

        name, _ = deployed_env(ctx, self.env_id)
        gateway = await gateway_for(ctx)
        try:
            await reset_envs(gateway, [name])
        except (ProtocolError, OSError) as e:
            from agentenv_core_steps.faults import gateway_failure_class

            raise StepFailed(
                self.id,
                f"env {name!r}: data/reset failed: {e or type(e).__name__}",
                failure_class=gateway_failure_class(e) or "env",
            ) from None
        ctx.log(f"env {name!r} reset")
