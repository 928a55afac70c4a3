"""Env types (`mcp_server`, an `agent_env.envs.EnvType`), where their files come from (the stores), the interpreter or image
they run with, and the protocol wheel built from the checkout; `ENV_TYPES` is what the hook
registers."""

from agentenv_core_steps.envs.mcp_server import McpServerEnv

ENV_TYPES = (McpServerEnv,)

__all__ = ["ENV_TYPES", "McpServerEnv"]
