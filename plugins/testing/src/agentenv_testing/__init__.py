"""agent-env's test kits for plugin authors: a pytest plugin (`agentenv_testing.fixtures`, loaded
through the `pytest11` entry point when agentenv-testing is installed) with the fixtures, plus the
contract suites every backend, provider and step type subclasses (`agentenv_testing.contracts`)
and helpers (`stores`: the real CLI against a `[stores]` config).

The package is also an agent-env plugin (`agentenv_testing.hooks`), loaded by every command: so
importing it imports neither pytest nor the fixtures; the fixture names resolve from
`agentenv_testing.fixtures` on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Names re-exported from `agentenv_testing.fixtures`, loaded on first use.
FIXTURES = (
    "AgentEnvCliRunner",
    "agent_env_home",
    "agent_env_warnings",
    "cli_runner",
    "plugin_manager",
    "register_plugin",
)

__all__ = list(FIXTURES)


def __getattr__(name: str) -> Any:
    if name in FIXTURES:
        return getattr(importlib.import_module("agentenv_testing.fixtures"), name)
    raise AttributeError(f"module 'agentenv_testing' has no attribute {name!r}")
