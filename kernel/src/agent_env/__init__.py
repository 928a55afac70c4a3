"""agent-env: build, deploy and run agentic environments and the tasks that grade agents.

This module stays cheap to import: `agent-env --version` and `--help` go through it.
"""

from agent_env._version import __version__
from agent_env.hookspecs import hookimpl

__all__ = ["__version__", "hookimpl"]
