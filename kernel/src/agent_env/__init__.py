"""agent-env: build, deploy and run agentic environments and the tasks that grade agents.

This module stays cheap to import: `agent-env --version` and `--help` go through it, so
`hookimpl` (which needs pluggy) is loaded on first access.
"""

from typing import TYPE_CHECKING, Any

from agent_env._version import __version__

if TYPE_CHECKING:  # pragma: no cover
    from agent_env.hookspecs import hookimpl
    from agent_env.plugins.api import PLUGIN_API_VERSION

__all__ = ["PLUGIN_API_VERSION", "__version__", "hookimpl"]


def __getattr__(name: str) -> Any:
    if name == "hookimpl":
        from agent_env.hookspecs import hookimpl

        return hookimpl
    if name == "PLUGIN_API_VERSION":
        from agent_env.plugins.api import PLUGIN_API_VERSION

        return PLUGIN_API_VERSION
    raise AttributeError(f"module 'agent_env' has no attribute {name!r}")
