"""Agents end to end through `agent-env run`: what reaches the agent (env_vars, model, system
prompt, the gateway), multi-turn conversations, retries, the LLM judge's justifications, unit
test verifiers, and the classified failures (agent, env, infrastructure) that never hang."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from agents_support import groceries_steps, notes_bundle, run_json, show_json  # noqa: E402

from agentenv_protocol.agent.testing import ScriptedModelServer  # noqa: E402

ECHO_AGENT = """
import os
from agentenv_protocol.agent import A2AAgent, AgentResult, serve


class Echo(A2AAgent):
    name = "echo-config"

    async def run(self, request):
        servers = ",".join(s.name + ("+auth" if s.headers else "") for s in request.mcp_servers)
        return AgentResult(text=f"TZ={os.environ.get('TZ')} model={request.config.model} "
                                f"role={request.config.role} system={request.config.system_prompt} "
                                f"servers={servers} turn={len(request.history)}")


serve(Echo())
"""


def prompt_steps(prompt: str = "hello", **deploy) -> list[dict]:
    return [
        {"id": "agent", "type": "deploy_agent", **deploy},
        {
            "id": "ask",
            "type": "prompt_agent",
            "prompt_id": "ask",
            "prompt": prompt,
            "timeout_seconds": 30,
        },
    ]


def test_a2a_agent_gets_env_vars_model_system_prompt_and_gateway(tmp_path):
    steps = [
        {"id": "env", "type": "deploy_env", "env_id": "notes"},
        *prompt_steps(
            a2a_agent_id="echo",
            env_ids=["notes"],
            env_vars={"TZ": "America/New_York"},
            system_prompt="be brief",
            role="solver",
        ),
        {
            "id": "check",
            "type": "agent_prompt_response_verifier",
            "prompt_id": "ask",
            "verifier_id": "v",
            "criteria": [
                {
                    "type": "response_contains",
                    "needles": [
                        "TZ=America/New_York",
                        "model=m-7",
                        "role=solver",
                        "system=be brief",
                        "servers=gateway+auth",
                    ],
                }
            ],
        },
    ]
    bundle = notes_bundle(
        tmp_path,
        {"t": steps},
        agents={
            "echo": {"agent.toml": 'command = ["python", "agent.py"]\n', "agent.py": ECHO_AGENT}
        },
    )
    data, stderr = run_json(tmp_path / "home", str(bundle), "--model", "m-7")
    [record] = data["tasks"]
    assert record["status"] == "passed", record["outcome"] + "\n" + stderr


def test_multi_turn_prompts_keep_the_conversation(tmp_path):
    steps = [
        *prompt_steps("first question"),
        {"id": "again", "type": "prompt_agent", "prompt_id": "again", "prompt": "second question"},
    ]
    bundle = notes_bundle(tmp_path, {"t": steps})
    with ScriptedModelServer([{"content": "first answer"}, {"content": "second answer"}]) as model:
        data, stderr = run_json(
            tmp_path / "home", str(bundle), env={"LITELLM_BASE_URL": model.base_url}
        )
    assert data["tasks"][0]["status"] == "unscored", stderr
    assert [m["content"] for m in model.requests[1]["messages"]] == [
        "first question",
        "first answer",
        "second question",
    ]
    assert data["tasks"][0]["outputs"]["again"]["response"] == "second answer"


def test_429_and_503_are_retried(tmp_path):
    steps = [
        *prompt_steps(),
        {
            "id": "check",
            "type": "agent_prompt_response_verifier",
            "prompt_id": "ask",
            "criteria": [{"type": "response_regex_present", "pattern": "^fine$"}],
        },
    ]
    bundle = notes_bundle(tmp_path, {"t": steps})
    script = [{"status": 429}, {"status": 503}, {"content": "fine"}]
    with ScriptedModelServer(script) as model:
        data, stderr = run_json(
            tmp_path / "home", str(bundle), env={"LITELLM_BASE_URL": model.base_url}
        )
    assert data["tasks"][0]["status"] == "passed", stderr
    assert len(model.requests) == 3


def _failure(
    tmp_path: Path, steps: list, script: list | None, **deploy_env
) -> tuple[dict, float, str]:
    bundle = notes_bundle(tmp_path, {"t": steps})
    env = {}
    started = time.perf_counter()
    if script is None:
        data, stderr = run_json(tmp_path / "home", str(bundle), env=env)
    else:
        with ScriptedModelServer(script) as model:
            env["LITELLM_BASE_URL"] = model.base_url
            data, stderr = run_json(tmp_path / "home", str(bundle), env=env)
    [record] = data["tasks"]
    assert record["status"] == "failed", stderr
    return record, time.perf_counter() - started, stderr


def test_missing_model_endpoint_is_an_infrastructure_failure_at_deploy(tmp_path):
    record, _, _ = _failure(tmp_path, prompt_steps(), None)
    assert record["failure"]["step"] == "agent"
    assert record["failure"]["class"] == "infrastructure"
    assert (
        "no model endpoint" in record["failure"]["message"]
        and "LITELLM_BASE_URL" in record["failure"]["message"]
    )


def test_unreachable_agent_is_an_agent_failure_quickly(tmp_path):
    bundle = notes_bundle(
        tmp_path,
        {"t": prompt_steps(a2a_agent_id="remote")},
        agents={
            "remote": {"agent.toml": 'url = "http://127.0.0.1:9"\nstartup_timeout_seconds = 2\n'}
        },
    )
    started = time.perf_counter()
    data, _ = run_json(tmp_path / "home", str(bundle))
    [record] = data["tasks"]
    assert time.perf_counter() - started < 30
    assert (record["failure"]["step"], record["failure"]["class"]) == ("agent", "agent")
    assert "unreachable" in record["failure"]["message"]


def test_model_that_never_stops_calling_tools_hits_max_turns(tmp_path):
    steps = groceries_steps()
    steps[2]["max_turns"] = 3
    script = [{"tool_calls": [{"name": "list_notes", "arguments": {}}], "repeat": True}]
    record, _, _ = _failure(tmp_path, steps, script)
    assert (record["failure"]["step"], record["failure"]["class"]) == ("ask", "agent")
    assert "kept calling tools for 3 turns" in record["failure"]["message"]
    assert len(record["outputs"]["ask"]["tool_calls"]) == 3


def test_malformed_model_response_is_an_agent_failure(tmp_path):
    record, _, _ = _failure(tmp_path, prompt_steps(), [{"raw": "<html>oops</html>"}])
    assert (record["failure"]["step"], record["failure"]["class"]) == ("ask", "agent")
    assert "not JSON" in record["failure"]["message"]


def test_dead_model_endpoint_is_infrastructure_not_a_hang(tmp_path):
    record, seconds, _ = _failure(tmp_path, prompt_steps(), [{"status": 503, "times": 10}])
    assert record["failure"]["class"] == "infrastructure"
    assert "failed 5 times" in record["failure"]["message"]


def test_prompt_timeout_is_recorded(tmp_path):
    steps = prompt_steps()
    steps[1]["timeout_seconds"] = 1
    record, seconds, _ = _failure(tmp_path, steps, [{"content": "late", "delay": 5}])
    assert record["failure"]["class"] == "timeout"
    assert "did not answer within 1s" in record["failure"]["message"]


def test_rubrics_judge_keeps_its_justification(tmp_path):
    steps = [
        *prompt_steps("Say thanks"),
        {
            "id": "judge",
            "type": "rubrics_verifier",
            "prompt_id": "ask",
            "verifier_id": "rubric",
            "default_model": "judge-1",
            "output_format": "rubric_partial",
            "score_aggregator": "weighted_average",
            "criteria": [
                {"id": "polite", "criterion": "The answer thanks the user"},
                {"id": "short", "criterion": "The answer is one sentence", "weight": 1},
            ],
        },
    ]
    bundle = notes_bundle(tmp_path, {"t": steps})
    judge = {
        "criteria": [
            {"id": "polite", "score": 1, "justification": "It says thank you."},
            {"id": "short", "score": 0.5, "justification": "Two sentences."},
        ]
    }
    script = [
        {"content": "Thank you! Really."},
        {"content": "```json\n" + json.dumps(judge) + "\n```"},
    ]
    with ScriptedModelServer(script) as model:
        data, stderr = run_json(
            tmp_path / "home", str(bundle), env={"LITELLM_BASE_URL": model.base_url}
        )
    [record] = data["tasks"]
    assert model.requests[1]["model"] == "judge-1"
    assert "Thank you! Really." in model.requests[1]["messages"][1]["content"]
    rows = {r["id"]: r for r in record["verifiers"]["rubric"]["results"]}
    assert (
        rows["polite"]["justification"] == "It says thank you." and rows["polite"]["result"] is True
    )
    assert rows["short"]["score"] == 0.5 and rows["short"]["result"] is False
    assert record["verifiers"]["rubric"]["score"] == 0.75
    shown = show_json(tmp_path / "home", record["id"])
    assert (
        shown["instance"]["verifiers"]["rubric"]["results"][1]["justification"] == "Two sentences."
    )


def test_unit_test_verifier_exit_code_and_reward_file(tmp_path):
    steps = [
        {"id": "box", "type": "deploy_sandbox", "sandbox_name": "box", "sandbox_mode": "vm"},
        {
            "id": "tests",
            "type": "run_container_unit_tests_verifier",
            "sandbox_name": "box",
            "container_name": "main",
            "setup_commands": ["echo ok > ready.txt"],
            "command": "test -f ready.txt",
            "result_paths": ["ready.txt"],
        },
        {
            "id": "reward",
            "type": "run_container_unit_tests_verifier",
            "sandbox_name": "box",
            "container_name": "main",
            "command": "echo 0.25 > reward.txt",
            "reward_path": "/app/reward.txt",
            "env_vars": {"MODE": "x"},
        },
    ]
    bundle = notes_bundle(tmp_path, {"t": steps})
    data, stderr = run_json(tmp_path / "home", str(bundle))
    [record] = data["tasks"]
    assert record["verifiers"]["tests"]["score"] == 1.0, stderr
    assert record["verifiers"]["tests"]["results"][0]["result_files"] == {"ready.txt": "ok\n"}
    assert record["verifiers"]["reward"]["score"] == 0.25
    assert record["status"] == "scored_below"


@pytest.mark.parametrize("reward", ["nan", "inf"])
def test_a_reward_file_that_is_not_a_finite_number_scores_zero(tmp_path, reward):
    """A reward file holding `nan` or `inf` (what the agent may write) scores 0 and says so;
    before, the score reached the store and the run failed "not JSON-serializable"."""
    steps = [
        {"id": "box", "type": "deploy_sandbox", "sandbox_name": "box", "sandbox_mode": "vm"},
        {
            "id": "reward",
            "type": "run_container_unit_tests_verifier",
            "sandbox_name": "box",
            "container_name": "main",
            "command": f"echo {reward} > reward.txt",
            "reward_path": "/app/reward.txt",
        },
    ]
    data, stderr = run_json(tmp_path / "home", str(notes_bundle(tmp_path, {"t": steps})))
    [record] = data["tasks"]
    assert record["verifiers"]["reward"]["score"] == 0.0, stderr
    [row] = record["verifiers"]["reward"]["results"]
    assert f"holds {reward!r}, not a finite number" in row["justification"], row
    assert record["status"] == "scored_below", record


def test_a_judge_score_of_nan_is_not_a_grading(tmp_path):
    """NaN from the judge clamped to 1.0 (a full score); it is refused as not a grading."""
    steps = [
        *prompt_steps("Say thanks"),
        {
            "id": "judge",
            "type": "rubrics_verifier",
            "prompt_id": "ask",
            "verifier_id": "rubric",
            "default_model": "judge-1",
            "criteria": [{"id": "polite", "criterion": "The answer thanks the user"}],
        },
    ]
    nan = {"content": '{"criteria": [{"id": "polite", "score": NaN, "justification": "x"}]}'}
    script = [{"content": "Thank you!"}, nan, nan]  # asked twice
    with ScriptedModelServer(script) as model:
        data, stderr = run_json(
            tmp_path / "home",
            str(notes_bundle(tmp_path, {"t": steps})),
            env={"LITELLM_BASE_URL": model.base_url},
        )
    [record] = data["tasks"]
    assert record["status"] == "failed", record
    assert "score nan is not a finite number" in record["failure"]["message"], record["failure"]
    assert "That was not usable" in model.requests[2]["messages"][-1]["content"]


def test_secrets_are_redacted_from_answers_and_stored_trajectories(tmp_path):
    bundle = notes_bundle(tmp_path, {"t": prompt_steps()})
    key = "sk-live-0123456789abcdef"
    with ScriptedModelServer([{"content": f"the key is {key}"}]) as model:
        data, _ = run_json(
            tmp_path / "home",
            str(bundle),
            env={"LITELLM_BASE_URL": model.base_url, "LITELLM_API_KEY": key},
        )
    [record] = data["tasks"]
    shown = show_json(tmp_path / "home", record["id"])
    assert shown["trajectories"]["ask"]["response"].startswith("the key is ")
    assert key not in json.dumps(shown) and key not in json.dumps(data)


def test_scripted_agent_folder_with_parts_prompt_and_agent_scoped_call_checks(tmp_path):
    script = {
        "turns": [
            {
                "tool_calls": [
                    {"tool": "read_note", "arguments": {"title": "nope"}, "allow_error": True},
                    {"tool": "add_note", "arguments": {"title": "a", "body": "1"}},
                ],
                "response": "first",
            },
            {"tool_calls": [{"tool": "list_notes"}], "response": "second"},
        ]
    }
    steps = [
        {"id": "env", "type": "deploy_env", "env_id": "notes"},
        {"id": "agent", "type": "deploy_agent", "a2a_agent_id": "solver", "agent_name": "solver"},
        {
            "id": "one",
            "type": "prompt_agent",
            "agent_name": "solver",
            "prompt_id": "one",
            "parts": [{"kind": "text", "text": "do"}, {"kind": "data", "data": {"n": 1}}],
        },
        {
            "id": "two",
            "type": "prompt_agent",
            "agent_name": "solver",
            "prompt_id": "two",
            "prompt": "more",
        },
        {
            "id": "calls",
            "type": "tool_call_verifier",
            "agent_name": "solver",
            "verifier_id": "calls",
            "score_aggregator": "weighted_average",
            "criteria": [
                {"id": "count", "type": "tool_call_count", "min": 3, "max": 3},
                {"id": "reads", "type": "tool_call_count", "tool": "read_note", "max": 0},
                {"id": "clean", "type": "no_tool_errors"},
                {
                    "id": "added",
                    "type": "tool_called",
                    "tool": "add_note",
                    "arguments": {"body": "1"},
                },
            ],
        },
    ]
    bundle = notes_bundle(
        tmp_path,
        {"t": steps},
        agents={
            "solver": {
                "agent.toml": 'type = "scripted"\nscript = "solution.json"\n',
                "solution.json": json.dumps(script),
            }
        },
    )
    data, stderr = run_json(tmp_path / "home", str(bundle))
    [record] = data["tasks"]
    assert record["outputs"]["one"]["prompt"] == 'do\n{"n": 1}'
    assert (record["outputs"]["one"]["response"], record["outputs"]["two"]["response"]) == (
        "first",
        "second",
    )
    rows = {r["id"]: r for r in record["verifiers"]["calls"]["results"]}
    assert [rows[k]["result"] for k in ("count", "reads", "clean", "added")] == [
        True,
        False,
        False,
        True,
    ], rows
    assert "read_note" in rows["clean"]["justification"]
    assert record["verifiers"]["calls"]["score"] == 0.5


def test_an_agent_that_crashes_on_start_fails_fast_with_its_output(tmp_path):
    bundle = notes_bundle(
        tmp_path,
        {"t": prompt_steps(a2a_agent_id="broken")},
        agents={
            "broken": {
                "agent.toml": 'command = ["python", "agent.py"]\n',
                "agent.py": "raise SystemExit('cannot start: no GPU here')\n",
            }
        },
    )
    started = time.perf_counter()
    data, _ = run_json(tmp_path / "home", str(bundle))
    [record] = data["tasks"]
    assert time.perf_counter() - started < 30
    assert (record["failure"]["step"], record["failure"]["class"]) == ("agent", "agent")
    assert "exited with code 1" in record["failure"]["message"]
    assert "cannot start: no GPU here" in record["failure"]["message"]


def test_envs_deployed_after_the_agent_reach_it_at_the_next_prompt(tmp_path):
    steps = [
        {"id": "agent", "type": "deploy_agent", "a2a_agent_id": "echo"},
        {"id": "env", "type": "deploy_env", "env_id": "notes"},
        {"id": "ask", "type": "prompt_agent", "prompt_id": "ask", "prompt": "hi"},
        {
            "id": "check",
            "type": "agent_prompt_response_verifier",
            "prompt_id": "ask",
            "criteria": [{"type": "response_contains", "needles": ["servers=gateway+auth"]}],
        },
    ]
    bundle = notes_bundle(
        tmp_path,
        {"t": steps},
        agents={
            "echo": {"agent.toml": 'command = ["python", "agent.py"]\n', "agent.py": ECHO_AGENT}
        },
    )
    data, stderr = run_json(tmp_path / "home", str(bundle))
    assert data["tasks"][0]["status"] == "passed", data["tasks"][0]["outcome"] + stderr


JUDGE_AGENT = """
import json
from agentenv_protocol.agent import A2AAgent, AgentResult, serve


class Judge(A2AAgent):
    async def run(self, request):
        met = "thank" in request.text.lower() and "JSON only" in (request.config.system_prompt or "")
        return AgentResult(text=json.dumps({"criteria": [
            {"id": "polite", "score": 1 if met else 0, "justification": "graded by the judge agent"}]}))


serve(Judge())
"""


def test_rubrics_with_a_judge_agent_from_the_bundle(tmp_path):
    steps = [
        *prompt_steps("Say thanks"),
        {
            "id": "judge",
            "type": "rubrics_verifier",
            "prompt_id": "ask",
            "verifier_id": "rubric",
            "judge_a2a_agent_id": "judge",
            "criteria": [{"id": "polite", "criterion": "thanks the user"}],
        },
    ]
    bundle = notes_bundle(
        tmp_path,
        {"t": steps},
        agents={
            "judge": {"agent.toml": 'command = ["python", "judge.py"]\n', "judge.py": JUDGE_AGENT}
        },
    )
    with ScriptedModelServer([{"content": "Thank you!"}]) as model:
        data, stderr = run_json(
            tmp_path / "home", str(bundle), env={"LITELLM_BASE_URL": model.base_url}
        )
    [record] = data["tasks"]
    assert record["status"] == "passed", record["outcome"] + stderr
    [row] = record["verifiers"]["rubric"]["results"]
    assert row["justification"] == "graded by the judge agent"
    assert len(model.requests) == 1  # the judge agent answered, not the model


def test_model_endpoint_and_key_from_the_config_file(tmp_path):
    bundle = notes_bundle(tmp_path, {"t": prompt_steps()})
    config = tmp_path / "home" / "config.toml"
    config.parent.mkdir(parents=True)
    with ScriptedModelServer([{"content": "ok"}]) as model:
        config.write_text(
            f'[model]\nbase_url = "{model.base_url}"\napi_key = "env:MY_MODEL_KEY"\ndefault = "cfg-model"\n'
        )
        data, stderr = run_json(
            tmp_path / "home",
            str(bundle),
            env={"AGENT_ENV_CONFIG": str(config), "MY_MODEL_KEY": "sk-from-env-ref-42"},
        )
    assert data["tasks"][0]["status"] == "unscored", stderr
    assert model.authorizations == ["Bearer sk-from-env-ref-42"]
    assert model.requests[0]["model"] == "cfg-model"
