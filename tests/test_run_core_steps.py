"""`agent-env run` with the core step types: two sandboxes deployed concurrently, verified,
aggregated; the aggregate alone decides the outcome; nothing is left behind."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_run_cli import nothing_left, stored  # noqa: E402


def verify(box: str, vid: str, text: str) -> dict:
    return {
        "id": f"verify-{box}",
        "type": "verify_sandbox",
        "sandbox_name": box,
        "verifier_id": vid,
        "depends_on": [f"load-{box}"],
        "criteria": [
            {
                "id": "says",
                "type": "bash_cmd_succeeds",
                "criterion": "greeting",
                "bash_cmd": f"grep -q '{text}' greeting.txt",
            }
        ],
    }


def two_boxes(second_text: str = "Hi") -> list:
    steps = []
    for box in ("a", "b"):
        steps += [
            {
                "id": f"deploy-{box}",
                "type": "deploy_sandbox",
                "sandbox_name": box,
                "sandbox_mode": "vm",
                "depends_on": [],
            },
            {
                "id": f"load-{box}",
                "type": "load_artifact",
                "sandbox_name": box,
                "artifact_id": "greeting",
                "destination_path": "/app",
                "depends_on": [f"deploy-{box}"],
            },
        ]
    steps += [
        verify("a", "va", "Hi"),
        verify("b", "vb", second_text),
        {
            "id": "all",
            "type": "aggregate_verifiers",
            "verifier_ids": ["va", "vb"],
            "score_aggregator": "all_pass",
            "verifier_id": "all",
        },
    ]
    return steps


@pytest.fixture
def bundle_dir(tmp_path):
    def make(steps):
        root = tmp_path / "b"
        (root / "tasks").mkdir(parents=True, exist_ok=True)
        (root / "artifacts" / "greeting").mkdir(parents=True, exist_ok=True)
        (root / "artifacts" / "greeting" / "greeting.txt").write_text("Hi there\n")
        (root / "tasks" / "two.json").write_text(json.dumps(steps))
        return root

    return make


@pytest.fixture
def core_cli(cli_runner, register_plugin):
    from agentenv_core_steps import hooks

    register_plugin(hooks, "core-steps")
    return cli_runner


def test_concurrent_sandboxes_and_aggregate_outcome(core_cli, bundle_dir, agent_env_home):
    result = core_cli.invoke(["run", str(bundle_dir(two_boxes()))])
    assert result.exit_code == 0, result.stderr
    assert "two  passed (all: 1)" in result.stdout
    [record] = stored(agent_env_home, "task_instances")
    steps = record["steps"]
    # both deploys started before either load finished: they ran side by side
    assert steps["deploy-b"]["started_at"] < steps["load-a"]["finished_at"]
    assert set(record["verifiers"]) == {"va", "vb", "all"}
    assert record["scores"] == {"all": 1.0}
    nothing_left(agent_env_home)


def test_aggregate_below_one_fails_the_task(core_cli, bundle_dir, agent_env_home):
    result = core_cli.invoke(["run", str(bundle_dir(two_boxes(second_text="Nope")))])
    assert result.exit_code == 1
    assert "two  scored below 1 (all: 0)" in result.stdout
    nothing_left(agent_env_home)
