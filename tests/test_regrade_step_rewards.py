"""Per-step rewards: a task with a `call_reward_verifier` records `step_rewards` ({call_index,
score, verifier}) on its trial record when it runs; plugins add their own scores through
`agentenv_score_call`; an OpenEnv episode of such a task carries each call's rewards in that
step's observation, the same entries the record then holds."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from agents_support import agent_env, groceries_steps, notes_bundle, run_json  # noqa: E402

from agent_env import hookimpl  # noqa: E402

REWARDS = {
    "id": "per-call",
    "type": "call_reward_verifier",
    "prompt_id": "ask",
    "verifier_id": "per-call",
    "rules": [
        {"tool": "add_note", "arguments": {"title": "groceries"}, "score": 1},
        {"tool": "list_notes", "score": 0.5},
    ],
    "default": 0,
}
EXPECTED = [
    {"call_index": 0, "score": 0.5, "verifier": "per-call"},
    {"call_index": 1, "score": 1.0, "verifier": "per-call"},
]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    base = tmp_path_factory.mktemp("rewards")
    return base, notes_bundle(base, {"groceries": [*groceries_steps(), REWARDS]})


@pytest.mark.slow
def test_a_run_records_the_step_rewards_on_the_trial(bundle):
    base, root = bundle
    data, stderr = run_json(base / "home", str(root), "--agent", "oracle", "--sandbox", "local")
    [record] = data["tasks"]
    assert record["step_rewards"] == EXPECTED, stderr
    assert record["verifiers"]["per-call"]["score"] == 0.75
    shown = agent_env(base / "home", "runs", "show", record["id"], "--json")
    assert json.loads(shown.stdout)["instance"]["step_rewards"] == EXPECTED


class Scorer:
    """A third-party scorer: penalises calls that failed, passes on the others."""

    @hookimpl
    def agentenv_score_call(self, call, index, task):
        return {"no-errors": 0.0} if call.get("error") else None


def test_plugins_score_calls_through_the_hook(plugin_manager, register_plugin, agent_env_home):
    import agentenv_core_steps.hooks
    import agentenv_grading.hooks
    from agent_env.results import RUNS, TRIALS, open_configured_stores
    from agentenv_grading.call_reward import CallRewardVerifier
    from agentenv_grading.regrade import Regrade, Verifiers

    register_plugin(agentenv_core_steps.hooks, "core-steps")
    register_plugin(agentenv_grading.hooks, "grading")
    register_plugin(Scorer(), "scorer")
    record = {
        "id": "ti-20260101000000-aaaaaa-00000",
        "run_id": "run-20260101000000-aaaaaa",
        "task": {"name": "t", "id": "@local/b/t", "version": 1},
        "status": "passed",
        "scores": {},
        "outputs": {
            "ask": {
                "prompt_id": "ask",
                "response": "done",
                "tool_calls": [
                    {"tool": "list_notes", "arguments": {}, "error": None},
                    {"tool": "read_note", "arguments": {"title": "x"}, "error": "not_found"},
                ],
            }
        },
    }

    async def go():
        stores = await open_configured_stores()
        try:
            await stores.documents.put(TRIALS, record["id"], record)
            await stores.documents.put(RUNS, record["run_id"], {"id": record["run_id"]})
            step = CallRewardVerifier(id="r", verifier_id="ok-calls", default=1.0)
            regrade = Regrade(Verifiers(steps=(step,)), plugin_manager, None, stores)
            summary = await regrade.run(stores.documents, record["run_id"])
            (_, new), *_ = (
                await stores.documents.query(TRIALS, where={"run_id": summary["run_id"]})
            ).items
            return new
        finally:
            await stores.close()

    new = anyio.run(go)
    assert new["step_rewards"] == [
        {"call_index": 0, "score": 1.0, "verifier": "ok-calls"},
        {"call_index": 1, "score": 1.0, "verifier": "ok-calls"},
        {"call_index": 1, "score": 0.0, "verifier": "no-errors"},
    ]
    assert new["verifiers"]["ok-calls"]["score"] == 0.75  # call 1: mean of 1 and 0


@pytest.mark.slow  # an OpenEnv server and an episode
@pytest.mark.timeout(300)
def test_an_openenv_step_observation_carries_the_calls_rewards(bundle, monkeypatch):
    from openenv.core.generic_client import GenericEnvClient

    from agent_env.openenv import build_app
    from agentenv_protocol.serving import serve_in_thread

    base, root = bundle
    home = base / "openenv-home"
    monkeypatch.setenv("AGENT_ENV_HOME", str(home))
    server = serve_in_thread(build_app(str(root)), startup_timeout=60)

    def call(tool, **arguments):
        return {"type": "call_tool", "tool_name": tool, "arguments": arguments}

    async def play():
        async with GenericEnvClient(base_url=server.url) as env:
            r = await env.reset(split="all", index=0)
            assert r.done is False, r.metadata
            listed = await env.step(call("list_notes"))
            added = await env.step(call("add_note", title="groceries", body="milk"))
            end = await env.step(call("end_turn", response="saved as 'groceries'"))
            return listed, added, end

    try:
        listed, added, end = anyio.run(play)
    finally:
        server.stop(timeout=60)
    assert (listed.reward, listed.metadata["step_rewards"]) == (0.5, EXPECTED[:1])
    assert (added.reward, added.metadata["step_rewards"]) == (1.0, EXPECTED[1:])
    shown = agent_env(home, "runs", "show", end.metadata["instance_id"], "--json")
    assert json.loads(shown.stdout)["instance"]["step_rewards"] == EXPECTED


class ResultScorer:
    """Scores a call by what it returned (only seen with `with_results`)."""

    @hookimpl
    def agentenv_score_call(self, call, index, task):
        if "result" not in call:
            return None
        return {"listed-draft": 1.0 if "draft" in json.dumps(call["result"]) else 0.0}


def test_with_results_the_verifiers_see_what_each_call_returned(
    plugin_manager, register_plugin, agent_env_home
):
    import agentenv_core_steps.hooks
    import agentenv_grading.hooks
    from agent_env.results import RUNS, TRIALS, open_configured_stores
    from agentenv_grading.call_reward import CallRewardVerifier
    from agentenv_grading.regrade import Regrade, Verifiers

    register_plugin(agentenv_core_steps.hooks, "core-steps")
    register_plugin(agentenv_grading.hooks, "grading")
    register_plugin(ResultScorer(), "result-scorer")
    key = "runs/run-20260102000000-bbbbbb/ti/trajectories/ask.json"
    calls = [
        {"tool": "list_notes", "arguments": {}, "error": None, "result": {"result": ["draft"]}},
        {"tool": "read_note", "arguments": {"title": "x"}, "error": "no", "result": None},
    ]
    record = {
        "id": "ti-20260102000000-bbbbbb-00000",
        "run_id": "run-20260102000000-bbbbbb",
        "task": {"name": "t", "id": "@local/b/t", "version": 1},
        "status": "passed",
        "scores": {},
        "outputs": {
            "ask": {
                "prompt_id": "ask",
                "response": "done",
                "trajectory": key,
                "tool_calls": [{k: v for k, v in c.items() if k != "result"} for c in calls],
            }
        },
    }

    async def go(with_results):
        stores = await open_configured_stores()
        try:
            await stores.objects.put(key, json.dumps({"gateway_calls": calls}).encode())
            await stores.documents.put(TRIALS, record["id"], record)
            await stores.documents.put(RUNS, record["run_id"], {"id": record["run_id"]})
            step = CallRewardVerifier(id="r", verifier_id="ok", default=1.0)
            regrade = Regrade(
                Verifiers(steps=(step,)), plugin_manager, None, stores, with_results=with_results
            )
            summary = await regrade.run(stores.documents, record["run_id"])
            page = await stores.documents.query(TRIALS, where={"run_id": summary["run_id"]})
            return page.items[0][1]["step_rewards"]
        finally:
            await stores.close()

    assert [r["verifier"] for r in anyio.run(go, False)] == ["ok", "ok"]
    assert anyio.run(go, True) == [
        {"call_index": 0, "score": 1.0, "verifier": "ok"},
        {"call_index": 0, "score": 1.0, "verifier": "listed-draft"},
        {"call_index": 1, "score": 1.0, "verifier": "ok"},
        {"call_index": 1, "score": 0.0, "verifier": "listed-draft"},
    ]


def test_the_record_field_is_optional_and_round_trips():
    from agent_env.engine.records import TaskInstanceRecord

    old = {"id": "ti-1", "run_id": "run-1", "task": {"name": "t"}}
    assert "step_rewards" not in TaskInstanceRecord.from_dict(old).to_dict()  # as before
    rewards = [{"call_index": 0, "score": 1.0, "verifier": "v"}]
    again = TaskInstanceRecord.from_dict({**old, "step_rewards": rewards}).to_dict()
    assert again["step_rewards"] == rewards
    with pytest.raises(Exception, match="step_rewards"):
        TaskInstanceRecord.from_dict({**old, "step_rewards": {"not": "a list"}})
