"""The root command: lazy commands, plugin commands, error lines and exit codes."""

from __future__ import annotations

import json
import sys
import types

import click
import pytest

from agent_env import __version__, hookimpl
from agent_env.errors import ConfigError


@pytest.fixture
def command_module(monkeypatch):
    """A real importable module `agentenv_test_cmds` holding click commands, importable on demand."""
    mod = types.ModuleType("agentenv_test_cmds")

    @click.command()
    @click.argument("text")
    def shout(text):
        """Shout TEXT."""
        click.echo(text.upper() + "!")

    @click.command()
    def fail():
        raise ConfigError("bad thing in config.toml: [run] concurrency")

    @click.command()
    def crash():
        raise RuntimeError("kaboom")

    @click.command()
    def interrupt():
        raise KeyboardInterrupt

    mod.shout, mod.fail, mod.crash, mod.interrupt = shout, fail, crash, interrupt
    monkeypatch.setitem(sys.modules, "agentenv_test_cmds", mod)
    return mod


class CommandsPlugin:
    @hookimpl
    def agentenv_register_commands(self, group):
        for name in ("shout", "fail", "crash", "interrupt"):
            group.add_lazy_command(name, f"agentenv_test_cmds:{name}", f"The {name} command.")
        group.add_lazy_command("ghost", "agentenv_no_such_module:cmd", "Not installed.")


def test_version(cli_runner):
    result = cli_runner.invoke(["--version"])
    assert result.exit_code == 0
    assert result.stdout == f"agent-env {__version__}\n"


def test_help_lists_kernel_and_plugin_commands_without_importing_them(
    cli_runner, register_plugin, monkeypatch
):
    monkeypatch.delitem(sys.modules, "agentenv_test_cmds", raising=False)
    register_plugin(CommandsPlugin(), "cmds")
    result = cli_runner.invoke(["--help"])
    assert result.exit_code == 0, result.output
    for name in ("run", "plugin", "config", "shout", "ghost"):
        assert f"  {name} " in result.stdout
    assert "The shout command." in result.stdout
    assert "agentenv_test_cmds" not in sys.modules


def test_plugin_command_runs(cli_runner, register_plugin, command_module):
    register_plugin(CommandsPlugin(), "cmds")
    result = cli_runner.invoke(["shout", "hi"])
    assert (result.exit_code, result.stdout) == (0, "HI!\n")


def test_missing_command_module_errors_only_when_invoked(cli_runner, register_plugin):
    register_plugin(CommandsPlugin(), "cmds")
    result = cli_runner.invoke(["ghost"])
    assert result.exit_code == 1
    assert result.stderr.startswith(
        "Error: command 'ghost' (from 'cmds') is not available: cannot load 'agentenv_no_such_module:cmd'"
    )
    assert result.stderr.count("\n") == 1


def test_agent_env_error_is_one_line_and_verbose_shows_traceback(
    cli_runner, register_plugin, command_module
):
    register_plugin(CommandsPlugin(), "cmds")
    result = cli_runner.invoke(["fail"])
    assert result.exit_code == 1
    assert result.stderr == "Error: bad thing in config.toml: [run] concurrency\n"
    verbose = cli_runner.invoke(["-v", "fail"])
    assert verbose.exit_code == 1
    assert "Traceback (most recent call last)" in verbose.stderr
    assert verbose.stderr.endswith("Error: bad thing in config.toml: [run] concurrency\n")


def test_unexpected_exception_and_ctrl_c(cli_runner, register_plugin, command_module):
    register_plugin(CommandsPlugin(), "cmds")
    crash = cli_runner.invoke(["crash"])
    assert crash.exit_code == 1
    assert (
        crash.stderr
        == "Error: unexpected RuntimeError: kaboom (a bug; rerun with -v for the traceback)\n"
    )
    interrupted = cli_runner.invoke(["interrupt"])
    assert interrupted.exit_code == 130
    assert "Interrupted." in interrupted.stderr


def test_usage_errors_exit_2_with_suggestion(cli_runner):
    result = cli_runner.invoke(["plugn", "list"])
    assert result.exit_code == 2
    assert "No such command 'plugn' (did you mean 'plugin'?)" in result.stderr
    assert cli_runner.invoke(["plugin", "list", "--jsn"]).exit_code == 2


def test_plugin_cannot_take_a_kernel_command(cli_runner, register_plugin):
    class Hijack:
        @hookimpl
        def agentenv_register_commands(self, group):
            group.add_lazy_command("config", "agentenv_test_cmds:shout", "mine now")

    register_plugin(Hijack(), "hijack")
    result = cli_runner.invoke(["plugin", "list", "--json"])
    assert result.exit_code == 0
    info = {p["name"]: p for p in json.loads(result.stdout)}["hijack"]
    assert info["status"] == "failed"
    assert "command 'config' is already provided by 'agent-env'" in info["errors"][0]
    assert cli_runner.invoke(["config", "show"]).exit_code == 0


def test_disable_plugin_flag_hides_its_commands(cli_runner, register_plugin, command_module):
    register_plugin(CommandsPlugin(), "cmds")
    result = cli_runner.invoke(["--disable-plugin", "cmds", "shout", "x"])
    assert result.exit_code == 2
    assert "No such command 'shout'" in result.stderr


def test_plugin_may_add_an_imported_command_and_a_bad_path_fails_only_it(
    cli_runner, register_plugin
):
    @click.command("hello")
    def hello():
        click.echo("hello from a plugin")

    class Eager:
        @hookimpl
        def agentenv_register_commands(self, group):
            group.add_command(hello)

    class BadPath:
        @hookimpl
        def agentenv_register_commands(self, group):
            group.add_lazy_command("oops", "no_colon_here", "Broken.")

    register_plugin(Eager(), "eager")
    register_plugin(BadPath(), "bad-path")
    result = cli_runner.invoke(["hello"])
    assert (result.exit_code, result.stdout) == (0, "hello from a plugin\n")
    listing = json.loads(cli_runner.invoke(["plugin", "list", "--json"]).stdout)
    by_name = {p["name"]: p for p in listing}
    assert by_name["eager"]["registered"] == {"commands": ["hello"]}
    assert by_name["bad-path"]["status"] == "failed"
    assert "must look like 'module:attribute'" in by_name["bad-path"]["errors"][0]
