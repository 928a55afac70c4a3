"""The existing product's step types through `agent-env run`: a bundle using all eight
validates, the env validators pass on a tidy env and score a broken one below 1."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from compat_envs import FILES, deploy, validators  # noqa: E402


@pytest.fixture
def cli(cli_runner, register_plugin):
    import agentenv_core_steps.hooks

    register_plugin(agentenv_core_steps.hooks, "core-steps")
    return cli_runner


def write(root: Path, files: dict) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    return root


EVERY_TYPE = [
    {"id": "box", "type": "deploy_sandbox", "sandbox_name": "box", "sandbox_mode": "vm"},
    {
        "id": "container",
        "type": "run_docker_container",
        "sandbox_name": "box",
        "docker_context_artifact_id": "ctx",
        "image_tag": "app:1",
        "ports": [8080],
    },
    {
        "id": "install",
        "type": "install_agent",
        "sandbox_name": "box",
        "container_name": "task-container",
        "a2a_agent_id": "echo",
        "a2a_port": 8000,
    },
    {
        "id": "skills",
        "type": "add_skills",
        "skills": [{"name": "s", "description": "d", "body": "b"}],
    },
    deploy("tidy"),
    {
        "id": "access",
        "type": "modify_env_tool_access",
        "env_id": "tidy",
        "action": "disable",
        "role": "default-agent",
        "tools": ["add_item"],
    },
    {"id": "snap", "type": "snapshot_env", "env_id": "tidy", "include_env_changes": True},
    *validators("tidy"),
]


def test_a_bundle_using_every_new_step_type_validates(cli, tmp_path):
    bundle = write(
        tmp_path / "b",
        {
            **FILES,
            "tasks/every.json": EVERY_TYPE,
            "artifacts/ctx/Dockerfile": "FROM scratch\n",
            "agents/echo/agent.toml": 'command = ["python", "a.py"]\n',
            "agents/echo/a.py": "print()\n",
        },
    )
    result = cli.invoke(["run", str(bundle), "--dry-run"])
    assert result.exit_code == 0, result.output
    # fields the existing product defines that ours does not use: accepted, warned about once
    for field in ("image_tag", "include_env_changes"):
        assert f"'{field}' is accepted for compatibility and ignored" in result.output


def test_env_validators_through_the_cli(cli, tmp_path):
    bundle = write(
        tmp_path / "b",
        {
            **FILES,
            "tasks/tidy.json": [deploy("tidy"), *validators("tidy")],
            "tasks/broken.json": [deploy("broken"), *validators("broken")],
        },
    )
    result = cli.invoke(["run", str(bundle), "--task", "tidy"])
    assert result.exit_code == 0, result.output
    assert "passed (verify_env_card-tidy: 1, verify_env_core_protocol-tidy: 1, " in result.stdout
    result = cli.invoke(["run", str(bundle), "--task", "broken"])
    assert result.exit_code == 1, result.output
    assert "scored below 1" in result.stdout
    assert "missing preferredTransport" in result.stderr
    assert "not supported: data/reset, data/add, data/get" in result.stderr
