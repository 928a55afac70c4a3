"""The parts of `plugin add|remove` that need no new environment: SPEC parsing, installer
detection, the lock, orphaned dependencies, finding a plugin's users, the installer commands.
End to end: tests/test_plugin_lifecycle.py."""

from __future__ import annotations

import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest

from agent_env.errors import PluginError
from agentenv_plugin_lifecycle.environment import UV_PROJECT, detect, externally_managed
from agentenv_plugin_lifecycle.lock import environment_lock
from agentenv_plugin_lifecycle.remove import orphans
from agentenv_plugin_lifecycle.snapshot import Snapshot
from agentenv_plugin_lifecycle.specs import parse_spec
from agentenv_plugin_lifecycle.usage import config_users, entity_users, provided_names


def _wheel(path: Path, name: str, entry_points: str) -> Path:
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(f"{name}-1.0.dist-info/METADATA", f"Name: {name}\nVersion: 1.0\n")
        wheel.writestr(f"{name}-1.0.dist-info/entry_points.txt", entry_points)
    return path


def test_specs(tmp_path):
    plugin = _wheel(
        tmp_path / "agentenv_x-1.0-py3-none-any.whl",
        "agentenv_x",
        "[agent_env]\nx = agentenv_x.hooks\n[console_scripts]\nx = a:b\n",
    )
    spec = parse_spec(str(plugin))
    assert (spec.name, spec.entry_points, spec.install) == ("agentenv-x", ("x",), str(plugin))
    library = _wheel(
        tmp_path / "lib_y-1.0-py3-none-any.whl", "lib_y", "[console_scripts]\ny = a:b\n"
    )
    assert parse_spec(str(library)).entry_points == ()
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "pyproject.toml").write_text(
        '[project]\nname = "Agentenv_Z"\n[project.entry-points.agent_env]\nz = "z.hooks"\n'
    )
    assert (parse_spec(str(folder)).name, parse_spec(str(folder)).entry_points) == (
        "agentenv-z",
        ("z",),
    )
    req = parse_spec("agentenv-redis[fast]>=2")
    assert (req.name, req.install, req.entry_points) == (
        "agentenv-redis",
        "agentenv-redis[fast]>=2",
        None,
    )
    with pytest.raises(PluginError, match="is not a requirement"):
        parse_spec("not a spec!")
    with pytest.raises(PluginError, match="does not exist"):
        parse_spec(str(tmp_path / "missing-1.0-py3-none-any.whl"))


def test_pep668_marker_only_outside_a_virtualenv(tmp_path):
    (tmp_path / "EXTERNALLY-MANAGED").write_text("[externally-managed]\n")
    assert (
        externally_managed(Path("/usr"), Path("/usr"), tmp_path) == tmp_path / "EXTERNALLY-MANAGED"
    )
    assert externally_managed(Path("/venv"), Path("/usr"), tmp_path) is None
    assert externally_managed(Path("/usr"), Path("/usr"), tmp_path / "none") is None


def test_the_checkout_venv_is_a_uv_project():
    root = Path(__file__).resolve().parents[3]
    if Path(sys.prefix) != root / ".venv":
        pytest.skip("not running from the checkout's .venv")
    env = detect()
    assert (env.kind, env.project, env.installer) == (UV_PROJECT, root, "uv project")
    assert env.state_files == (root / "pyproject.toml", root / "uv.lock")


def test_the_lock_serialises_and_names_its_holder(tmp_path):
    order, waited = [], []
    with environment_lock(tmp_path):
        with pytest.raises(PluginError, match=r"another plugin add/remove \(pid \d+\) holds"):
            environment_lock(tmp_path, timeout=0.2).__enter__()

        def second():
            with environment_lock(tmp_path, timeout=10, waiting=waited.append):
                order.append("second")

        thread = threading.Thread(target=second)
        thread.start()
        time.sleep(0.3)
        order.append("first")
    thread.join(10)
    assert order == ["first", "second"]
    assert len(waited) == 1 and "waiting for another plugin add/remove" in waited[0]


def test_orphans_are_what_only_the_removed_plugin_needed():
    snap = Snapshot(
        dists={
            "agentenv-kernel": "1",
            "pluggy": "1",
            "p": "1",
            "dep": "1",
            "shared": "1",
            "other": "1",
            "wanted": "1",
            "extra-only": "1",
        },
        entry_points={},
        requested=["wanted"],
        requires={
            "agentenv-kernel": ["pluggy"],
            "p": ["agentenv-kernel", "dep", "shared", "wanted", "extra-only ; extra == 'x'"],
            "other": ["shared"],
            "dep": [],
        },
    )
    assert orphans(snap, {"p"}) == ["dep"]


def test_config_and_stored_users(tmp_path, plugin_manager, register_plugin, agent_env_home):
    import types

    from agent_env.config import load_config

    register_plugin(types.SimpleNamespace(), "greet", dist="agentenv-greet")
    (tmp_path / ".agentenv").mkdir()
    path = tmp_path / ".agentenv" / "config.toml"
    path.write_text('[plugins.agentenv-greet]\nloud = true\n[sandbox]\ndefault = "local"\n')
    config = load_config(tmp_path)
    provided = provided_names(
        {
            "step_types": ["greet"],
            "sandbox_providers": ["local"],
            "stores": ["document:sqlite"],
            "commands": ["greet"],
        }
    )
    assert provided == {
        "greet": "step type 'greet'",
        "local": "sandbox provider 'local'",
        "sqlite": "document store 'sqlite'",
    }
    assert config_users(config, provided, {"agentenv-greet"}, set()) == [
        f"{path}: [plugins.agentenv-greet] loud is a setting of this plugin",
        f"{path}: [sandbox] default = 'local' uses sandbox provider 'local'",
    ]

    async def stored():
        from agent_env.stores import open_stores

        stores = open_stores({}, plugin_manager, home=agent_env_home)
        try:
            entities = stores.entities
            await entities.put("task", "b/t", {"steps": [{"id": "s", "type": "greet"}]}, digest="1")
            await entities.put("task", "b/u", {"steps": [{"id": "s", "type": "other"}]}, digest="2")
            return await entity_users(stores.entities, provided)
        finally:
            await stores.close()

    import anyio

    assert anyio.run(stored) == ["stored task 'b/t' (v1) uses step type 'greet'"]


def test_uv_tool_commands_keep_the_receipts_other_requirements(tmp_path):
    from agentenv_plugin_lifecycle.environment import UV_TOOL, Environment
    from agentenv_plugin_lifecycle.installers import add_command, remove_command

    receipt = tmp_path / "uv-receipt.toml"
    receipt.write_text(
        "[tool]\nrequirements = [\n"
        '  { name = "agentenv-kernel", path = "/w/agentenv_kernel-1.0.0-py3-none-any.whl" },\n'
        '  { name = "agentenv-hf-hub", specifier = ">=1.0" },\n'
        '  { name = "agentenv_greet", directory = "/src/greet", editable = true },\n'
        '  { name = "agentenv-aws", extras = ["s3"], url = "https://x/aws.whl" },\n'
        ']\npython = "/usr/bin/python3.11"\n'
        'entrypoints = [{ name = "agent-env", install-path = "/b/agent-env", from = "agentenv-kernel" }]\n'
    )
    env = Environment(
        kind=UV_TOOL,
        python=tmp_path / "bin" / "python",
        prefix=tmp_path,
        site_packages=tmp_path,
        owner="agentenv-kernel",
        state_files=(receipt,),
        low_level=("uv", "uv"),
    )
    assert add_command(env, ["agentenv-shout"], ("/wheels",)) == [
        "uv",
        "tool",
        "install",
        "/w/agentenv_kernel-1.0.0-py3-none-any.whl",
        "--with",
        "agentenv-hf-hub>=1.0",
        "--with-editable",
        "/src/greet",
        "--with",
        "agentenv-aws[s3] @ https://x/aws.whl",
        "--with",
        "agentenv-shout",
        "--python",
        "/usr/bin/python3.11",
        "--find-links",
        "/wheels",
    ]
    assert remove_command(env, ["agentenv-greet"], []) == [
        "uv",
        "tool",
        "install",
        "/w/agentenv_kernel-1.0.0-py3-none-any.whl",
        "--with",
        "agentenv-hf-hub>=1.0",
        "--with",
        "agentenv-aws[s3] @ https://x/aws.whl",
        "--python",
        "/usr/bin/python3.11",
    ]
