"""The regrade's rules on synthetic stored records (real SQLite store, the real verifier step
classes): the outcome rule keeps counting only aggregates when the trial's task had them; a
failure at a regraded verifier is decided anew, one before the verifiers stays; unfinished
trials are copied; a task the new bundle lacks is kept as recorded."""

from __future__ import annotations

import anyio
import pytest

from agent_env.results import RUNS, TRIALS, open_configured_stores

RUN = "run-20260101000000-abcdef"


def record(i: int, run: str = RUN, **fields):
    doc = {
        "id": f"ti-{run.removeprefix('run-')}-{i:05d}",
        "run_id": run,
        "task": {"name": "t", "id": "@local/b/t", "version": 1},
        "status": "passed",
        "scores": {"a": 1.0},
        "verifiers": {"a": {"results": [], "score": 1.0}},
        "outputs": {
            "ask": {
                "prompt_id": "ask",
                "agent_name": "agent",
                "response": "saved the note",
                "tool_calls": [{"tool": "add_note", "arguments": {"title": "x"}, "error": None}],
            }
        },
    }
    doc.update(fields)
    return doc


@pytest.fixture
def plugins(plugin_manager, register_plugin):
    import agentenv_core_steps.hooks
    import agentenv_grading.hooks

    register_plugin(agentenv_core_steps.hooks, "core-steps")
    register_plugin(agentenv_grading.hooks, "grading")
    return plugin_manager


def regrade(plugins, records, verifiers):
    from agentenv_grading.regrade import Regrade

    async def go():
        stores = await open_configured_stores()
        try:
            for doc in records:
                await stores.documents.put(TRIALS, doc["id"], doc)
            run = records[0]["run_id"]
            await stores.documents.put(
                RUNS, run, {"id": run, "instances": [d["id"] for d in records]}
            )
            summary = await Regrade(verifiers, plugins, None, stores).run(stores.documents, run)
            page = await stores.documents.query(
                TRIALS, where={"run_id": summary["run_id"]}, order_by="id"
            )
            return summary, [d for _, d in page.items]
        finally:
            await stores.close()

    return anyio.run(go)


def steps(plugins, *raw):
    """The verifier steps of a task-shaped file, structured as a bundle's are."""
    import json
    import tempfile
    from pathlib import Path

    from agent_env.bundles import read_steps

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "verifiers.json"
        path.write_text(json.dumps(list(raw)))
        return tuple(read_steps(path, plugins))


ANSWER_FAILS = {
    "id": "ans",
    "type": "agent_prompt_response_verifier",
    "prompt_id": "ask",
    "verifier_id": "answer",
    "criteria": [{"id": "c", "type": "response_contains", "needles": ["groceries"]}],
}


def test_only_aggregates_count_when_the_task_had_them(plugins, agent_env_home):
    from agentenv_grading.regrade import Verifiers

    aggregated = record(
        0,
        scores={"agg": 1.0},
        verifiers={
            "a": {"results": [], "score": 1.0},
            "b": {"results": [], "score": 0.0},
            "agg": {"results": [], "score": 1.0},
        },
    )
    plain = record(1)
    summary, (agg_new, plain_new) = regrade(
        plugins, [aggregated, plain], Verifiers(steps=steps(plugins, ANSWER_FAILS))
    )
    assert agg_new["status"] == "passed" and agg_new["scores"] == {"agg": 1.0}
    assert plain_new["status"] == "scored_below"
    assert plain_new["scores"] == {"a": 1.0, "answer": 0.0}
    assert (summary["flipped"], summary["same"]) == (1, 1)


def test_failures_unfinished_trials_and_missing_tasks(plugins, agent_env_home):
    from agentenv_grading.regrade import Verifiers

    at_verifier = record(
        0, status="failed", failure={"step": "ans", "message": "boom", "class": "error"}
    )
    before = record(
        1, status="failed", failure={"step": "ask", "message": "agent", "class": "agent"}
    )
    running = record(2, status="running")
    good_answer = dict(
        ANSWER_FAILS, criteria=[{"id": "c", "type": "response_contains", "needles": ["saved"]}]
    )
    _, (a, b, c) = regrade(
        plugins, [at_verifier, before, running], Verifiers(steps=steps(plugins, good_answer))
    )
    assert (a["status"], a["failure"]) == ("passed", None)
    assert (b["status"], b["failure"]["step"], b["failure_class"]) == ("failed", "ask", "agent")
    assert c["status"] == "running" and c["log"] == ["regrade: kept as recorded (not finished)"]
    other = Verifiers(per_task={"other": steps(plugins, good_answer)}, source="new")
    summary, (kept,) = regrade(plugins, [record(0, run="run-20260101000001-abcdef")], other)
    assert kept["log"] == ["regrade: kept as recorded (the new bundle has no such task)"]
    assert summary["kept"] == 1
