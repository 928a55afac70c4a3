"""core-steps plugin hooks: registers the built-in step types, env types and agent kinds by
import path (`catalog`), so each is imported only when a task uses it."""

from agent_env import hookimpl
from agentenv_core_steps.catalog import AGENT_KINDS, ENV_TYPES, STEP_TYPES

#: The kernel plugin API versions this plugin works with.
AGENTENV_PLUGIN_API = ">=1.0,<2"

#: `[agents]`: `default` is the agent of a `deploy_agent` that names none (else `tool-loop`);
#: `override` and `model_override` replace every task's choice (`agent-env run --agent/--model`).
CONFIG_SECTIONS = {"agents": {"default": None, "override": None, "model_override": None}}


@hookimpl
def agentenv_register_step_types(registry):
    for name, target in STEP_TYPES.items():
        registry.add_lazy(name, target)


@hookimpl
def agentenv_register_agents(registry):
    for name, target in AGENT_KINDS.items():
        registry.add_lazy(name, target)


@hookimpl
def agentenv_register_env_types(registry):
    for name, target in ENV_TYPES.items():
        registry.add_lazy(name, target)


@hookimpl
def agentenv_register_cache_kinds(registry):
    from agentenv_core_steps.caches import CACHE_KINDS

    for cls in CACHE_KINDS:
        registry.add(cls)


@hookimpl
def agentenv_step_wrapper(step, ctx):
    # the trigger ledger (what triggers and executors did) follows each step into the record
    if ctx.get("env_trigger_registrations", default=None) is None and (
        getattr(step, "type", None) != "register_env_triggers"
    ):
        return None
    from agentenv_core_steps.triggers.ledger import keeping_ledger

    return keeping_ledger(ctx)
