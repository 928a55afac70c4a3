"""Lazy registry entries: a plugin registers a class by import path (`add_lazy`); it is
imported on first use, its declared attributes answer without importing it, and a wrong path
or a declaration the class contradicts fails naming the plugin."""

from __future__ import annotations

import sys
import textwrap
from types import SimpleNamespace

import pytest

from agent_env import hookimpl
from agent_env.errors import PluginError
from agent_env.sandbox import provider_chain

MODULE = "lazy_acme_provider"
SOURCE = """
from agent_env.sandboxes.local.provider import LocalProvider

class AcmeProvider(LocalProvider):
    type = "acme"
    can_build_images = True
    on_this_machine = True
"""


@pytest.fixture
def acme_module(tmp_path, monkeypatch):
    """A real module on sys.path that defines the provider, not imported yet."""
    (tmp_path / f"{MODULE}.py").write_text(textwrap.dedent(SOURCE))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(MODULE, None)
    yield MODULE
    sys.modules.pop(MODULE, None)


def _plugin(target: str, **attributes):
    @hookimpl
    def agentenv_register_sandbox_providers(registry):
        registry.add_lazy("acme", target, **attributes)

    return SimpleNamespace(agentenv_register_sandbox_providers=agentenv_register_sandbox_providers)


def test_a_lazy_entry_is_imported_on_first_get(plugin_manager, register_plugin, acme_module):
    register_plugin(_plugin(f"{acme_module}:AcmeProvider"), "acme")
    providers = plugin_manager.sandbox_providers
    assert "acme" in providers.names()
    assert providers.by_plugin()["acme"] == ["acme"]
    assert acme_module not in sys.modules, "building the registry imported the class"
    cls = providers.get("acme")
    assert cls.__name__ == "AcmeProvider" and cls.type == "acme"
    assert acme_module in sys.modules
    assert providers.get("acme") is cls


def test_declared_attributes_answer_without_import(plugin_manager, register_plugin, acme_module):
    register_plugin(
        _plugin(f"{acme_module}:AcmeProvider", can_build_images=True, on_this_machine=True), "acme"
    )
    providers = plugin_manager.sandbox_providers
    # `local` on this machine falls back to providers that build images here: read unimported
    assert provider_chain("local", providers, local_machine=True) == ("local", "acme")
    assert acme_module not in sys.modules
    # an attribute that was not declared imports the class to answer
    assert providers.attribute("acme", "type") == "acme"
    assert providers.attribute("acme", "no_such_attribute", "dflt") == "dflt"
    assert acme_module in sys.modules


def test_a_declaration_the_class_contradicts_fails(plugin_manager, register_plugin, acme_module):
    register_plugin(_plugin(f"{acme_module}:AcmeProvider", can_build_images=False), "acme")
    with pytest.raises(PluginError) as info:
        plugin_manager.sandbox_providers.get("acme")
    message = str(info.value)
    assert "plugin 'acme'" in message
    assert "can_build_images = True" in message and "can_build_images = False" in message


def test_a_name_the_class_does_not_carry_fails(plugin_manager, register_plugin, acme_module):
    @hookimpl
    def agentenv_register_sandbox_providers(registry):
        registry.add_lazy("acme2", f"{acme_module}:AcmeProvider")

    register_plugin(
        SimpleNamespace(agentenv_register_sandbox_providers=agentenv_register_sandbox_providers),
        "acme",
    )
    with pytest.raises(
        PluginError, match="has type = 'acme', but the plugin registered it with type = 'acme2'"
    ):
        plugin_manager.sandbox_providers.get("acme2")


@pytest.mark.parametrize(
    "target, why",
    [
        ("lazy_no_such_module:AcmeProvider", "not installed: module 'lazy_no_such_module'"),
        (f"{MODULE}:NoSuchClass", "installed but broken"),
    ],
)
def test_a_target_that_does_not_import_fails_naming_the_plugin(
    plugin_manager, register_plugin, acme_module, target, why
):
    register_plugin(_plugin(target), "acme")
    with pytest.raises(PluginError) as info:
        plugin_manager.sandbox_providers.get("acme")
    assert "sandbox provider 'acme' of plugin 'acme' cannot be loaded" in str(info.value)
    assert why in str(info.value)


def test_a_malformed_target_fails_at_registration(plugin_manager, register_plugin):
    register_plugin(_plugin("not a path"), "acme")
    with pytest.raises(PluginError, match="expected 'package.module:Class'"):
        plugin_manager.sandbox_providers.names()


def test_plugin_check_imports_every_lazy_entry(cli_runner, register_plugin, acme_module):
    register_plugin(_plugin("lazy_no_such_module:AcmeProvider"), "acme")
    listed = cli_runner.invoke(["plugin", "list"])
    assert listed.exit_code == 0, listed.stderr  # listing imports nothing
    result = cli_runner.invoke(["plugin", "check"])
    assert result.exit_code != 0
    assert "plugin 'acme'" in result.stdout and "cannot be loaded" in result.stdout


def test_store_entries_declare_their_kind(plugin_manager, register_plugin, tmp_path, monkeypatch):
    (tmp_path / "lazy_acme_store.py").write_text(
        "from agent_env.stores.env_secrets import EnvSecretStore\n"
        "class AcmeSecrets(EnvSecretStore):\n    type = 'acme'\n"
        "class AcmeDocs(EnvSecretStore):\n    type = 'acme-doc'\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))

    @hookimpl
    def agentenv_register_stores(registry):
        registry.add_lazy("acme", "lazy_acme_store:AcmeSecrets", kind="secret")
        registry.add_lazy("acme-doc", "lazy_acme_store:AcmeDocs", kind="document")

    register_plugin(SimpleNamespace(agentenv_register_stores=agentenv_register_stores), "acme")
    stores = plugin_manager.stores
    assert "lazy_acme_store" not in sys.modules
    assert stores.get("secret", "acme").__name__ == "AcmeSecrets"
    with pytest.raises(PluginError, match="has kind = 'secret'"):
        stores.get("document", "acme-doc")
    sys.modules.pop("lazy_acme_store", None)
