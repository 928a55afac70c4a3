"""The plugin as agent-env loads it: the entry point, and the hook's answers."""

from __future__ import annotations

import json

import pytest

from agentenv_hf_hub import hooks


def _resolved_source_class():
    from agent_env.bundles import ResolvedSource

    return ResolvedSource


@pytest.mark.parametrize(
    "spec", ["./my-bundle", "hello", "s3://bucket/bundle", "HF://org/repo", ""]
)
def test_other_specs_are_left_to_other_sources(spec):
    assert hooks.agentenv_resolve_bundle_source(spec=spec) is None


@pytest.mark.parametrize("destination", ["s3://bucket/b", "HF://org/repo", "./folder"])
def test_other_destinations_are_left_to_other_plugins(destination, tmp_path):
    assert (
        hooks.agentenv_push_bundle(folder=tmp_path, destination=destination, message=None) is None
    )


def test_entry_point_registers_the_plugin_and_it_claims_hf_specs(endpoint, hub):
    ResolvedSource = _resolved_source_class()
    from agent_env.plugins import PluginManager

    hub.create_repo("org/demo").commit(
        {"README.md": "# demo\n", "bundles/hello/tasks/hello.json": "[]"}
    )
    manager = PluginManager()
    manager.load()
    assert manager.get("hf-hub").dist == "agentenv-hf-hub"
    got = manager.resolve_bundle_source("hf://org/demo")
    assert isinstance(got, ResolvedSource)
    assert got.name == "hello" and got.id_prefix == "@hf/org/demo/hello"
    assert (got.path / "tasks" / "hello.json").read_text() == "[]"
    assert got.provenance["commit"] == hub.repos["org/demo"].branches["main"]
    assert manager.resolve_bundle_source("./not-hf") is None


def test_hooks_module_imports_nothing_heavy():
    import subprocess
    import sys

    code = (
        "import sys, agentenv_hf_hub.hooks\n"
        "heavy = [m for m in ('huggingface_hub', 'yaml', 'httpx2', 'filelock') if m in sys.modules]\n"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


def test_a_missing_artifact_in_a_hub_bundle_shows_the_cards_setup(endpoint, hub):
    _resolved_source_class()
    from agent_env.bundles import load_bundle
    from agent_env.errors import BundleError
    from agent_env.plugins import PluginManager

    task = [
        {"id": "greet", "type": "load_artifact", "artifact_id": "greeting", "sandbox_name": "box"}
    ]
    card = "---\nagentenv:\n  bundles:\n    hello:\n      setup: agent-env example setup\n---\n"
    hub.create_repo("org/needs").commit(
        {"README.md": card, "bundles/hello/tasks/hello.json": json.dumps(task)}
    )
    with pytest.raises(BundleError) as err:
        load_bundle("hf://org/needs", PluginManager())
    assert "greeting" in str(err.value)
    assert "setup: agent-env example setup" in str(err.value)
