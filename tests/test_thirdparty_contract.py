"""The acme fixture plugin's sandbox provider and secret store against the kernel's contract
suites, imported from its source folder (the installed-wheel end-to-end run is
test_thirdparty.py)."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import anyio
import pytest

from agent_env.errors import ConfigError, SandboxError
from agent_env.net import free_port
from agent_env.sandbox import SandboxSpec
from agentenv_testing.contracts import (
    SandboxProviderContract,
    SecretStoreContract,
    StepTypeContract,
)

SRC = Path(__file__).resolve().parent / "fixtures" / "thirdparty-plugin" / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

from agentenv_acme import hooks  # noqa: E402
from agentenv_acme.sandbox import AcmeProvider  # noqa: E402
from agentenv_acme.steps import StateEquals  # noqa: E402
from agentenv_acme.store import FileSecrets  # noqa: E402


class TestAcmeProvider(SandboxProviderContract):
    @pytest.fixture
    def provider(self, tmp_path):
        return AcmeProvider({}, home=tmp_path)

    def url_port(self) -> int:
        return free_port()

    def leftovers(self, provider, info):
        left = [str(p) for p in provider.root.glob(f"{info['id']}*")]
        return left


@pytest.mark.anyio
async def test_acme_processes_do_not_see_the_host_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("ACME_HOST_ONLY", "leaked")
    box = await AcmeProvider({}, home=tmp_path).create(SandboxSpec(env_vars={"MINE": "/app/x"}))
    try:
        result = await box.exec('echo "${ACME_HOST_ONLY-unset} $MINE $HOME"', timeout=30)
        assert result.stdout == f"unset {box.folder}/x {box.folder}\n"
    finally:
        await box.teardown()
    assert not box.folder.exists()


def test_an_unknown_acme_setting_is_an_error_with_a_did_you_mean(tmp_path):
    with pytest.raises(
        SandboxError, match=r"\[sandbox.acme\] has unknown setting 'rot' \(did you mean 'root'\?\)"
    ):
        AcmeProvider({"rot": "/tmp"}, home=tmp_path)


class TestAcmeFileSecrets(SecretStoreContract):
    @pytest.fixture
    def store_factory(self, tmp_path):
        return functools.partial(FileSecrets, home=tmp_path)


def test_acme_secrets_are_private_files(tmp_path):
    store = FileSecrets({"path": str(tmp_path / "s")})
    anyio.run(store.set, "token", "t0p")
    assert (tmp_path / "s" / "token").stat().st_mode & 0o777 == 0o600
    with pytest.raises(ConfigError, match=r"unknown setting 'pth' \(did you mean 'path'\?\)"):
        FileSecrets({"pth": "x"})


class TestStateEqualsContract(StepTypeContract):
    step_class = StateEquals
    plugin_module = "agentenv_acme.hooks"
    example = {"id": "w", "type": "acme_state_equals", "expect": {"outputs.none": None}}


def test_acme_command_lists_nothing_at_first(cli_runner, register_plugin):
    register_plugin(hooks, "acme")
    assert cli_runner.invoke(["acme", "--json"]).stdout == "[]\n"


def test_acme_is_a_sandbox_provider(plugin_manager, register_plugin):
    register_plugin(hooks, "acme")
    assert plugin_manager.sandbox_providers.get("acme").type == "acme"
