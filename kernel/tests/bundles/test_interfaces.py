"""Third-party env types and agent kinds written against `agent_env.*` alone get what the
in-tree ones get: folder defaults by `default_for`, install hints from one table."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import attrs
import pytest

from agent_env import hookimpl
from agent_env.agents import AgentKind, AgentSpec, PromptRequest
from agent_env.bundles import load_bundle
from agent_env.envs import EnvType
from agent_env.errors import BundleError, PluginError


@attrs.frozen(kw_only=True)
class EchoEnv(EnvType):
    type: ClassVar[str] = "echo"
    default_for: ClassVar[str | None] = "env"
    name: str
    folder: Path

    @classmethod
    def from_folder(cls, name: str, folder: Path, config: dict[str, Any]) -> EchoEnv:
        return cls(name=name, folder=folder)

    async def deploy(self, ctx: Any, *, sandbox_name: str, provider: str, **limits: Any) -> Any:
        return {"url": "http://127.0.0.1:1/mcp", "card": {}}


class ParrotAgent(AgentKind):
    type: ClassVar[str] = "parrot"
    default_for: ClassVar[str | None] = "agent"

    async def deploy(self, ctx: Any, spec: AgentSpec) -> dict[str, Any]:
        return {}

    async def prompt(self, ctx: Any, record: dict[str, Any], request: PromptRequest) -> Any:
        return request.text


class OtherEchoEnv(EchoEnv):
    type: ClassVar[str] = "other_echo"


@pytest.fixture
def plugins(steps_only_plugins: Any) -> Any:
    """No installed type claims the folder defaults but the third parties' here."""
    return steps_only_plugins


class ThirdParty:
    def __init__(self, *envs: type) -> None:
        self.envs = envs

    @hookimpl
    def agentenv_register_env_types(self, registry: Any) -> None:
        for cls in self.envs:
            registry.add(cls)

    @hookimpl
    def agentenv_register_agents(self, registry: Any) -> None:
        registry.add(ParrotAgent)


def _folders(root: Path, writer: Any) -> None:
    writer(root / "envs/shop/Dockerfile", "FROM python:3.11-slim\n")
    writer(root / "agents/bot/agent.toml", 'model = "m"\n')


def test_a_third_party_type_that_declares_default_for_is_the_folder_default(
    hello_bundle: Path, plugins: Any, register_plugin: Any, writer: Any
) -> None:
    register_plugin(ThirdParty(EchoEnv), "third-party")
    _folders(hello_bundle, writer)
    bundle = load_bundle(str(hello_bundle), plugins)
    assert bundle.envs["shop"].type == "echo"
    assert bundle.agents["bot"].type == "parrot"


def test_two_types_claiming_the_default_is_a_problem(
    hello_bundle: Path, plugins: Any, register_plugin: Any, writer: Any
) -> None:
    register_plugin(ThirdParty(EchoEnv, OtherEchoEnv), "third-party")
    _folders(hello_bundle, writer)
    with pytest.raises(BundleError, match=r"several installed env types .*\(echo, other_echo\)"):
        load_bundle(str(hello_bundle), plugins)


def test_without_a_claimed_default_a_folder_naming_no_type_says_what_to_install(
    hello_bundle: Path, plugins: Any, writer: Any
) -> None:
    # the kernel keeps no table of default types: only an installed type's `default_for` counts
    _folders(hello_bundle, writer)
    with pytest.raises(BundleError) as raised:
        load_bundle(str(hello_bundle), plugins)
    hint = "or install the plugin that provides the default: pip install agentenv-core-steps"
    assert raised.value.problems == [
        "agents/bot/agent.toml: type: not set, and no installed agent type declares itself the "
        f"default (`default_for`); set type (installed: none), {hint}",
        "envs/shop/env.toml: type: not set, and no installed env type declares itself the "
        f"default (`default_for`); set type (installed: none), {hint}",
    ]
    with pytest.raises(
        PluginError,
        match=r"env type 'mcp_server' is provided by a plugin .*"
        r"pip install agentenv-core-steps",
    ):
        plugins.env_types.get("mcp_server")
    with pytest.raises(PluginError, match=r"agent 'oracle' is provided by a plugin"):
        plugins.agents.get("oracle")


def test_a_folder_that_names_its_type_needs_no_default(
    hello_bundle: Path, plugins: Any, register_plugin: Any, writer: Any
) -> None:
    register_plugin(ThirdParty(OtherEchoEnv), "third-party")
    writer(hello_bundle / "envs/shop/env.toml", 'type = "other_echo"\n')
    assert load_bundle(str(hello_bundle), plugins).envs["shop"].type == "other_echo"


def test_env_type_contract_is_abstract() -> None:
    with pytest.raises(TypeError):
        EnvType()  # type: ignore[abstract]
    assert EchoEnv.problems({}, []) == []
    assert AgentKind.needs_solution is False and ParrotAgent.default_for == "agent"


def test_public_names_are_lazy_exports() -> None:
    import agent_env

    for name in agent_env.__all__:
        assert getattr(agent_env, name) is not None
    assert agent_env.EnvType is EnvType and agent_env.AgentKind is AgentKind
