"""`agent-env bundle push FOLDER hf://org/repo[@branch][/path]` end to end: the real CLI and
`huggingface_hub` client against the local Hub, then `agent-env run` of what was pushed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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
            {
                "type": "bash_cmd_succeeds",
                "bash_cmd": "grep -rq 'pushed hello' /app && [ {seed} = 7 ]",
            }
        ],
    },
    {"id": "done", "type": "teardown_sandboxes", "sandbox_names": ["box"]},
]


def _agent_env(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("agent-env")
    return subprocess.run([str(exe), *args], env=env, capture_output=True, text=True, timeout=240)


def _bundle(root: Path) -> Path:
    files = {
        "README.md": "# hello, pushed\n",
        "seeds.toml": "seeds = [7]\n",
        "tasks/hello.json": json.dumps(TASK),
        "tasks/old.json": json.dumps(TASK),
        "artifacts/greeting/greeting.txt": "pushed hello\n",
        "artifacts/greeting/__pycache__/x.pyc": "cache",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_push_then_run_from_the_hub_and_push_again(hub, cache, endpoint, token, tmp_path):
    folder = _bundle(tmp_path / "hello")
    base = {**os.environ, "AGENT_ENV_HOME": str(tmp_path / "home"), "HF_ENDPOINT": endpoint}
    base.pop("AGENT_ENV_CONFIG", None)

    refused = _agent_env(["bundle", "push", str(folder), "hf://org/hello"], base)
    assert refused.returncode != 0 and "needs a token" in refused.stderr, refused.stderr
    assert hub.repos == {}

    env = {**base, "HF_TOKEN": token}
    pushed = _agent_env(["bundle", "push", str(folder), "hf://org/hello", "--json"], env)
    assert pushed.returncode == 0, pushed.stderr
    done = json.loads(pushed.stdout)
    repo = hub.repos["org/hello"]
    assert done["commit"] == repo.branches["main"] and done["repo"] == "org/hello"
    tree = repo.commits[repo.branches["main"]]
    assert tree["artifacts/greeting/greeting.txt"] == b"pushed hello\n"
    assert "artifacts/greeting/__pycache__/x.pyc" not in tree and "tasks/old.json" in tree
    writes = [r.kind for r in hub.log if r.method == "POST" and r.kind != "validate-yaml"]
    assert writes == ["create", "preupload", "commit"]

    ran = _agent_env(["run", "hf://org/hello", "--json"], env)
    assert ran.returncode == 0, ran.stderr
    records = json.loads(ran.stdout)["tasks"]
    assert {r["task"]["name"]: r["status"] for r in records} == {"hello": "passed", "old": "passed"}
    assert {r["bundle"]["provenance"]["commit"] for r in records} == {done["commit"]}

    (folder / "tasks" / "old.json").unlink()
    again = _agent_env(["bundle", "push", str(folder), "hf://org/hello@dev", "-m", "drop old"], env)
    assert again.returncode == 0, again.stderr
    assert "Run it with: agent-env run hf://org/hello@dev" in again.stdout
    dev = repo.commits[repo.branches["dev"]]
    assert "tasks/old.json" not in dev and "tasks/hello.json" in dev
    assert "tasks/old.json" in repo.commits[repo.branches["main"]]
    on_dev = _agent_env(["run", "hf://org/hello@dev", "--json"], env)
    assert on_dev.returncode == 0, on_dev.stderr
    assert [r["task"]["name"] for r in json.loads(on_dev.stdout)["tasks"]] == ["hello"]


def test_a_bundle_with_problems_is_not_pushed(hub, cache, endpoint, token, tmp_path):
    folder = _bundle(tmp_path / "bad")
    (folder / "tasks" / "hello.json").write_text(json.dumps([{**TASK[0], "type": "deploy_sandbx"}]))
    env = {**os.environ, "AGENT_ENV_HOME": str(tmp_path / "home"), "HF_ENDPOINT": endpoint}
    env["HF_TOKEN"] = token
    done = _agent_env(["bundle", "push", str(folder), "hf://org/bad"], env)
    assert done.returncode == 2 and "deploy_sandbox" in done.stderr, done.stderr
    assert hub.repos == {} and not [r for r in hub.log if r.method == "POST"]
