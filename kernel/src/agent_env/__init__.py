"""agent-env: build, deploy and run agentic environments and the tasks that grade agents.

This module stays cheap to import: `agent-env --version` and `--help` go through it, so
`hookimpl` (which needs pluggy) and the public plugin interfaces load on first access.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from agent_env._version import __version__

if TYPE_CHECKING:  # pragma: no cover
    from agent_env.agents import AgentKind, AgentSpec, PromptRequest
    from agent_env.engine.runner import Runner
    from agent_env.envs import EnvDeployment, EnvType
    from agent_env.hookspecs import hookimpl
    from agent_env.models import Step, VerifierStep
    from agent_env.plugins.api import PLUGIN_API_VERSION

#: Public name -> the module that defines it (imported on first access).
_LAZY = {
    "hookimpl": "agent_env.hookspecs",
    "PLUGIN_API_VERSION": "agent_env.plugins.api",
    "AgentKind": "agent_env.agents",
    "AgentSpec": "agent_env.agents",
    "PromptRequest": "agent_env.agents",
    "EnvType": "agent_env.envs",
    "EnvDeployment": "agent_env.envs",
    "Step": "agent_env.models",
    "VerifierStep": "agent_env.models",
    "Runner": "agent_env.engine.runner",
}

__all__ = [
    "PLUGIN_API_VERSION",
    "AgentKind",
    "AgentSpec",
    "EnvDeployment",
    "EnvType",
    "PromptRequest",
    "Runner",
    "Step",
    "VerifierStep",
    "__version__",
    "hookimpl",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agent_env' has no attribute {name!r}")
    return getattr(import_module(module), name)
