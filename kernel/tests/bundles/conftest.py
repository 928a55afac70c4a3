"""Small step types standing in for the core ones, and an env type and agent kind standing in for
the ones core-steps makes the default of bare folders, registered through the real plugin
manager."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar, Literal

import attrs
import pytest

from agent_env import hookimpl
from agent_env.agents import AgentKind
from agent_env.envs import EnvType
from agent_env.models import RunOverride, Step


@attrs.frozen(kw_only=True)
class DeploySandbox(Step):
    type: ClassVar[str] = "deploy_sandbox"
    run_overrides: ClassVar[dict[str, RunOverride]] = {"provider": RunOverride(("sandbox_type",))}
    sandbox_name: str
    sandbox_mode: Literal["vm", "container"]
    sandbox_type: str | None = None
    cpu: float = 2.0
    env_vars: dict[str, str] | None = None
    exposed_ports: list[int] | None = None


@attrs.frozen(kw_only=True)
class LoadArtifact(Step):
    type: ClassVar[str] = "load_artifact"
    bundle_refs: ClassVar[dict[str, tuple[str, ...]]] = {
        "artifact": ("artifact_id", "artifacts[].id")
    }
    artifact_id: str | None = None
    artifacts: list[dict[str, Any]] | None = None
    sandbox_name: str | None = None
    destination_path: str | None = None


@attrs.frozen(kw_only=True)
class VerifySandbox(Step):
    type: ClassVar[str] = "verify_sandbox"
    is_verifier: ClassVar[bool] = True
    criteria: list[dict[str, Any]] = attrs.field(factory=list)
    sandbox_name: str | None = None
    verifier_id: str | None = None

    def check(self, bundle: Any) -> list[str]:
        return [
            f"criteria[{i}]: unknown criterion type {c.get('type')!r}"
            for i, c in enumerate(self.criteria)
            if c.get("type") not in ("probe_file_exists", "bash_cmd_succeeds")
        ]


@attrs.frozen(kw_only=True)
class TeardownSandboxes(Step):
    type: ClassVar[str] = "teardown_sandboxes"
    fail_task_on_error: bool = False
    sandbox_names: list[str] = attrs.field(factory=list)


class TestSteps:
    @hookimpl
    def agentenv_register_step_types(self, registry: Any) -> None:
        for cls in (DeploySandbox, LoadArtifact, VerifySandbox, TeardownSandboxes):
            registry.add(cls)


@attrs.frozen(kw_only=True)
class FolderEnv(EnvType):
    """Stands in for core-steps' `mcp_server`: the type of an env folder that names none."""

    type: ClassVar[str] = "mcp_server"
    default_for: ClassVar[str | None] = "env"
    name: str

    @classmethod
    def from_folder(cls, name: str, folder: Path, config: dict[str, Any]) -> FolderEnv:
        return cls(name=name)

    async def deploy(self, ctx: Any, *, sandbox_name: str, provider: str, **limits: Any) -> Any:
        raise NotImplementedError("a stand-in: bundles are only parsed here")


class FolderAgent(AgentKind):
    """Stands in for core-steps' `a2a_agent`: the kind of an agent folder that names none."""

    type: ClassVar[str] = "a2a_agent"
    default_for: ClassVar[str | None] = "agent"

    async def deploy(self, ctx: Any, spec: Any) -> dict[str, Any]:
        raise NotImplementedError("a stand-in: bundles are only parsed here")

    async def prompt(self, ctx: Any, record: dict[str, Any], request: Any) -> Any:
        raise NotImplementedError("a stand-in: bundles are only parsed here")


class FolderDefaults:
    @hookimpl
    def agentenv_register_env_types(self, registry: Any) -> None:
        registry.add(FolderEnv)

    @hookimpl
    def agentenv_register_agents(self, registry: Any) -> None:
        registry.add(FolderAgent)


@pytest.fixture
def step_registry() -> Any:
    from agent_env.registry import Registry

    registry = Registry("step type")
    TestSteps().agentenv_register_step_types(registry)
    return registry


@pytest.fixture
def steps_only_plugins(plugin_manager: Any, register_plugin: Any) -> Any:
    """The stand-in step types and no env type or agent kind (no folder defaults)."""
    register_plugin(TestSteps(), "test-steps")
    return plugin_manager


@pytest.fixture
def plugins(steps_only_plugins: Any, register_plugin: Any) -> Any:
    register_plugin(FolderDefaults(), "test-folder-defaults")
    return steps_only_plugins


HELLO_STEPS = [
    {"id": "box", "type": "deploy_sandbox", "sandbox_name": "box", "sandbox_mode": "container"},
    {
        "id": "load",
        "type": "load_artifact",
        "artifact_id": "greeting",
        "sandbox_name": "box",
        "destination_path": "/app",
    },
    {
        "id": "check",
        "type": "verify_sandbox",
        "sandbox_name": "box",
        "verifier_id": "hello",
        "criteria": [{"type": "probe_file_exists", "paths": ["greeting.txt"]}],
    },
]


@pytest.fixture
def hello_steps() -> list[dict[str, Any]]:
    return json.loads(json.dumps(HELLO_STEPS))


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def writer() -> Any:
    return write


@pytest.fixture
def hello_bundle(tmp_path: Path) -> Path:
    root = tmp_path / "hello-bundle"
    write(root / "README.md", "# Hello bundle\n\nSays hello.\n")
    write(root / "tasks" / "hello.json", json.dumps(HELLO_STEPS, indent=2))
    write(root / "artifacts" / "greeting" / "greeting.txt", "hello\n")
    write(root / "evals" / "smoke.toml", 'tasks = ["hello"]\n')
    return root
