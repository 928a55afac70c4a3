"""Env types (`mcp_server`, `computer_driver`: each an `agent_env.envs.EnvType`), where
their files come from (the stores), the interpreter or image they run with, and the protocol
wheel built from the checkout.
`agentenv_core_steps.catalog.ENV_TYPES` is what the hook registers."""
