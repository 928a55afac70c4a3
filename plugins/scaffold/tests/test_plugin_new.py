"""`agent-env plugin new`: the names a scaffold derives, its refusals, and a created package
whose own tests pass as created. End to end (built and installed): tests/test_plugin_lifecycle.py."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agent_env.errors import PluginError
from agentenv_scaffold import hooks as scaffold_hooks
from agentenv_scaffold.plugin import names, scaffold


def test_scaffold_names_and_refusals(tmp_path):
    values = names("agentenv-my_greeter")
    assert (values["dist"], values["module"], values["plugin"], values["step"], values["Step"]) == (
        "agentenv-my-greeter",
        "agentenv_my_greeter",
        "my-greeter",
        "my_greeter",
        "MyGreeter",
    )
    with pytest.raises(PluginError, match="is not a distribution name"):
        names("9lives")
    with pytest.raises(PluginError, match="agent-env's own distribution"):
        names("agentenv-kernel")
    (tmp_path / "agentenv-taken").mkdir()
    (tmp_path / "agentenv-taken" / "x").write_text("")
    with pytest.raises(PluginError, match="already exists and is not empty"):
        scaffold("agentenv-taken", tmp_path)


def test_without_the_plugin_the_commands_name_it(cli_runner, tmp_path):
    for command, args in (("plugin new", ["agentenv-greet"]), ("init", ["bundle", "demo"])):
        result = cli_runner.invoke([*command.split(), *args, "--dir", str(tmp_path / "out")])
        assert result.exit_code == 2
        assert result.stderr.endswith(
            f"Error: command {command!r} comes with agentenv-scaffold, which is installed but "
            "not loaded (--no-plugins, or see `agent-env plugin list`)\n"
        )
    assert not (tmp_path / "out").exists()


def test_plugin_new_creates_a_package_whose_tests_pass(cli_runner, register_plugin, tmp_path):
    register_plugin(scaffold_hooks, "scaffold")
    result = cli_runner.invoke(["plugin", "new", "agentenv-greet", "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    root = tmp_path / "agentenv-greet"
    assert f"created {root}" in result.stdout
    # the hint runs the scaffold's tests with agent-env's own interpreter, not the shell's pytest
    assert f"next: cd {root} && {sys.executable} -m pytest" in result.stdout
    hooks = (root / "src" / "agentenv_greet" / "hooks.py").read_text()
    assert 'AGENTENV_PLUGIN_API = ">=1.0,<2"' in hooks
    assert 'greet = "agentenv_greet.hooks"' in (root / "pyproject.toml").read_text()
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "11 passed" in tests.stdout
