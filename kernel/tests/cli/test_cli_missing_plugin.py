"""A command an in-tree plugin provides says which install brings it when that plugin is
missing (the `plugin_manager` fixture loads no entry point: what a kernel-only install sees),
and says the plugin is disabled when it is installed but switched off; a typo still gets
click's "No such command" with a did-you-mean."""

from __future__ import annotations

import pytest

from agent_env.plugins import PluginManager, set_plugin_manager
from agentenv_testing.fixtures import AgentEnvCliRunner


@pytest.mark.parametrize(
    "args, expected",
    [
        (
            ["openenv", "serve", "hello"],
            "command 'openenv' comes with agentenv-openenv, which is installed but not loaded "
            "(--no-plugins, or see `agent-env plugin list`)",
        ),
        (
            ["up", "--port", "0"],
            "command 'up' comes with agentenv-explorer, which is installed but not loaded "
            "(--no-plugins, or see `agent-env plugin list`)",
        ),
        (
            ["runs", "list", "--json"],
            "command 'runs list' comes with agentenv-reporting, which is installed but not "
            "loaded (--no-plugins, or see `agent-env plugin list`)",
        ),
        (
            ["runs", "show", "run-x"],
            "command 'runs show' comes with agentenv-reporting, which is installed but not "
            "loaded (--no-plugins, or see `agent-env plugin list`)",
        ),
        (
            ["runs", "export", "run-x"],
            "command 'runs export' comes with agentenv-reporting, which is installed but not "
            "loaded (--no-plugins, or see `agent-env plugin list`)",
        ),
        (
            ["cache", "list"],
            "command 'cache' comes with agentenv-caches, which is installed but not loaded "
            "(--no-plugins, or see `agent-env plugin list`)",
        ),
        (
            ["runs", "compare", "run-a", "run-b"],
            "command 'runs compare' comes with agentenv-reporting, which is installed but not "
            "loaded (--no-plugins, or see `agent-env plugin list`)",
        ),
    ],
)
def test_a_missing_plugin_command_names_the_install(cli_runner, args, expected):
    result = cli_runner.invoke(args)
    assert result.exit_code == 2
    assert f"Error: {expected}\n" in result.stderr
    assert "No such command" not in result.stderr


def invoke_with_entry_points(args: list[str]):
    """`agent-env ARGS` with a fresh manager loading this venv's real entry points."""
    previous = set_plugin_manager(PluginManager())
    try:
        return AgentEnvCliRunner(None).invoke(args)
    finally:
        set_plugin_manager(previous)


def test_an_installed_but_disabled_plugin_command_says_disabled(agent_env_home, monkeypatch):
    monkeypatch.delenv("AGENT_ENV_DISABLE_PLUGINS", raising=False)
    assert invoke_with_entry_points(["openenv", "--help"]).exit_code == 0  # installed here
    result = invoke_with_entry_points(["--disable-plugin", "agentenv-openenv", "openenv", "serve"])
    assert result.exit_code == 2
    assert (
        "Error: command 'openenv' comes with agentenv-openenv (plugin 'openenv'), which is "
        "disabled (--disable-plugin or AGENT_ENV_DISABLE_PLUGINS)\n"
    ) in result.stderr


def test_a_typo_of_a_plugin_command_is_still_a_typo(cli_runner):
    result = cli_runner.invoke(["opnenv"])
    assert result.exit_code == 2
    assert "No such command 'opnenv' (did you mean" in result.stderr
