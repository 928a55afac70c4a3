"""One validation path: every bundle file is structured by the kernel's converter. For each
file kind: a malformed value, an unknown key with a did-you-mean, and (where the file kind
declares one) a compat-ignored key that is warned about once while the bundle still loads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import attrs
import pytest

from agent_env import hookimpl
from agent_env.agents import AgentKind
from agent_env.bundles import load_bundle
from agent_env.envs import EnvType
from agent_env.errors import BundleError
from agent_env.models import Step, compat_ignored


@attrs.frozen(kw_only=True)
class AskAgent(Step):
    type: ClassVar[str] = "ask_agent"
    bundle_refs: ClassVar[dict[str, tuple[str, ...]]] = {
        "agent": ("a2a_agent_id",),
        "env": ("env_id", "env_ids[]"),
    }
    a2a_agent_id: str
    env_ids: list[str] = attrs.field(factory=list)
    env_id: str | None = None
    live: bool = compat_ignored("no live streaming here", default=False)


@attrs.frozen(kw_only=True)
class ShopConfig:
    type: str | None = None
    command: str
    port: int = 8000
    legacy_mode: str | None = compat_ignored("legacy mode is not needed")


class ShopEnv(EnvType):
    type: ClassVar[str] = "shop"
    config_model: ClassVar[type | None] = ShopConfig

    @classmethod
    def from_folder(cls, name: str, folder: Path, config: dict[str, Any]) -> ShopEnv:
        return cls()

    async def deploy(self, ctx: Any, *, sandbox_name: str, provider: str, **limits: Any) -> Any:
        raise NotImplementedError


@attrs.frozen(kw_only=True)
class BotConfig:
    type: str | None = None
    model: str | None = None


class BotAgent(AgentKind):
    type: ClassVar[str] = "bot"
    config_model: ClassVar[type | None] = BotConfig

    async def deploy(self, ctx: Any, spec: Any) -> dict[str, Any]:
        return {}

    async def prompt(self, ctx: Any, record: dict[str, Any], request: Any) -> Any:
        return None


class Plugin:
    @hookimpl
    def agentenv_register_step_types(self, registry: Any) -> None:
        registry.add(AskAgent)

    @hookimpl
    def agentenv_register_env_types(self, registry: Any) -> None:
        registry.add(ShopEnv)

    @hookimpl
    def agentenv_register_agents(self, registry: Any) -> None:
        registry.add(BotAgent)


@pytest.fixture
def more(plugins: Any, register_plugin: Any) -> Any:
    register_plugin(Plugin(), "validation-test")
    return plugins


def problems_of(root: Path, plugins: Any) -> list[str]:
    with pytest.raises(BundleError) as info:
        load_bundle(str(root), plugins)
    return sorted(info.value.problems)


def ask(step_id: str = "ask", **fields: Any) -> dict[str, Any]:
    return {"id": step_id, "type": "ask_agent", "a2a_agent_id": "bot", **fields}


@pytest.fixture
def bundle(hello_bundle: Path, writer: Any) -> Path:
    writer(hello_bundle / "agents/bot/agent.toml", 'type = "bot"\n')
    writer(hello_bundle / "envs/shop/env.toml", 'type = "shop"\ncommand = "serve"\n')
    return hello_bundle


# -- bundle.toml, evals, seeds --------------------------------------------------------------


def test_bundle_toml_malformed_value_and_unknown_key(bundle: Path, more: Any, writer: Any) -> None:
    writer(bundle / "bundle.toml", 'plugins = "agentenv-core-steps"\ndescripton = "x"\n')
    assert problems_of(bundle, more) == [
        "bundle.toml: plugins: expected a list, got 'agentenv-core-steps'",
        "bundle.toml: unknown key 'descripton' (did you mean 'description'?)",
    ]


def test_eval_malformed_value_and_unknown_key(bundle: Path, more: Any, writer: Any) -> None:
    writer(bundle / "evals/smoke.toml", 'tasks = "hello"\n')
    writer(bundle / "evals/more.toml", 'tasks = ["hello"]\ndescriptoin = "x"\n')
    assert problems_of(bundle, more) == [
        "evals/more.toml: unknown key 'descriptoin' (did you mean 'description'?)",
        "evals/smoke.toml: tasks: expected a list, got 'hello'",
    ]


# -- env.toml and agent.toml (the type's config_model) ----------------------------------------


def test_env_toml_malformed_unknown_and_compat_ignored(
    bundle: Path, more: Any, writer: Any, agent_env_warnings: list[str]
) -> None:
    writer(bundle / "envs/shop/env.toml", 'type = "shop"\ncommand = "serve"\nport = "80"\n')
    writer(bundle / "envs/mall/env.toml", 'type = "shop"\ncomand = "serve"\n')
    assert problems_of(bundle, more) == [
        "envs/mall/env.toml: command: required",
        "envs/mall/env.toml: unknown key 'comand' (did you mean 'command'?)",
        "envs/shop/env.toml: port: expected an integer, got '80'",
    ]
    writer(bundle / "envs/mall/env.toml", 'type = "shop"\ncommand = "x"\nlegacy_mode = "on"\n')
    writer(bundle / "envs/shop/env.toml", 'type = "shop"\ncommand = "x"\nlegacy_mode = "off"\n')
    loaded = load_bundle(str(bundle), more)
    assert loaded.envs["shop"].config["legacy_mode"] == "off"  # kept as written, unused
    assert loaded.warnings == [
        "'legacy_mode' is accepted for compatibility and ignored: legacy mode is not needed "
        "(envs/mall/env.toml: legacy_mode, envs/shop/env.toml: legacy_mode)"
    ]
    assert agent_env_warnings == [f"{loaded.root}: {loaded.warnings[0]}"]


def test_agent_toml_malformed_and_unknown(bundle: Path, more: Any, writer: Any) -> None:
    writer(bundle / "agents/bot/agent.toml", 'type = "bot"\nmodel = 4\nmodle = "x"\n')
    assert problems_of(bundle, more) == [
        "agents/bot/agent.toml: model: expected a string, got 4",
        "agents/bot/agent.toml: unknown key 'modle' (did you mean 'model'?)",
    ]


# -- task steps --------------------------------------------------------------------------------


def test_compat_ignored_step_field_is_warned_once_and_the_bundle_loads(
    bundle: Path, more: Any, writer: Any, agent_env_warnings: list[str]
) -> None:
    writer(bundle / "tasks/a.json", json.dumps([ask(live=True)]))
    writer(
        bundle / "tasks/b.json", json.dumps([ask("first", live=False), ask("second", live=True)])
    )
    writer(bundle / "tasks/c.json", json.dumps([ask(live=True)]))
    loaded = load_bundle(str(bundle), more)
    assert loaded.tasks["a"].steps[0].live is True
    assert loaded.warnings == [
        "'live' is accepted for compatibility and ignored: no live streaming here "
        "(tasks/a.json step 'ask': live, tasks/b.json step 'first': live, "
        "tasks/b.json step 'second': live and 1 more)"
    ]
    load_bundle(str(bundle), more)
    assert len(agent_env_warnings) == 1 and "no live streaming here" in agent_env_warnings[0]


def test_unknown_step_field_stays_an_error(bundle: Path, more: Any, writer: Any) -> None:
    writer(bundle / "tasks/a.json", json.dumps([ask(livee=True, env_ids="shop")]))
    assert problems_of(bundle, more) == [
        "tasks/a.json: step 'ask': env_ids: expected a list, got 'shop'",
        "tasks/a.json: step 'ask': unknown field 'livee' (did you mean 'live'?)",
    ]


# -- aliases.toml -----------------------------------------------------------------------------


def test_env_and_agent_alias_tables_name_folders(bundle: Path, more: Any, writer: Any) -> None:
    writer(
        bundle / "aliases.toml", '[envs]\nshop = ["shop", "store"]\n[agents]\nbot = ["helper"]\n'
    )
    writer(
        bundle / "tasks/a.json",
        json.dumps([ask(a2a_agent_id="helper", env_id="store", env_ids=["store", "shop"])]),
    )
    loaded = load_bundle(str(bundle), more)
    step = loaded.tasks["a"].steps[0]
    assert (step.a2a_agent_id, step.env_id, step.env_ids) == ("bot", "shop", ["shop", "shop"])
    assert loaded.env_aliases == {"store": "shop"}
    assert loaded.agent_name("helper") == "bot"
    assert loaded.tasks["a"].raw[0]["env_id"] == "store"  # the file as written is kept


def test_without_the_alias_the_reference_is_dangling(bundle: Path, more: Any, writer: Any) -> None:
    writer(bundle / "tasks/a.json", json.dumps([ask(env_id="store")]))
    assert problems_of(bundle, more) == [
        "tasks/a.json: step 'ask': env_id: no env 'store' in the bundle; envs: shop"
    ]


def test_reference_alias_file_with_task_aliases_next_to_it(
    bundle: Path, more: Any, writer: Any
) -> None:
    writer(bundle / "aliases.toml", 'hi = "hello"\n[envs]\nshop = ["shop"]\n')
    loaded = load_bundle(str(bundle), more)
    assert loaded.task("hi") is loaded.tasks["hello"]
    assert loaded.env_aliases == {}


def test_alias_table_problems(bundle: Path, more: Any, writer: Any) -> None:
    writer(
        bundle / "aliases.toml",
        '[envs]\nshop = "store"\nshpo = ["x"]\n[agents]\nbot = ["Bot!", "ok", "ok"]\n[agent]\nx = ["y"]\n',
    )
    assert problems_of(bundle, more) == [
        "aliases.toml: [agent]: not a table aliases.toml takes (did you mean 'agents'?); "
        'it takes [envs], [agents] and task aliases (alias = "task")',
        "aliases.toml: envs.shop: expected a list, got 'store'",
    ]
    writer(bundle / "aliases.toml", '[envs]\nshpo = ["x"]\n[agents]\nbot = ["Bot!", "ok", "ok"]\n')
    assert problems_of(bundle, more) == [
        "aliases.toml: agents.bot: 'Bot!' is not an alias: lowercase letters, digits and '-', "
        "at most 64 characters",
        "aliases.toml: agents.bot: 'ok' is listed twice",
        "aliases.toml: envs.shpo: the bundle has no env 'shpo' (did you mean 'shop'?); envs: shop",
    ]


# -- every env folder gets its env type's static checks at parse time --------------------------


class LabEnv(EnvType):
    """A third-party env type with checks a model cannot express (a file must exist)."""

    type: ClassVar[str] = "lab"
    config_model: ClassVar[type | None] = ShopConfig

    @staticmethod
    def problems(config: dict[str, Any], files: list[str]) -> list[str]:
        command = config.get("command")
        if isinstance(command, str) and command not in files:
            return [f"env.toml: command: no file {command!r} in the env folder"]
        return []

    @classmethod
    def from_folder(cls, name: str, folder: Path, config: dict[str, Any]) -> LabEnv:
        return cls()

    async def deploy(self, ctx: Any, *, sandbox_name: str, provider: str, **limits: Any) -> Any:
        raise NotImplementedError


class LabPlugin:
    @hookimpl
    def agentenv_register_env_types(self, registry: Any) -> None:
        registry.add(LabEnv)


def test_a_third_party_env_types_checks_run_for_every_env_folder(
    bundle: Path, more: Any, register_plugin: Any, writer: Any
) -> None:
    # no step deploys the env: the folder is still checked, before anything runs
    register_plugin(LabPlugin(), "lab-test")
    writer(bundle / "envs/lab/env.toml", 'type = "lab"\ncommand = "serve.sh"\nprot = 1\n')
    assert problems_of(bundle, more) == [
        "envs/lab/env.toml: command: no file 'serve.sh' in the env folder",
        "envs/lab/env.toml: unknown key 'prot' (did you mean 'port'?)",
    ]
    writer(bundle / "envs/lab/env.toml", 'type = "lab"\ncommand = "serve.sh"\n')
    writer(bundle / "envs/lab/serve.sh", "exit 0\n")
    assert load_bundle(str(bundle), more).envs["lab"].type == "lab"


def test_an_env_folder_naming_an_unknown_env_type(bundle: Path, more: Any, writer: Any) -> None:
    writer(bundle / "envs/shop/env.toml", 'type = "shpo"\ncommand = "serve"\n')
    (problem,) = problems_of(bundle, more)
    assert problem.startswith(
        "envs/shop/env.toml: type: unknown env type 'shpo' (did you mean 'shop'?); installed: "
    )
    assert "shop" in problem.split("installed: ")[1].split(", ")


def test_a_broken_env_type_check_is_reported_not_fatal(
    bundle: Path, more: Any, register_plugin: Any, writer: Any
) -> None:
    class Broken(LabEnv):
        type: ClassVar[str] = "broken"

        @staticmethod
        def problems(config: dict[str, Any], files: list[str]) -> list[str]:
            raise KeyError("port")

    class BrokenPlugin:
        @hookimpl
        def agentenv_register_env_types(self, registry: Any) -> None:
            registry.add(Broken)

    register_plugin(BrokenPlugin(), "broken-test")
    writer(bundle / "envs/lab/env.toml", 'type = "broken"\ncommand = "x"\n')
    assert problems_of(bundle, more) == [
        "envs/lab: problems() of env type 'broken' failed: KeyError: 'port'"
    ]
