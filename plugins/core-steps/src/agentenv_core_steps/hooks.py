"""core-steps plugin hooks: registers the built-in step types (imported only when asked)."""

from agent_env import hookimpl


@hookimpl
def agentenv_register_step_types(registry):
    from agentenv_core_steps.steps import STEP_TYPES

    for cls in STEP_TYPES:
        registry.add(cls)
