"""agent-env's test kits for plugin authors: a pytest plugin (loaded through the `pytest11`
entry point when agentenv-testing is installed) with the fixtures, plus the contract suites
every backend, provider and step type subclasses (`agentenv_testing.contracts`, loaded on first
use) and helpers (`require`: skip locally, fail on CI; `stores`: the real CLI against a
`[stores]` config).
"""

from agentenv_testing.fixtures import (  # noqa: F401 - re-exported as pytest fixtures
    AgentEnvCliRunner,
    agent_env_home,
    agent_env_warnings,
    cli_runner,
    plugin_manager,
    register_plugin,
)
