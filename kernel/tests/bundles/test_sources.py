"""Bundle specs: folders, installed bundles (entry-point group agent_env.bundles), plugin
sources, and bundle.toml plugin requirements."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_env import hookimpl
from agent_env.bundles import ResolvedSource, list_installed_bundles, load_bundle
from agent_env.errors import BundleError


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writer: Any, hello_steps: list) -> Path:
    """A tiny installed distribution, `My_Bundles` 1.2, shipping bundles `demo` and `broken`."""
    site = tmp_path / "site"
    writer(
        site / "mybundles/__init__.py", "raise RuntimeError('bundle lookup must not import me')\n"
    )
    writer(site / "mybundles/demo/README.md", "Demo bundle\n")
    writer(site / "mybundles/demo/tasks/hello.json", json.dumps(hello_steps))
    writer(site / "mybundles/demo/artifacts/greeting/greeting.txt", "hello\n")
    info = site / "My_Bundles-1.2.dist-info"
    writer(info / "METADATA", "Metadata-Version: 2.1\nName: My_Bundles\nVersion: 1.2\n")
    writer(info / "entry_points.txt", "[agent_env.bundles]\ndemo = mybundles\nbroken = mybundles\n")
    monkeypatch.syspath_prepend(str(site))
    return site


def test_installed_bundles_are_listed(site: Path) -> None:
    found = {b.name: b for b in list_installed_bundles() if b.dist == "my-bundles"}
    assert set(found) == {"demo", "broken"}
    assert found["demo"].path == site / "mybundles" / "demo"
    assert found["demo"].version == "1.2"
    assert found["broken"].path is None
    assert found["broken"].problem == "the package 'mybundles' has no folder 'broken'"


def test_installed_bundle_by_name_gets_dist_ids(site: Path, plugins: Any) -> None:
    bundle = load_bundle("demo", plugins)
    assert bundle.id_prefix == "@local/my-bundles/demo"
    assert bundle.tasks["hello"].id == "@local/my-bundles/demo/hello"
    assert bundle.artifacts["greeting"].id == "@local/my-bundles/demo/greeting"
    assert bundle.description == "Demo bundle"
    assert bundle.provenance["source"] == "installed"
    assert bundle.provenance["version"] == "1.2"
    assert load_bundle("my-bundles/demo", plugins).id_prefix == "@local/my-bundles/demo"


def test_broken_installed_bundle_says_why(site: Path, plugins: Any) -> None:
    with pytest.raises(BundleError, match="'mybundles' has no folder 'broken'"):
        load_bundle("broken", plugins)


def test_unknown_spec_lists_installed_bundles(site: Path, plugins: Any) -> None:
    with pytest.raises(BundleError) as info:
        load_bundle("dem", plugins)
    message = str(info.value)
    assert "'dem' is neither a folder nor an installed bundle (did you mean 'demo'?)" in message
    assert "demo" in message.split("installed bundles:")[1]


def test_missing_folder(plugins: Any, tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="no such folder"):
        load_bundle(str(tmp_path / "nope"), plugins)


def test_unclaimed_scheme(plugins: Any) -> None:
    with pytest.raises(
        BundleError,
        match=r"no installed plugin handles hf:// bundle specs \(install agentenv-hf-hub\)",
    ):
        load_bundle("hf://org/repo", plugins)


def test_plugin_source_sets_ids_and_provenance(
    hello_bundle: Path, plugins: Any, register_plugin: Any
) -> None:
    class Source:
        @hookimpl
        def agentenv_resolve_bundle_source(self, spec: str) -> Any:
            if not spec.startswith("test://"):
                return None
            return ResolvedSource(
                path=hello_bundle,
                provenance={"source": "test", "commit": "abc"},
                id_prefix="@hf/org/repo",
                name="repo",
            )

    register_plugin(Source(), "test-source")
    bundle = load_bundle("test://org/repo", plugins)
    assert bundle.name == "repo"
    assert bundle.tasks["hello"].id == "@hf/org/repo/hello"
    assert bundle.provenance == {"source": "test", "commit": "abc"}


def test_requirements_met(hello_bundle: Path, plugins: Any, writer: Any, site: Path) -> None:
    writer(
        hello_bundle / "bundle.toml",
        '[requires]\nplugins = ["agentenv-kernel>=1.0", "my-bundles>=1.1"]\n',
    )
    assert load_bundle(str(hello_bundle), plugins).requires == [
        "agentenv-kernel>=1.0",
        "my-bundles>=1.1",
    ]


def test_requirements_unmet_give_one_error_with_pip_line(
    hello_bundle: Path, plugins: Any, writer: Any, site: Path
) -> None:
    writer(
        hello_bundle / "bundle.toml",
        'plugins = ["my_bundles>=2", "agentenv-no-such-plugin", "agentenv-kernel"]\n',
    )
    (hello_bundle / "tasks/hello.json").write_text('[{"id": "x", "type": "from_missing_plugin"}]')
    with pytest.raises(BundleError) as info:
        load_bundle(str(hello_bundle), plugins)
    assert str(info.value).startswith("bundle 'hello-bundle' needs plugins that are not installed")
    assert info.value.problems == [
        "needs plugin 'my_bundles>=2'; installed: my_bundles 1.2",
        "needs plugin 'agentenv-no-such-plugin', which is not installed",
        "install with: pip install 'my_bundles>=2' 'agentenv-no-such-plugin'",
    ]


def test_bundle_toml_mistakes(hello_bundle: Path, plugins: Any, writer: Any) -> None:
    writer(hello_bundle / "bundle.toml", '[requires]\nplugin = ["x"]\n[extra]\n')
    with pytest.raises(BundleError) as info:
        load_bundle(str(hello_bundle), plugins)
    assert sorted(info.value.problems) == [
        "bundle.toml: requires: unknown key 'plugin' (did you mean 'plugins'?)",
        "bundle.toml: unknown key 'extra'",
    ]


def test_source_plugins_and_setup_apply_without_bundle_toml(
    hello_bundle: Path, plugins: Any, register_plugin: Any
) -> None:
    """A Hub card's `plugins` stand in for a missing bundle.toml; its `setup` text is shown
    (never run) when something the bundle needs is missing."""
    card = {"plugins": ["agentenv-no-such-plugin>=1"], "setup": "agent-env example setup"}

    class Source:
        @hookimpl
        def agentenv_resolve_bundle_source(self, spec: str) -> Any:
            extra = card if spec == "test://plugins" else {"setup": card["setup"]}
            return ResolvedSource(
                path=hello_bundle,
                provenance={"source": "test", **extra},
                id_prefix="@hf/org/repo",
                name="repo",
            )

    register_plugin(Source(), "test-source")
    with pytest.raises(BundleError) as info:
        load_bundle("test://plugins", plugins)
    assert info.value.problems[-2:] == [
        "install with: pip install 'agentenv-no-such-plugin>=1'",
        "setup: agent-env example setup",
    ]
    (hello_bundle / "tasks/hello.json").write_text('[{"id": "x", "type": "example_step"}]')
    with pytest.raises(BundleError) as info:
        load_bundle("test://setup", plugins)
    assert info.value.problems[-1] == "setup: agent-env example setup"


def test_same_bundle_name_from_two_packages(site: Path, plugins: Any, writer: Any) -> None:
    writer(site / "otherpkg/__init__.py", "")
    writer(
        site / "otherpkg/demo/tasks/t.json",
        '[{"id": "a", "type": "teardown_sandboxes", "sandbox_names": ["x"]}]',
    )
    info = site / "other_dist-0.1.dist-info"
    writer(info / "METADATA", "Metadata-Version: 2.1\nName: other-dist\nVersion: 0.1\n")
    writer(info / "entry_points.txt", "[agent_env.bundles]\ndemo = otherpkg\n")
    with pytest.raises(
        BundleError,
        match="several installed packages provide a bundle 'demo'; "
        "run one of my-bundles/demo, other-dist/demo",
    ):
        load_bundle("demo", plugins)
    bundle = load_bundle("other-dist/demo", plugins)
    assert bundle.tasks["t"].id == "@local/other-dist/demo/t"


def test_folder_beats_installed_name(
    site: Path, plugins: Any, hello_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(hello_bundle.parent)
    (hello_bundle.parent / "demo").symlink_to(hello_bundle)
    bundle = load_bundle("demo", plugins)
    assert bundle.provenance["source"] == "folder"
    assert bundle.id_prefix == "@local/" + str(hello_bundle.resolve()).lstrip("/")
