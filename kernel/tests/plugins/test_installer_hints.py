"""Install hints name the installer agent-env runs under. The environments are laid out as each
installer lays them out (uv's `uv-receipt.toml`, pipx's `pipx_metadata.json`, uv's cache
`archive-v0` folder)."""

from __future__ import annotations

from agent_env.plugins.installer import install_hint, installer_kind

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


def test_the_plugin_tool_itself_is_installed_with_the_installers_own_command(tmp_path):
    tool = tmp_path / "tools" / "agentenv-kernel"
    tool.mkdir(parents=True)
    (tool / "uv-receipt.toml").write_text("[tool]\n")
    pipx = tmp_path / "pipx" / "venvs" / "agentenv-kernel"
    pipx.mkdir(parents=True)
    (pipx / "pipx_metadata.json").write_text("{}")
    lifecycle = "agentenv-plugin-lifecycle"
    assert install_hint(lifecycle, f"pip install {lifecycle}", tool) == (
        f"uv tool install agentenv-kernel --with {lifecycle} (and the --with requirements it has)"
    )
    assert install_hint(lifecycle, f"pip install {lifecycle}", pipx) == (
        f"pipx inject agentenv-kernel {lifecycle}"
    )
