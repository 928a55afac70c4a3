"""The plugin manager: registration, attribution, isolation of broken plugins, kill switches."""

from __future__ import annotations

import contextlib
import json
import sys
import textwrap
from importlib.metadata import entry_points
from typing import ClassVar

import attrs
import pytest

from agent_env import hookimpl
from agent_env.errors import PluginError
from agent_env.models import Step
from agent_env.plugins import PluginManager, get_plugin_manager
from agent_env.plugins.registries import StoreRegistry
from agent_env.stores.base import ObjectStore


@attrs.frozen(kw_only=True)
class Shout(Step):
    type: ClassVar[str] = "shout"
    text: str


@attrs.frozen(kw_only=True)
class Whisper(Step):
    type: ClassVar[str] = "whisper"


class ShoutPlugin:
    @hookimpl
    def agentenv_register_step_types(self, registry):
        registry.add(Shout)


class OtherShoutPlugin:
    @hookimpl
    def agentenv_register_step_types(self, registry):
        registry.add(Whisper)
        registry.add(Shout)


class RaisingPlugin:
    @hookimpl
    def agentenv_register_step_types(self, registry):
        raise RuntimeError("boom in hook")


def test_builtins_register_through_the_same_hooks(plugin_manager):
    assert "sqlite" in plugin_manager.stores.names("document")
    assert plugin_manager.stores.owner("document", "sqlite") == "local-stores"
    assert "local" in plugin_manager.sandbox_providers
    assert plugin_manager.get("local-stores").builtin
    assert get_plugin_manager() is plugin_manager


def test_registered_step_type_is_attributed_to_its_plugin(plugin_manager, register_plugin):
    register_plugin(ShoutPlugin(), "shouter")
    assert plugin_manager.step_types.get("shout") is Shout
    infos, problems = plugin_manager.describe()
    assert problems == {}
    assert plugin_manager.get("shouter").registered == {"step_types": ["shout"]}
    assert plugin_manager.get("shouter").hooks == ["agentenv_register_step_types"]


def test_registries_rebuild_after_unregister(plugin_manager, register_plugin):
    name = register_plugin(ShoutPlugin(), "shouter")
    assert "shout" in plugin_manager.step_types
    plugin_manager.unregister(name)
    assert "shout" not in plugin_manager.step_types


def test_duplicate_names_both_plugins_and_check_reports_it(plugin_manager, register_plugin):
    register_plugin(ShoutPlugin(), "first")
    register_plugin(OtherShoutPlugin(), "second")
    with pytest.raises(
        PluginError, match="'shout' is registered twice: by plugin 'first' and by plugin 'second'"
    ):
        _ = plugin_manager.step_types
    # the failure is remembered, not retried with a different outcome
    with pytest.raises(PluginError, match="registered twice"):
        _ = plugin_manager.step_types
    _, problems = plugin_manager.describe()
    assert "registered twice" in problems["step_types"]


def test_unknown_name_suggests_and_lists_known(plugin_manager, register_plugin):
    register_plugin(ShoutPlugin(), "shouter")
    with pytest.raises(
        PluginError, match=r"unknown step type 'shuot' \(did you mean 'shout'\?\); known: shout"
    ):
        plugin_manager.step_types.get("shuot")


def test_missing_in_tree_backend_names_the_pip_install(plugin_manager):
    with pytest.raises(PluginError, match=r"pip install 'agentenv-framework\[aws\]'"):
        plugin_manager.stores.get("object", "s3")
    with pytest.raises(PluginError, match=r"pip install 'agentenv-framework\[gcp\]'"):
        plugin_manager.stores.get("document", "firestore")
    with pytest.raises(PluginError, match="agentenv-docker-sandbox"):
        plugin_manager.sandbox_providers.get("docker")


def test_store_registry_rejects_unknown_kind():
    class Odd(ObjectStore):
        kind = "blob"
        type = "odd"

    with pytest.raises(PluginError, match=r"store kind 'blob'.*known kinds: document, object"):
        StoreRegistry().add(Odd)


def test_misspelled_hook_fails_loudly_with_suggestion(plugin_manager):
    class Typo:
        @hookimpl
        def agentenv_register_step_type(self, registry):
            pass

    with pytest.raises(
        PluginError,
        match=r"unknown hook 'agentenv_register_step_type' \(did you mean 'agentenv_register_step_types'\?\)",
    ):
        plugin_manager.register(Typo(), "typo")
    assert "typo" not in plugin_manager.plugins
    plugin_manager.check_pending()  # nothing half-registered is left behind


def test_hook_that_raises_fails_only_that_plugin(plugin_manager, register_plugin):
    register_plugin(RaisingPlugin(), "raiser")
    register_plugin(ShoutPlugin(), "shouter")
    assert plugin_manager.step_types.names() == ["shout"]
    info = plugin_manager.get("raiser")
    assert info.status == "failed"
    assert "agentenv_register_step_types raised RuntimeError: boom in hook" in info.errors[0]


class HalfRegisteringPlugin:
    @hookimpl
    def agentenv_register_step_types(self, registry):
        registry.add(Whisper)
        raise RuntimeError("boom after one add")


def test_a_plugin_whose_hook_raises_half_way_contributes_nothing(plugin_manager, register_plugin):
    register_plugin(HalfRegisteringPlugin(), "halfway")
    register_plugin(ShoutPlugin(), "shouter")
    assert plugin_manager.step_types.names() == ["shout"]
    assert plugin_manager.get("halfway").status == "failed"


def test_hook_that_raises_is_fatal_when_strict(register_plugin, plugin_manager):
    plugin_manager.strict = True
    register_plugin(RaisingPlugin(), "raiser")
    with pytest.raises(PluginError, match="raiser.*boom in hook"):
        _ = plugin_manager.step_types


def test_missing_builtin_is_reported_not_fatal():
    pm = PluginManager(autoload=False, builtins=[("ghost", "agent_env.no_such_module.hooks")])
    pm.load()
    info = pm.get("ghost")
    assert info.status == "failed"
    assert "not installed: module 'agent_env.no_such_module.hooks' does not exist" in info.errors[0]
    assert len(pm.step_types) == 0
    strict = PluginManager(
        autoload=False, strict=True, builtins=[("ghost", "agent_env.no_such_module.hooks")]
    )
    with pytest.raises(PluginError, match="ghost"):
        strict.load()


def test_bad_config_sections_declaration_is_a_plugin_error(plugin_manager):
    class BadConfig:
        CONFIG_SECTIONS = {"tracing": ["endpoint"]}

    with pytest.raises(PluginError, match="CONFIG_SECTIONS"):
        plugin_manager.register(BadConfig(), "bad-config")


def test_lifecycle_hooks(plugin_manager, register_plugin):
    seen = []

    @contextlib.asynccontextmanager
    async def timed():
        yield

    class Lifecycle:
        @hookimpl
        def agentenv_step_wrapper(self, step, ctx):
            return timed()

        @hookimpl
        def agentenv_run_finished(self, record):
            seen.append(record)

        @hookimpl
        def agentenv_resolve_bundle_source(self, spec):
            return f"/resolved/{spec[7:]}" if spec.startswith("demo://") else None

        @hookimpl
        def agentenv_push_bundle(self, folder, destination, message):
            if not destination.startswith("demo://"):
                return None
            return {"destination": destination, "folder": folder, "message": message}

    class Failing:
        @hookimpl
        def agentenv_run_finished(self, record):
            raise ValueError("tracker down")

        @hookimpl
        def agentenv_step_wrapper(self, step, ctx):
            return None

    register_plugin(Lifecycle(), "lifecycle")
    register_plugin(Failing(), "failing")
    assert len(plugin_manager.step_wrappers(step=None, ctx=None)) == 1
    errors = plugin_manager.run_finished({"run": 1})
    assert seen == [{"run": 1}]
    assert errors == ["plugin 'failing': agentenv_run_finished raised ValueError: tracker down"]
    assert plugin_manager.resolve_bundle_source("demo://x") == "/resolved/x"
    assert plugin_manager.resolve_bundle_source("other") is None
    assert plugin_manager.push_bundle("/b", "demo://x", "m") == {
        "destination": "demo://x",
        "folder": "/b",
        "message": "m",
    }
    assert plugin_manager.push_bundle("/b", "other://x") is None


# -- real entry points: a distribution written onto sys.path -----------------------------


def _install_fake_dist(root, dist, module, hooks_source, ep_name):
    """Write `<dist>-1.2.3.dist-info` with an `agent_env` entry point plus its module."""
    info = root / f"{dist.replace('-', '_')}-1.2.3.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.2.3\n")
    (info / "entry_points.txt").write_text(f"[agent_env]\n{ep_name} = {module}\n")
    if hooks_source is not None:
        (root / f"{module}.py").write_text(textwrap.dedent(hooks_source))


@pytest.fixture
def site(tmp_path, monkeypatch):
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    yield root
    for name in [m for m in sys.modules if m.startswith("fakeplug_")]:
        del sys.modules[name]


GOOD = """
    from agent_env import hookimpl
    CONFIG_SECTIONS = {"tracing": {"endpoint": None}}

    @hookimpl
    def agentenv_register_runners(registry):
        class Ray:
            type = "inline-test"
        registry.add(Ray)
"""


def test_entry_points_load_and_broken_ones_are_isolated(site, monkeypatch, caplog):
    monkeypatch.delenv("AGENT_ENV_DISABLE_PLUGINS", raising=False)
    monkeypatch.delenv("AGENT_ENV_STRICT_PLUGINS", raising=False)
    _install_fake_dist(site, "fake-good", "fakeplug_good", GOOD, "good")
    _install_fake_dist(
        site, "fake-broken", "fakeplug_broken", "raise RuntimeError('kaput')", "broken"
    )
    _install_fake_dist(site, "fake-gone", "fakeplug_gone", None, "gone")
    pm = PluginManager(builtins=())
    assert pm.runners.owner("inline-test") == "good"
    good, broken, gone = pm.get("good"), pm.get("broken"), pm.get("gone")
    assert (good.status, good.dist, good.version) == ("ok", "fake-good", "1.2.3")
    assert good.config_sections == {"tracing": {"endpoint": None}}
    assert broken.status == "failed"
    assert "installed but broken" in broken.errors[0] and "RuntimeError: kaput" in broken.errors[0]
    assert gone.status == "failed"
    assert "not installed: module 'fakeplug_gone' does not exist" in gone.errors[0]
    warnings = [r.getMessage() for r in caplog.records if "broken" in r.getMessage()]
    assert len(warnings) == 1  # reported once
    assert "fake-broken" in pm.distributions()


def test_strict_mode_makes_a_broken_entry_point_fatal(site, monkeypatch):
    _install_fake_dist(
        site, "fake-broken", "fakeplug_broken2", "raise RuntimeError('kaput')", "broken"
    )
    monkeypatch.setenv("AGENT_ENV_STRICT_PLUGINS", "1")
    others = [ep.name for ep in entry_points(group="agent_env") if ep.name != "broken"]
    with pytest.raises(
        PluginError, match="plugin 'broken' failed to load: installed but broken.*kaput"
    ):
        PluginManager(builtins=(), disabled=others).load()


def test_disabled_plugins_are_not_imported(site, monkeypatch):
    _install_fake_dist(site, "fake-good", "fakeplug_good3", GOOD, "good")
    _install_fake_dist(
        site, "fake-broken", "fakeplug_broken3", "raise RuntimeError('kaput')", "broken"
    )
    monkeypatch.setenv("AGENT_ENV_DISABLE_PLUGINS", "broken, fake-good")
    pm = PluginManager(builtins=())
    pm.load()
    assert pm.get("broken").status == "disabled"
    assert pm.get("good").status == "disabled"
    assert "fakeplug_good3" not in sys.modules and "fakeplug_broken3" not in sys.modules
    assert (
        "inline-test" not in pm.runners
    )  # (installed plugins such as ray-runner still add theirs)


def test_disable_and_no_plugins_after_load(site, monkeypatch):
    monkeypatch.delenv("AGENT_ENV_DISABLE_PLUGINS", raising=False)
    _install_fake_dist(site, "fake-good", "fakeplug_good4", GOOD, "good")
    pm = PluginManager()
    assert "inline-test" in pm.runners
    pm.disable("good")
    assert "inline-test" not in pm.runners
    assert pm.get("good").status == "disabled"
    pm2 = PluginManager()
    pm2.disable_entry_points()
    assert "good" not in pm2.plugins and "inline-test" not in pm2.runners
    assert "local" in pm2.sandbox_providers


class _Subcommands:
    """Adds `plugin hello`, and tries to take the kernel's `plugin list`."""

    from agent_env import hookimpl

    def __init__(self, name: str):
        self.name = name

    @hookimpl
    def agentenv_register_subcommands(self, parent, group):
        if parent == "plugin":
            group.add_lazy_command(self.name, "agent_env.cli.commands.plugin:list_plugins", "Hi.")


def test_plugins_add_subcommands_to_the_plugin_group_but_cannot_take_one(
    cli_runner, register_plugin
):
    register_plugin(_Subcommands("hello"), "greeter")
    register_plugin(_Subcommands("list"), "usurper")
    helped = cli_runner.invoke(["plugin", "--help"])
    assert "hello" in helped.stdout and helped.stdout.count("list ") == 1
    listed = cli_runner.invoke(["plugin", "hello", "--json"])
    assert listed.exit_code == 0, listed.output
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert rows["greeter"]["registered"] == {"commands": ["plugin hello"]}
    assert rows["usurper"]["status"] == "failed"
    assert rows["usurper"]["errors"] == [
        "agentenv_register_subcommands raised PluginError: command 'list' is already provided "
        "by 'agent-env'; plugin 'usurper' cannot add it again"
    ]
