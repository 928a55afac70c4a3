"""The issue's done-when for CLI coding agents: examples/notes-agent passes with Claude Code,
Codex CLI, Gemini CLI, OpenCode and pi, each installed for real from the npm registry (into a
cache that starts empty: `$AGENTENV_CI_CACHE/cli-agents` on CI, a session folder otherwise),
driven by a scripted model server speaking each CLI's API (Anthropic Messages, OpenAI
Responses, Gemini generateContent, OpenAI chat completions) with the right tool calls, in the
local sandbox and (Codex, Gemini CLI) in a Docker sandbox. The verifiers pass, the gateway log
shows the calls under the agent's role, the trajectory is stored, and a second run reuses the
install (and the image)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from agents_support import (  # noqa: E402
    NOTES_AGENT,
    TOOL_THEN_TEXT,
    groceries_steps,
    notes_bundle,
    run_json,
    show_json,
)

from agent_env.testing.require import require  # noqa: E402
from agentenv_protocol.agent.scripted_apis import tool_names  # noqa: E402
from agentenv_protocol.agent.testing import ScriptedModelServer  # noqa: E402

pytestmark = [pytest.mark.network, pytest.mark.docker]  # agents from the npm registry, in Docker


def docker_missing() -> str | None:
    """Why no Docker daemon answers here, or None."""
    if shutil.which("docker") is None:
        return "the docker CLI is not installed"
    done = subprocess.run(["docker", "info"], capture_output=True, timeout=30)
    return None if done.returncode == 0 else "no Docker daemon answers `docker info`"


@pytest.fixture(scope="session")
def cli_cache(tmp_path_factory) -> str:
    require(None if shutil.which("npm") else "npm is not installed (scripts/services.d/npm.sh)")
    ci = os.environ.get("AGENTENV_CI_CACHE")
    return ci or str(tmp_path_factory.mktemp("cli-agent-cache"))


def _solve(tmp_path: Path, cli_cache: str, bundle: Path, *args: str, runs: int = 2):
    """Run `bundle` `runs` times on fresh homes; each must pass. Returns the home, the
    records, the stderr logs and the first run's model server."""
    home = tmp_path / "home"
    env = {"AGENTENV_CI_CACHE": cli_cache}
    records, logs, servers = [], [], []
    for _ in range(runs):  # the second run reuses the cached install
        with ScriptedModelServer(TOOL_THEN_TEXT, side_requests=True) as model:
            env.update(LITELLM_BASE_URL=model.base_url, LITELLM_API_KEY="sk-test-key-123456")
            data, stderr = run_json(home, str(bundle), *args, "--model", "scripted-1", env=env)
        [record] = data["tasks"]
        assert record["status"] == "passed", f"{record['outcome']}\n{stderr}"
        records.append(record)
        logs.append(stderr)
        servers.append(model)
    return home, records, logs, servers[0]


def _assert_solved(home: Path, record: dict, model: ScriptedModelServer, agent: str) -> None:
    """The verifiers pass, the model saw the gateway's tools, the trajectory is stored with
    the calls under the agent's role, and no secret leaked into the record."""
    assert {v["score"] for v in record["verifiers"].values()} == {1.0}
    assert record["agent"] == agent
    main = [r for r in model.requests if tool_names(r)]
    names = tool_names(main[0])
    assert any(n.endswith("add_note") for n in names), names
    shown = show_json(home, record["id"])
    trajectory = shown["trajectories"]["ask"]
    kinds = [e["type"] for e in trajectory["events"]]
    assert kinds[0] == "user" and kinds[-1] == "exit" and "tool" in kinds, kinds
    assert trajectory["events"][-1]["exit_code"] == 0
    tools = [e for e in trajectory["events"] if e["type"] == "tool"]
    assert any((e["name"] or "").endswith("add_note") for e in tools), tools
    added = [c for c in trajectory["gateway_calls"] if c["tool"] == "add_note"]
    assert added and added[0]["arguments"] == {"title": "groceries", "body": "milk, eggs, bread"}
    assert {c["role"] for c in trajectory["gateway_calls"]} == {"default-agent"}
    assert "groceries" in shown["instance"]["outputs"]["ask"]["response"]
    assert "sk-test-key-123456" not in json.dumps(shown)


@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini", "opencode", "pi"])
def test_cli_agent_solves_notes_agent(tmp_path, cli_cache, agent):
    home, (first, _), (first_log, second_log), model = _solve(
        tmp_path, cli_cache, NOTES_AGENT, "--agent", agent
    )
    assert "installed in" in first_log or "reused from the cache" in first_log
    assert "reused from the cache" in second_log
    _assert_solved(home, first, model, agent)


@pytest.mark.parametrize("agent", ["codex", "gemini"])
def test_cli_agent_solves_notes_agent_in_docker(tmp_path, cli_cache, agent):
    """A CLI in a Docker sandbox (Codex: a native binary; Gemini CLI: JavaScript that needs a
    newer Node.js than the Debian base image has): the image (the host's install with its
    Node.js, copied in) is built once and reused by the second run; the gateway and the
    loopback-only model server are reached through relays."""
    require(docker_missing())
    steps = groceries_steps(sandbox_type="docker")
    bundle = notes_bundle(tmp_path, {"groceries": steps})
    home, (first, _), (first_log, second_log), model = _solve(
        tmp_path, cli_cache, bundle, "--agent", agent
    )
    tag = f"image agentenv/cli-{agent}:"
    assert tag in first_log, first_log
    assert "reused" in second_log.split(tag)[1].splitlines()[0]
    _assert_solved(home, first, model, agent)
    shown = show_json(home, first["id"])
    exit_event = shown["trajectories"]["ask"]["events"][-1]
    assert exit_event["provider"] == "docker", exit_event
    assert exit_event["image"].startswith(f"agentenv/cli-{agent}:"), exit_event


def test_cli_agent_timeout_and_crash_are_attributed(tmp_path, cli_cache):
    """A model that never answers makes the CLI time out (`timeout`); a model endpoint that
    refuses every call makes it exit with an error (`agent`), not a wrong answer."""
    steps = json.loads((NOTES_AGENT / "tasks" / "groceries.json").read_text())
    steps[2]["timeout_seconds"] = 8
    bundle = tmp_path / "bundle"
    shutil.copytree(NOTES_AGENT, bundle)
    (bundle / "tasks" / "groceries.json").write_text(json.dumps(steps))
    env = {"AGENTENV_CI_CACHE": cli_cache}
    outcomes = {}
    for name, script in {
        "slow": [{"content": "late", "delay": 60, "repeat": True}],
        "broken": [{"status": 400, "message": "bad model", "repeat": True}],
    }.items():
        with ScriptedModelServer(script, side_requests=True) as model:
            env.update(LITELLM_BASE_URL=model.base_url)
            data, stderr = run_json(
                tmp_path / f"home-{name}",
                str(bundle),
                "--agent",
                "codex",
                "--model",
                "scripted-1",
                env=env,
            )
        [record] = data["tasks"]
        record["log"] = [line for line in stderr.splitlines() if "ask" in line]
        outcomes[name] = record
    assert outcomes["slow"]["status"] == "failed", outcomes["slow"]["log"]
    assert outcomes["slow"]["failure_class"] == "timeout", outcomes["slow"]
    assert outcomes["broken"]["status"] == "failed"
    assert outcomes["broken"]["failure_class"] == "agent", outcomes["broken"]


def test_install_agent_puts_a_cli_agent_into_a_deployed_sandbox(tmp_path, cli_cache):
    """`install_agent` with a CLI agent name installs it into the task's own sandbox."""
    steps = json.loads((NOTES_AGENT / "tasks" / "groceries.json").read_text())
    box = {"id": "box", "type": "deploy_sandbox", "sandbox_name": "box", "sandbox_mode": "vm"}
    install = {
        "id": "agent",
        "type": "install_agent",
        "sandbox_name": "box",
        "a2a_agent_id": "cc",
    }
    bundle = tmp_path / "bundle"
    shutil.copytree(NOTES_AGENT, bundle)
    (bundle / "tasks" / "groceries.json").write_text(
        json.dumps([steps[0], box, install, *steps[2:]])
    )
    (bundle / "agents" / "cc").mkdir()
    (bundle / "agents" / "cc" / "agent.toml").write_text('type = "claude-code"\n')
    with ScriptedModelServer(TOOL_THEN_TEXT, side_requests=True) as model:
        env = {"AGENTENV_CI_CACHE": cli_cache, "LITELLM_BASE_URL": model.base_url}
        data, stderr = run_json(tmp_path / "home", str(bundle), "--model", "scripted-1", env=env)
    [record] = data["tasks"]
    assert record["status"] == "passed", f"{record['outcome']}\n{stderr}"
    assert record["agent"] == "claude-code:cc"
