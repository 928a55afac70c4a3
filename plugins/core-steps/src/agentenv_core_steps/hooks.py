"""core-steps plugin hooks: registers the built-in step types and env types (imported only
when asked), the agent kinds, and stops a task instance's gateway when the instance finishes."""

from agent_env import hookimpl

#: The kernel plugin API versions this plugin works with.
AGENTENV_PLUGIN_API = ">=1.0,<2"

#: `[agents]`: `default` is the agent of a `deploy_agent` that names none (else `tool-loop`);
#: `override` and `model_override` replace every task's choice (`agent-env run --agent/--model`).
CONFIG_SECTIONS = {"agents": {"default": None, "override": None, "model_override": None}}


@hookimpl
def agentenv_register_step_types(registry):
    from agentenv_core_steps.steps import STEP_TYPES
    from agentenv_core_steps.steps.agent_steps import AGENT_STEP_TYPES
    from agentenv_core_steps.steps.env_steps import ENV_STEP_TYPES

    for cls in (*STEP_TYPES, *ENV_STEP_TYPES, *AGENT_STEP_TYPES):
        registry.add(cls)


@hookimpl
def agentenv_register_agents(registry):
    from agentenv_core_steps.agents import agent_kinds

    for cls in agent_kinds():
        registry.add(cls)


@hookimpl
def agentenv_register_env_types(registry):
    from agentenv_core_steps.envs import ENV_TYPES

    for cls in ENV_TYPES:
        registry.add(cls)


@hookimpl
def agentenv_register_cache_kinds(registry):
    from agentenv_core_steps.caches import CACHE_KINDS

    for cls in CACHE_KINDS:
        registry.add(cls)
