"""agent-env's pytest plugin: fixtures for plugin authors and the contract suites.

Loaded automatically through the `pytest11` entry point when agentenv-kernel is installed.
"""

from agent_env.testing.fixtures import (  # noqa: F401 - re-exported as pytest fixtures
    AgentEnvCliRunner,
    agent_env_home,
    agent_env_warnings,
    cli_runner,
    plugin_manager,
    register_plugin,
)
