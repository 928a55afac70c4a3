"""The scripted model server keyed by conversation: concurrent trials of a tool-loop task each
play the script from its start, so a 20-trial run at concurrency 8 passes every trial."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from agents_support import run_json  # noqa: E402
from bank_support import PAY_BOB, bank_bundle  # noqa: E402

from agentenv_protocol.agent.testing import ScriptedModelServer  # noqa: E402

SCRIPT = [{"content": "one"}, {"content": "two"}]


def ask(client: httpx.Client, prompt: str, history: int = 0, **headers: str) -> str:
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": prompt}]
    messages += [{"role": "assistant", "content": "..."}] * history
    answer = client.post("/chat/completions", json={"messages": messages}, headers=headers)
    assert answer.status_code == 200, answer.text
    return answer.json()["choices"][0]["message"]["content"]


def test_interleaved_conversations_each_get_the_script_from_its_start():
    model = ScriptedModelServer(SCRIPT, per_conversation=True)
    with model, httpx.Client(base_url=model.start(), trust_env=False) as client:
        got = [ask(client, "a"), ask(client, "b"), ask(client, "a", 1), ask(client, "b", 1)]
        by_header = [
            ask(client, "a", **{"X-Conversation-Id": "t-1"}),
            ask(client, "a", **{"X-Conversation-Id": "t-2"}),
        ]
        exhausted = client.post(
            "/chat/completions", json={"messages": [{"role": "user", "content": "a"}]}
        )
    assert got == ["one", "one", "two", "two"]
    assert by_header == ["one", "one"]
    assert exhausted.status_code == 500 and "script exhausted" in exhausted.text
    assert model.positions == {"a": 2, "b": 2, "t-1": 1, "t-2": 1}


def test_without_it_the_script_is_one_queue():
    model = ScriptedModelServer(SCRIPT)
    with model, httpx.Client(base_url=model.start(), trust_env=False) as client:
        assert [ask(client, "a"), ask(client, "b")] == ["one", "two"]


def test_twenty_trials_at_concurrency_8_of_a_tool_loop_task_all_pass(tmp_path):
    bundle = bank_bundle(
        tmp_path / "bundle",
        prompt="Send {amount} to {to} (request {trial}).",
        seeds='[[trial]]\namount = 15000\nto = "bob"\n',
    )
    with ScriptedModelServer(PAY_BOB, per_conversation=True) as model:
        data, stderr = run_json(
            tmp_path / "home",
            str(bundle),
            "--trials",
            "20",
            "--concurrency",
            "8",
            env={"LITELLM_BASE_URL": model.base_url},
        )
    rows = data["tasks"]
    assert len(rows) == 20
    failed = [(r["trial"], r["status"], r.get("failure")) for r in rows if r["status"] != "passed"]
    assert failed == [], stderr[-3000:]
    assert sorted(model.positions) == sorted(f"Send 15000 to bob (request {t})." for t in range(20))
    assert set(model.positions.values()) == {2}
