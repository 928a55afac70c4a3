"""Every in-tree plugin package loads and declares the plugin API range it supports."""

from pathlib import Path

from agent_env.plugins import PluginManager

ROOT = Path(__file__).resolve().parents[1]
IN_TREE = sorted(p.name for p in (ROOT / "plugins").iterdir() if (p / "pyproject.toml").exists())


def test_every_in_tree_plugin_loads_and_declares_its_api_range():
    manager = PluginManager()
    plugins, registry_problems = manager.describe()
    assert registry_problems == {}
    infos = {info.name: info for info in plugins}
    assert sorted(n for n in infos if n in IN_TREE) == IN_TREE, "an in-tree plugin is not installed"
    for name in IN_TREE:
        info = infos[name]
        assert info.status == "ok", (name, info.errors)
        assert info.api, f"plugin {name} does not declare AGENTENV_PLUGIN_API in its hooks.py"
