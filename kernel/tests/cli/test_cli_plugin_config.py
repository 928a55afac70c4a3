"""`agent-env plugin list|show|check` and `agent-env config show`."""

from __future__ import annotations

import json
import os
from typing import ClassVar

import attrs
import pytest

from agent_env import hookimpl
from agent_env.models import Step


@attrs.frozen(kw_only=True)
class Echo(Step):
    type: ClassVar[str] = "echo"


class EchoPlugin:
    CONFIG_SECTIONS = {"echo": {"loud": False}}

    @hookimpl
    def agentenv_register_step_types(self, registry):
        registry.add(Echo)

    @hookimpl
    def agentenv_register_commands(self, group):
        group.add_lazy_command("echo", "agentenv_echo_cli:echo", "Echo.")


class EchoAgain:
    @hookimpl
    def agentenv_register_step_types(self, registry):
        registry.add(Echo)


def test_plugin_list_table_and_json(cli_runner, register_plugin):
    register_plugin(EchoPlugin(), "echo", dist="agentenv-echo")
    result = cli_runner.invoke(["plugin", "list"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["NAME", "DISTRIBUTION", "VERSION", "STATUS", "REGISTERED"]
    echo = next(line for line in lines if line.startswith("echo "))
    assert "agentenv-echo" in echo and " ok " in echo
    assert "step_types: echo" in echo and "commands: echo" in echo
    data = {
        p["name"]: p for p in json.loads(cli_runner.invoke(["plugin", "list", "--json"]).stdout)
    }
    assert data["echo"]["registered"] == {"step_types": ["echo"], "commands": ["echo"]}
    assert data["echo"]["config_sections"] == {"echo": {"loud": False}}
    assert data["local-stores"]["registered"]["stores"] == [
        "document:sqlite",
        "object:filesystem",
        "secret:env",
    ]


class SourceOnly:
    @hookimpl
    def agentenv_resolve_bundle_source(self, spec):
        return None


def test_plugin_list_names_hooks_that_register_nothing(cli_runner, register_plugin):
    # a bundle source registers nothing: its row names the hook instead of staying empty
    register_plugin(SourceOnly(), "src", dist="agentenv-src")
    lines = cli_runner.invoke(["plugin", "list"]).stdout.splitlines()
    row = next(line for line in lines if line.startswith("src "))
    assert row.split()[3:] == ["ok", "hooks:", "resolve_bundle_source"], row


def test_plugin_show(cli_runner, register_plugin):
    register_plugin(EchoPlugin(), "echo", dist="agentenv-echo")
    result = cli_runner.invoke(["plugin", "show", "agentenv-echo"])
    assert result.exit_code == 0, result.output
    fields = dict(line.split("  ", 1) for line in result.stdout.splitlines())
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    assert fields["status"] == "ok"
    assert fields["distribution"] == "agentenv-echo"
    assert fields["step_types"] == "echo"
    assert fields["commands"] == "echo"
    assert fields["config [echo]"] == "loud"
    missing = cli_runner.invoke(["plugin", "show", "ecko"])
    assert missing.exit_code == 1
    assert "Error: no plugin named 'ecko' (did you mean 'echo'?)" in missing.stderr
    prefix = cli_runner.invoke(["plugin", "show", "ech"])
    assert prefix.exit_code == 1
    assert "Error: no plugin named 'ech' (did you mean 'echo'?)" in prefix.stderr
    as_json = json.loads(cli_runner.invoke(["plugin", "show", "echo", "--json"]).stdout)
    assert as_json["hooks"] == ["agentenv_register_commands", "agentenv_register_step_types"]


def test_plugin_show_of_a_distribution_with_several_plugins_names_them(cli_runner):
    # agentenv-kernel carries the built-in local plugins: the error names them
    result = cli_runner.invoke(["plugin", "show", "agentenv-kernel"])
    assert result.exit_code == 1
    assert "Error: distribution 'agentenv-kernel' carries 3 plugins: " in result.stderr
    assert "local-sandbox" in result.stderr and "name one of them" in result.stderr


def test_plugin_check_ok_then_duplicate(cli_runner, register_plugin):
    register_plugin(EchoPlugin(), "echo")
    ok = cli_runner.invoke(["plugin", "check"])
    assert ok.exit_code == 0, ok.output
    assert ok.stdout.startswith("ok: ")
    register_plugin(EchoAgain(), "echo-again")
    bad = cli_runner.invoke(["plugin", "check"])
    assert bad.exit_code == 1
    assert (
        "registry step_types: the step types registry failed to build: step type 'echo' is registered twice: by plugin 'echo' and by plugin 'echo-again'"
        in bad.stdout
    )
    assert bad.stderr.strip() == "Error: plugin check found 1 problem(s)"
    report = json.loads(cli_runner.invoke(["plugin", "check", "--json"]).stdout)
    assert report["ok"] is False and len(report["problems"]) == 1


def test_plugin_check_reports_a_failed_plugin(cli_runner, plugin_manager):
    plugin_manager.builtins += (("ghost", "agent_env.no_such_module.hooks"),)
    result = cli_runner.invoke(["plugin", "check"])
    assert result.exit_code == 1
    assert (
        "plugin 'ghost': not installed: module 'agent_env.no_such_module.hooks' does not exist"
        in result.stdout
    )


@pytest.fixture
def project(tmp_path, monkeypatch, agent_env_home):
    for var in [v for v in os.environ if v.startswith("AGENT_ENV_") and v != "AGENT_ENV_HOME"]:
        monkeypatch.delenv(var)
    root = tmp_path / "project"
    (root / ".agentenv").mkdir(parents=True)
    monkeypatch.chdir(root)
    return root


def test_config_show_origins_and_masking(cli_runner, project, monkeypatch):
    path = project / ".agentenv" / "config.toml"
    path.write_text(
        "[run]\nconcurrency = 2\n[model]\napi_key = 'sk-very-secret'\nbase_url = 'env:URL'\n"
    )
    monkeypatch.setenv("AGENT_ENV_SANDBOX_DEFAULT", "local")
    result = cli_runner.invoke(["config", "show"])
    assert result.exit_code == 0, result.output
    assert f"# config file: {path}" in result.stdout
    assert "sk-very-secret" not in result.stdout
    assert 'api_key = "****"' in result.stdout
    line = next(x for x in result.stdout.splitlines() if x.startswith("concurrency"))
    assert line.endswith(f"# {path}")
    line = next(x for x in result.stdout.splitlines() if x.startswith('default = "local"'))
    assert line.endswith("# env AGENT_ENV_SANDBOX_DEFAULT")
    data = json.loads(cli_runner.invoke(["config", "show", "--json"]).stdout)
    assert data["file"] == str(path)
    rows = {(r["section"], r["key"]): r for r in data["settings"]}
    assert rows[("run", "concurrency")] == {
        "section": "run",
        "key": "concurrency",
        "value": 2,
        "origin": str(path),
    }
    assert rows[("model", "api_key")]["value"] == "****"


def test_config_show_bad_file_is_one_error_line(cli_runner, project):
    (project / ".agentenv" / "config.toml").write_text("[stores]\nobject = 's3'\n")
    result = cli_runner.invoke(["config", "show"])
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert "config.toml: [stores] object = 's3'" in result.stderr
    assert "pip install 'agentenv-framework[aws]'" in result.stderr
