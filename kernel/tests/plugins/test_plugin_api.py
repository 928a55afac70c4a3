"""The plugin API range each plugin declares: an incompatible plugin is its own status, is never
called, and a broken module that declares another range is reported as incompatible."""

from __future__ import annotations

import pytest

from agent_env.errors import PluginError
from agent_env.plugins import PluginManager
from agent_env.plugins.api import PLUGIN_API_VERSION, api_problem, declared_api_in_source


def test_api_ranges():
    assert PLUGIN_API_VERSION == "1.0"
    assert api_problem(None) is None
    assert api_problem(">=1.0,<2") is None
    assert api_problem(">=2,<3") == (
        "supports plugin API >=2,<3 but this agent-env offers plugin API 1.0: install a release "
        "of the plugin built for API 1.x"
    )
    assert "is not a version range" in api_problem("version one")
    assert "must be a version range string" in api_problem(2)
    src = 'import x\nAGENTENV_PLUGIN_API = ">=3"\nraise RuntimeError\n'
    assert declared_api_in_source(src) == ">=3"
    assert declared_api_in_source("AGENTENV_PLUGIN_API = compute()") is None


class _Future:
    """A plugin built for a plugin API this kernel does not offer."""

    AGENTENV_PLUGIN_API = ">=2,<3"

    def __init__(self):
        self.called = False

    from agent_env import hookimpl

    @hookimpl
    def agentenv_register_step_types(self, registry):
        self.called = True


def test_an_incompatible_plugin_is_its_own_status_and_never_called(cli_runner, register_plugin):
    plugin = _Future()
    register_plugin(plugin, "future")
    listed = cli_runner.invoke(["plugin", "list"])
    row = [line.split()[:4] for line in listed.stdout.splitlines() if line.startswith("future ")]
    assert row == [["future", "-", "-", "incompatible"]]
    assert (
        "future: supports plugin API >=2,<3 but this agent-env offers plugin API 1.0"
        in listed.stdout
    )
    check = cli_runner.invoke(["plugin", "check", "--json"])
    assert check.exit_code == 1
    assert '"incompatible": 1' in check.stdout
    assert plugin.called is False


def test_a_broken_module_declaring_another_api_is_reported_as_incompatible(tmp_path, monkeypatch):
    (tmp_path / "old_plugin_hooks.py").write_text(
        'AGENTENV_PLUGIN_API = ">=0.1,<1"\nfrom agent_env import removed_long_ago\n'
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    manager = PluginManager(autoload=False, builtins=[("old", "old_plugin_hooks")], strict=False)
    infos, _ = manager.describe()
    (info,) = [i for i in infos if i.name == "old"]
    assert info.status == "incompatible"
    assert info.errors[0].startswith(
        "supports plugin API >=0.1,<1 but this agent-env offers plugin API 1.0"
    )
    assert (
        "(installed but broken: importing 'old_plugin_hooks' raised ImportError" in info.errors[0]
    )
    strict = PluginManager(autoload=False, builtins=[("old", "old_plugin_hooks")], strict=True)
    with pytest.raises(PluginError, match="plugin 'old' is incompatible"):
        strict.load()
