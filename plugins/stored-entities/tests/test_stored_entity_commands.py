"""The stored-entity commands come with this plugin: without it the kernel names the package
for each of them (and suggests them for a typo); with it registered, a bundle's entities go
into the stores and come back out, and the kernel's toolkit names it builds on resolve."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agent_env
from agent_env.cli import toolkit
from agentenv_stored_entities import hooks as stored_hooks

HELLO = Path(agent_env.__file__).parent / "hello_bundle" / "hello"


@pytest.mark.parametrize("command", sorted(stored_hooks.COMMANDS))
def test_without_the_plugin_each_command_names_it(cli_runner, command):
    result = cli_runner.invoke([command, "list"])
    assert result.exit_code == 2
    assert result.stderr.endswith(
        f"Error: command {command!r} comes with agentenv-stored-entities, which is installed but "
        "not loaded (--no-plugins, or see `agent-env plugin list`)\n"
    )


def test_a_typo_of_one_of_its_commands_gets_a_did_you_mean(cli_runner):
    result = cli_runner.invoke(["artifcat", "list"])
    assert result.exit_code == 2
    assert "No such command 'artifcat' (did you mean 'artifact'?)" in result.stderr


@pytest.fixture
def cli(cli_runner, register_plugin):
    import agentenv_core_steps.hooks

    register_plugin(agentenv_core_steps.hooks, "core-steps")
    register_plugin(stored_hooks, "stored-entities")
    return cli_runner


def test_put_list_show_and_export_round_trip(cli, tmp_path):
    put = cli.invoke(["task", "put", str(HELLO), "--json"])
    assert put.exit_code == 0, put.output
    rows = {(r["kind"], r["name"]): r["version"] for r in json.loads(put.stdout)}
    assert rows[("task", "hello")] == 1 and rows[("artifact", "greeting")] == 1
    again = cli.invoke(["task", "put", str(HELLO)])
    assert "task hello: v1, unchanged" in again.stdout
    listed = json.loads(cli.invoke(["task", "list", "--json"]).stdout)
    (task_id,) = [r["id"] for r in listed["rows"]]
    assert task_id.endswith("/hello")
    shown = json.loads(cli.invoke(["task", "show", task_id, "--json"]).stdout)
    assert shown["kind"] == "task" and shown["version"] == 1
    out = tmp_path / "out"
    exported = cli.invoke(["bundle", "init", str(out), "--from-task", task_id])
    assert exported.exit_code == 0, exported.output
    assert json.loads((out / "tasks" / "hello.json").read_text()) == json.loads(
        (HELLO / "tasks" / "hello.json").read_text()
    )


def test_every_toolkit_name_resolves():
    for name in toolkit.__all__:
        assert getattr(toolkit, name) is not None, name
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        toolkit.nope  # noqa: B018
