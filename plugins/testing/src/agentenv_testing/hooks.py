"""agent-env hooks of agentenv-testing: none. The package is a pytest plugin (`pytest11`); it is
also an agent-env plugin so `agent-env plugin list` shows the installed kit and its API range."""

from __future__ import annotations

#: The kernel plugin API versions this plugin works with.
AGENTENV_PLUGIN_API = ">=1.0,<2"
