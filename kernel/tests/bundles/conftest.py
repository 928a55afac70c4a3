"""Small step types standing in for the core ones, registered through the real plugin manager."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar, Literal

import attrs
import pytest

from agent_env import hookimpl
from agent_env.models import Step


@attrs.frozen(kw_only=True)
class DeploySandbox(Step):
    type: ClassVar[str] = "deploy_sandbox"
    sandbox_name: str
    sandbox_mode: Literal["vm", "container"]
    sandbox_type: str | None = None
    cpu: float = 2.0
    env_vars: dict[str, str] | None = None
    exposed_ports: list[int] | None = None


@attrs.frozen(kw_only=True)
class LoadArtifact(Step):
    type: ClassVar[str] = "load_artifact"
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


@pytest.fixture
def step_registry() -> Any:
    from agent_env.registry import Registry

    registry = Registry("step type")
    TestSteps().agentenv_register_step_types(registry)
    return registry


@pytest.fixture
def plugins(plugin_manager: Any, register_plugin: Any) -> Any:
    register_plugin(TestSteps(), "test-steps")
    return plugin_manager


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
