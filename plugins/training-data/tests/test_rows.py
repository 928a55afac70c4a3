"""The training row of a trial from what its record and trajectories hold: per-step rewards a
grader recorded, agents that record no events (the gateway's call log stands in), a trajectory
the object store lost, model turns from a CLI agent's harness, and the Parquet schema."""

from __future__ import annotations

import io
import json

from agent_env.exports import TrialExport
from agentenv_training_data.chat import conversation
from agentenv_training_data.formats import ChatParquet, parquet_schema
from agentenv_training_data.rows import COLUMNS, training_row

ROW = {
    "run_id": "run-1",
    "instance_id": "ti-1",
    "task": "t",
    "task_id": "@local/b/t",
    "task_version": 2,
    "trial": 3,
    "attempt": 0,
    "agent": "tool-loop",
    "model": "m",
    "seed": 7,
    "seed_values": {"trial": 3, "seed": 7, "city": "Oslo"},
    "scores": {"state": 0.5},
    "score": 0.5,
    "passed": False,
    "status": "scored_below",
    "outcome": "scored below 1 (state: 0.5)",
    "failure_class": "verifier",
    "failure": None,
    "started_at": "a",
    "finished_at": "b",
    "seconds": 1.5,
    "cost": {
        "prompt_tokens": 3,
        "completion_tokens": 4,
        "total_tokens": 7,
        "sandbox_seconds": {"docker": 2.0},
        "usd": 0.25,
    },
}


def _trial(record=None, trajectories=()):
    return TrialExport(record=record or {}, row=ROW, trajectories=list(trajectories))


def test_row_columns_step_rewards_and_costs():
    record = {
        "step_rewards": [
            {"call_index": 1, "score": 0.0, "verifier": "no-delete"},
            {"call_index": 0, "score": 1, "verifier": "added"},
            {"call_index": "x", "score": 1},
        ]
    }
    row = training_row(_trial(record))
    assert tuple(row) == COLUMNS
    assert row["step_rewards"] == [
        {"call_index": 0, "score": 1.0, "verifier": "added"},
        {"call_index": 1, "score": 0.0, "verifier": "no-delete"},
    ]
    assert (row["seed"], json.loads(row["seed_values"])["city"]) == ("7", "Oslo")
    assert row["scores"] == [{"verifier": "state", "score": 0.5}]
    assert (row["reward"], row["failure_class"], row["cost_usd"]) == (0.5, "verifier", 0.25)
    assert row["sandbox_seconds"] == [{"provider": "docker", "seconds": 2.0}]
    assert training_row(_trial({}))["step_rewards"] == []


def test_an_agent_without_events_is_rebuilt_from_the_gateway_log():
    doc = {
        "prompt_id": "p",
        "prompt": "do it",
        "response": "done",
        "events": [],
        "gateway_calls": [
            {"tool": "add", "arguments": {"x": 1}, "result": {"ok": True}},
            {"tool": "rm", "arguments": {}, "error": "not allowed"},
        ],
    }
    assert conversation([doc]) == [
        {"role": "user", "content": "do it"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_p_0", "type": "function",
             "function": {"name": "add", "arguments": '{"x": 1}'}}]},
        {"role": "tool", "tool_call_id": "call_p_0", "content": '{"ok": true}'},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_p_1", "type": "function", "function": {"name": "rm", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_p_1", "content": "not allowed"},
        {"role": "assistant", "content": "done"},
    ]  # fmt: skip


def test_a_lost_trajectory_keeps_prompt_and_answer_and_prompts_follow_each_other():
    first = {"prompt_id": "a", "missing": "gone", "prompt": "one", "response": "1"}
    second = {
        "prompt_id": "b",
        "system_prompt": "be brief",
        "prompt": "two",
        "response": "2",
        "events": [
            {"type": "user", "content": "two"},
            {"type": "model", "content": "thinking", "tool_calls": [
                {"id": "c9", "name": "f", "arguments": "{}"}]},
            {"type": "tool", "id": "c9", "name": "f", "arguments": "{}", "result": "r"},
            {"type": "error", "message": "ignored"},
            {"type": "model", "content": "2", "tool_calls": []},
        ],
    }  # fmt: skip
    assert [(m["role"], m.get("content")) for m in conversation([first, second])] == [
        ("system", "be brief"),
        ("user", "one"),
        ("assistant", "1"),
        ("user", "two"),
        ("assistant", "thinking"),
        ("tool", "r"),
        ("assistant", "2"),
    ]


def test_parquet_writes_the_schema_even_with_no_rows_and_reads_back():
    import pyarrow.parquet as pq

    async def none():
        return
        yield

    async def one():
        yield _trial({}, [{"prompt_id": "p", "prompt": "q", "response": "a", "events": []}])

    import anyio

    for trials, count in ((none, 0), (one, 1)):
        out = io.BytesIO()
        assert anyio.run(ChatParquet().write, trials(), out) == count
        table = pq.read_table(io.BytesIO(out.getvalue()))
        assert table.schema.equals(parquet_schema()) and table.num_rows == count
    assert table.to_pylist()[0]["messages"] == [
        {"role": "user", "content": "q", "tool_calls": None, "tool_call_id": None},
        {"role": "assistant", "content": "a", "tool_calls": None, "tool_call_id": None},
    ]
