"""A deploy_agent step may name a CLI agent kind (`a2a_agent_id: "claude-code"`) without an
agent folder, as the reference accepts: the bundle check asks the agent registry. A misspelled
kind is still refused, with a did-you-mean, and nothing runs."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from agents_support import agent_env, groceries_steps, notes_bundle  # noqa: E402


def test_a_cli_agent_kind_needs_no_agent_folder(tmp_path):
    bundle = notes_bundle(tmp_path, {"groceries": groceries_steps(a2a_agent_id="claude-code")})
    done = agent_env(tmp_path / "home", "run", str(bundle), "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "claude-code" not in done.stderr


def test_a_misspelled_agent_kind_is_refused_with_a_did_you_mean(tmp_path):
    bundle = notes_bundle(tmp_path, {"groceries": groceries_steps(a2a_agent_id="claude-cod")})
    home = tmp_path / "home"
    done = agent_env(home, "run", str(bundle), "--dry-run")
    assert done.returncode != 0
    assert "groceries.json" in done.stderr and "a2a_agent_id" in done.stderr, done.stderr
    assert "'claude-cod'" in done.stderr and "did you mean 'claude-code'" in done.stderr, (
        done.stderr
    )
    assert not (home / "runs").exists() or not any((home / "runs").iterdir())


def test_openhands_resolves_and_says_what_it_is_missing(tmp_path):
    """The reference's `openhands` name is known (the check accepts it), and deploying it
    fails as the agent's fault with the reason, not as a wrong answer or an unknown name."""
    from agents_support import run_json

    bundle = notes_bundle(tmp_path, {"groceries": groceries_steps(a2a_agent_id="openhands")})
    data, stderr = run_json(tmp_path / "home", str(bundle))
    [record] = data["tasks"]
    assert record["status"] == "failed" and record["failure_class"] == "agent", record
    assert "Python 3.12" in record["outcome"] and "openhands-sdk" in record["outcome"], record


def test_install_agent_into_a_docker_sandbox_is_refused_with_the_way_out(tmp_path):
    """A CLI agent goes into a container through its own image (deploy_agent with
    sandbox_type docker); `install_agent` into a running container says so and runs nothing."""
    import json

    from agents_support import NOTES_AGENT, run_json
    from test_cli_agents_e2e import docker_missing

    from agent_env.testing.require import require

    require(docker_missing())
    steps = json.loads((NOTES_AGENT / "tasks" / "groceries.json").read_text())
    box = {
        "id": "box",
        "type": "deploy_sandbox",
        "sandbox_name": "box",
        "sandbox_mode": "vm",
        "sandbox_type": "docker",
    }
    install = {
        "id": "agent",
        "type": "install_agent",
        "sandbox_name": "box",
        "a2a_agent_id": "cx",
    }
    bundle = notes_bundle(
        tmp_path,
        {"groceries": [steps[0], box, install, *steps[2:]]},
        agents={"cx": {"agent.toml": 'type = "codex"\n'}},
    )
    data, stderr = run_json(tmp_path / "home", str(bundle))
    [record] = data["tasks"]
    assert record["status"] == "failed" and record["failure_class"] == "agent", record
    assert "only into a local sandbox" in record["outcome"], record["outcome"]
    assert "sandbox_type" in record["outcome"]
    assert "installed in" not in stderr


def test_install_agent_may_name_a_cli_agent_kind_without_a_folder(tmp_path):
    """install_agent's own check no longer wants an agent folder: a kind name passes the
    bundle check as it does for deploy_agent, and a misspelled one gets one did-you-mean."""
    import json

    from agents_support import NOTES_AGENT

    steps = json.loads((NOTES_AGENT / "tasks" / "groceries.json").read_text())
    box = {"id": "box", "type": "deploy_sandbox", "sandbox_name": "box", "sandbox_mode": "vm"}
    for kind, ok in (("claude-code", True), ("claude-cod", False)):
        install = {"id": "agent", "type": "install_agent", "sandbox_name": "box"}
        bundle = notes_bundle(
            tmp_path / kind,
            {"groceries": [steps[0], box, {**install, "a2a_agent_id": kind}, *steps[2:]]},
        )
        done = agent_env(tmp_path / kind / "home", "run", str(bundle), "--dry-run")
        assert (done.returncode == 0) is ok, done.stderr
        if not ok:
            assert done.stderr.count("did you mean 'claude-code'") == 1, done.stderr
