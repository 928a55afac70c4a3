"""Install hints name the installer agent-env runs under, and `plugin add|remove` refuses the
throwaway environment uvx runs in. The environments are laid out as each installer lays them
out (uv's `uv-receipt.toml`, pipx's `pipx_metadata.json`, uv's cache `archive-v0` folder)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agent_env.plugins.installer import install_hint, installer_kind
from agent_env.plugins.lifecycle import Refused, detect

PIP = "pip install 'agentenv-framework[aws]'"


def test_hint_for_each_installer(tmp_path):
    tool = tmp_path / "tools" / "agentenv-framework"
    tool.mkdir(parents=True)
    (tool / "uv-receipt.toml").write_text("[tool]\n")
    pipx = tmp_path / "pipx" / "venvs" / "agentenv-framework"
    pipx.mkdir(parents=True)
    (pipx / "pipx_metadata.json").write_text("{}")
    uvx = tmp_path / "uvcache" / "archive-v0" / "u2e1C9IZqmg8NVqV"
    uvx.mkdir(parents=True)
    venv = tmp_path / "venv"
    venv.mkdir()

    assert installer_kind(tool) == "uv tool"
    assert (
        install_hint("agentenv-aws-stores", PIP, tool) == "agent-env plugin add agentenv-aws-stores"
    )
    assert installer_kind(pipx) == "pipx"
    assert install_hint("agentenv-aws-stores", PIP, pipx).startswith("agent-env plugin add")
    assert installer_kind(uvx) == "uvx"
    hint = install_hint("agentenv-aws-stores", PIP, uvx)
    assert hint.startswith("uvx --from agentenv-framework --with agentenv-aws-stores agent-env")
    assert installer_kind(venv) == "virtualenv"
    assert install_hint("agentenv-aws-stores", PIP, venv) == PIP


def test_plugin_changes_are_refused_under_uvx(tmp_path):
    uvx = tmp_path / "uvcache" / "archive-v0" / "u2e1C9IZqmg8NVqV"
    (uvx / "bin").mkdir(parents=True)
    with pytest.raises(Refused, match="throwaway environment of uv's cache") as err:
        detect(python=uvx / "bin" / "python", prefix=uvx, base_prefix=Path(sys.base_prefix))
    assert "uv tool install agentenv-framework --with SPEC" in str(err.value)


def test_removing_what_a_staying_distribution_requires_counts_as_a_use():
    """Seen in this environment: the meta-distribution requires hf-hub, but aws only as an
    extra, so removing hf-hub would break `pip check` and removing aws-stores would not."""
    from agent_env.plugins.lifecycle.remove import requirers
    from agent_env.plugins.lifecycle.snapshot import take

    snapshot = take(Path(sys.executable))
    [use] = requirers(snapshot, {"agentenv-hf-hub"})
    assert use.startswith("agentenv-framework 1.0.0 requires agentenv-hf-hub (`pip check`")
    assert requirers(snapshot, {"agentenv-aws-stores"}) == []
