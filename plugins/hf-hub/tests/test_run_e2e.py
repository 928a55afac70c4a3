"""`agent-env run hf://org/repo` end to end: the real CLI, the real Hub client, a local Hub."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TASK = [
    {"id": "box", "type": "deploy_sandbox", "sandbox_name": "box", "sandbox_mode": "vm"},
    {
        "id": "greet",
        "type": "load_artifact",
        "artifact_id": "greeting",
        "sandbox_name": "box",
        "destination_path": "/app",
    },
    {
        "id": "check",
        "type": "verify_sandbox",
        "sandbox_name": "box",
        "verifier_id": "greeting",
        "criteria": [
            {"type": "bash_cmd_succeeds", "bash_cmd": "grep -rq 'hello from the Hub' /app"}
        ],
    },
    {"id": "done", "type": "teardown_sandboxes", "sandbox_names": ["box"]},
]
CARD = "---\nagentenv:\n  bundles:\n    hello:\n      plugins: [agentenv-hf-hub>=1]\n---\n# hello on the Hub\n"


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("agent-env")
    cmd = [str(exe) if exe.exists() else "agent-env", *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)


def test_agent_env_run_hf_spec_twice(hub, cache, endpoint, tmp_path):
    repo = hub.create_repo("org/hello")
    commit = repo.commit(
        {
            "README.md": CARD,
            "bundles/hello/README.md": "hello: a bundle published on the Hub\n",
            "bundles/hello/tasks/hello.json": json.dumps(TASK),
            "bundles/hello/artifacts/greeting/greeting.txt": "hello from the Hub\n",
            "data/unrelated.csv": "a,b\n1,2\n",
        }
    )
    env = {**os.environ, "AGENT_ENV_HOME": str(tmp_path / "home"), "HF_ENDPOINT": endpoint}
    env.pop("AGENT_ENV_CONFIG", None)

    first = _run(["run", "hf://org/hello", "--json"], env)
    assert first.returncode == 0, first.stderr
    assert f"commit {commit}" in first.stderr and "bundle 'hello'" in first.stderr
    summary = json.loads(first.stdout)
    (record,) = summary["tasks"]
    assert record["status"] == "passed", record
    assert record["bundle"]["provenance"]["commit"] == commit
    assert record["bundle"]["id_prefix"] == "@hf/org/hello/hello"
    assert "data/unrelated.csv" not in {r.file for r in hub.downloads()}
    fetched = len(hub.downloads())

    second = _run(["run", "hf://org/hello", "--json"], env)
    assert second.returncode == 0, second.stderr
    assert len(hub.downloads()) == fetched
    assert "unchanged" in second.stderr and "(new)" not in second.stderr
    assert json.loads(second.stdout)["tasks"][0]["bundle"]["provenance"]["commit"] == commit


def test_agent_env_run_reports_unmet_card_plugins(hub, cache, endpoint, tmp_path):
    if (
        not Path(sys.executable).with_name("agent-env").exists()
        and shutil.which("agent-env") is None
    ):
        pytest.skip("the agent-env console script is not installed")
    card = (
        "---\nagentenv:\n  bundles:\n    hello:\n      plugins: [agentenv-example>=1.2]\n"
        "      setup: agent-env example setup\n---\n"
    )
    hub.create_repo("org/needs").commit(
        {"README.md": card, "bundles/hello/tasks/hello.json": json.dumps(TASK)}
    )
    env = {**os.environ, "AGENT_ENV_HOME": str(tmp_path / "home"), "HF_ENDPOINT": endpoint}
    result = _run(["run", "hf://org/needs"], env)
    assert result.returncode == 2, result.stderr
    assert "needs plugins that are not installed" in result.stderr
    assert "install with: pip install 'agentenv-example>=1.2'" in result.stderr
    assert "setup: agent-env example setup" in result.stderr
    assert {r.file for r in hub.downloads()} == {"README.md"}


def test_resume_loads_the_recorded_commit_even_after_the_branch_moved(
    hub, cache, endpoint, tmp_path
):
    broken = [dict(s) for s in TASK]
    broken[1]["destination_path"] = "/outside-the-sandbox"  # the local provider refuses it
    files = {
        "README.md": CARD,
        "bundles/hello/tasks/hello.json": json.dumps(broken),
        "bundles/hello/artifacts/greeting/greeting.txt": "hello from the Hub\n",
    }
    repo = hub.create_repo("org/moving")
    first_commit = repo.commit(files)
    env = {**os.environ, "AGENT_ENV_HOME": str(tmp_path / "home"), "HF_ENDPOINT": endpoint}
    env.pop("AGENT_ENV_CONFIG", None)
    failed = _run(["run", "hf://org/moving", "--json"], env)
    assert failed.returncode == 1, failed.stderr
    (record,) = json.loads(failed.stdout)["tasks"]
    assert record["status"] == "failed", record["outcome"]
    assert record["bundle"]["provenance"]["commit"] == first_commit

    repo.commit({**files, "bundles/hello/tasks/hello.json": json.dumps(TASK)})  # main moves on
    resumed = _run(["run", "--resume", record["id"], "--json"], env)
    assert f"commit {first_commit}" in resumed.stderr, resumed.stderr
    (again,) = json.loads(resumed.stdout)["tasks"]
    assert again["status"] == "failed", "the resume ran the branch's new commit"
    assert again["bundle"]["provenance"]["commit"] == first_commit


def test_an_unreachable_hub_with_nothing_cached_exits_1_not_2(cache, tmp_path):
    # a network problem, not a usage error: exit 1, and nothing was wrong with the spec
    env = {**os.environ, "AGENT_ENV_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1"}
    result = _run(["run", "hf://org/envs"], env)
    assert result.returncode == 1, result.stderr
    assert "Error: hf://org/envs: cannot reach the Hub" in result.stderr
    assert "no commit of org/envs@main is cached; run it once while online" in result.stderr
