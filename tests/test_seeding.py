"""Seeding an env through its data plane (`load_artifact` with `via = "data_plane"`) and the
verifier helpers (`agentenv_protocol.verifier`), through the real CLI: the bank-seed example
passes on local and Docker; a verifier may read an env's state but not reset or add to it; bad
steps are refused by `check` naming the field; an env whose `@add_data` raises fails the step
as the env's fault with its reason."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from envs_helpers import agent_env, copy_example

from agentenv_protocol.client import ToolResult
from agentenv_protocol.verifier import VerifierToolError, value_of


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def task(bundle: Path) -> list[dict]:
    return json.loads((bundle / "tasks" / "pay.json").read_text())


def write_task(bundle: Path, steps: list[dict]) -> None:
    (bundle / "tasks" / "pay.json").write_text(json.dumps(steps))


@pytest.mark.parametrize("sandbox", ["local", "docker"])
def test_the_bank_is_seeded_before_the_agents_turn_and_verified(sandbox, home, tmp_path):
    if sandbox == "docker":
        from agentenv_docker_sandbox.testing import require_docker

        require_docker("python:3.11-slim")
    bundle = copy_example("bank-seed", tmp_path / "bank-seed")
    done = agent_env(home, "run", str(bundle), "--sandbox", sandbox, "--json", timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    (row,) = json.loads(done.stdout)["tasks"]
    assert row["status"] == "passed", row
    assert "seeded through its data plane: 1 part(s)" in done.stderr
    # the env server's own output goes to its kept log, never to the run's stderr
    for line in done.stderr.splitlines():
        assert not line.startswith(("INFO:", "WARNING:", "agentenv: serving")), line
        assert "Uvicorn running" not in line and "Started server process" not in line, line


def test_a_verifier_reads_the_env_but_cannot_reset_or_add(home, tmp_path):
    bundle = copy_example("bank-seed", tmp_path / "bank-seed")
    probe = bundle / "artifacts" / "probe" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text(
        "import httpx\n"
        "from agentenv_protocol.verifier import env_data\n"
        "def verify(mcp_url):\n"
        "    rpc = mcp_url[: -len('/mcp')] + '/svc/bank/rpc'\n"
        "    rows = [{'id': 'read', 'result': len(env_data(mcp_url, 'bank')) == 1}]\n"
        "    for method in ('data/reset', 'data/add'):\n"
        "        body = {'jsonrpc': '2.0', 'id': 1, 'method': method, 'params': {'parts': []}}\n"
        "        status = httpx.post(rpc, json=body).status_code\n"
        "        rows.append({'id': method, 'result': status == 403, 'description': str(status)})\n"
        "    card = httpx.get(mcp_url[: -len('/mcp')] + '/svc/bank/.well-known/agent-env.json')\n"
        "    rows.append({'id': 'other-routes', 'result': card.status_code == 403})\n"
        "    return rows\n"
    )
    steps = task(bundle) + [
        {
            "id": "probe",
            "type": "env_outcome_verifier",
            "env_id": "bank",
            "file_artifact_id": "probe",
            "verifier_id": "probe",
        }
    ]
    write_task(bundle, steps)
    done = agent_env(home, "run", str(bundle), "--json", timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "probe: 4/4 checks passed" in done.stderr


def test_bad_seeding_steps_are_refused_by_check_naming_the_field(home, tmp_path):
    bundle = copy_example("bank-seed", tmp_path / "bank-seed")
    steps = task(bundle)
    steps[1] = {**steps[1], "via": "data_plan"}
    write_task(bundle, steps)
    done = agent_env(home, "check", str(bundle))
    assert done.returncode != 0
    assert "via: 'data_plan' is not one of files, data_plane" in done.stdout + done.stderr
    assert "did you mean 'data_plane'" in (done.stdout + done.stderr).lower()
    steps[1] = {
        "id": "seed",
        "type": "load_artifact",
        "artifact_id": "accounts",
        "via": "data_plane",
        "destination_path": "/app/x",
        "sandbox_name": "box",
    }
    write_task(bundle, steps)
    out = agent_env(home, "check", str(bundle))
    text = out.stdout + out.stderr
    assert out.returncode != 0
    assert 'via = "data_plane" needs env_id' in text
    assert 'destination_path: not used with via = "data_plane"' in text
    assert not (home / "documents.sqlite3").exists() or "pay" not in text.split("check")[0]


def test_an_env_that_refuses_the_seed_fails_the_step_as_the_envs_fault(home, tmp_path):
    bundle = copy_example("bank-seed", tmp_path / "bank-seed")
    (bundle / "artifacts" / "accounts" / "accounts.json").write_text(
        '{"accounts": {"alice": "lots"}}'
    )
    done = agent_env(home, "run", str(bundle), "--json", timeout=600)
    assert done.returncode != 0
    (row,) = json.loads(done.stdout)["tasks"]
    assert row["failure_class"] == "env", row
    reason = row["failure"]["message"]
    assert row["failure"]["step"] == "seed", row
    assert "data/add failed" in reason and "not whole cents" in reason, reason


def _result(*texts: str, structured=None) -> ToolResult:
    return ToolResult(content=[{"type": "text", "text": t} for t in texts], structured=structured)


def test_value_of_reads_what_servers_send():
    # a list sent one block per item (mcp's FastMCP without structured output)
    assert value_of(_result('{"a": 1}', '{"b": 2}')) == [{"a": 1}, {"b": 2}]
    assert value_of(_result('{"a": 1}')) == {"a": 1}
    assert value_of(_result("plain words")) == "plain words"
    wrapped = {"properties": {"result": {}}, "required": ["result"], "title": "list_xOutput"}
    assert value_of(_result('"x"', structured={"result": ["x"]}), wrapped) == ["x"]
    assert value_of(_result("{}", structured={"result": 3}), {"properties": {"result": {}}}) == {
        "result": 3
    }
    with pytest.raises(VerifierToolError, match="no account"):
        value_of(ToolResult(is_error=True, content=[{"type": "text", "text": "no account 'x'"}]))
