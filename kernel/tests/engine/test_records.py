"""The record models: what the engine stores is the JSON older versions stored (no key more,
none less), unknown keys survive, malformed documents are refused with the field named."""

from __future__ import annotations

import pytest

from agent_env.convert import StructureProblems
from agent_env.engine.instance import TaskInstance
from agent_env.engine.records import COLLECTION, RunRecord, Status, TaskInstanceRecord

pytestmark = pytest.mark.anyio

#: The keys a finished record had at 208aff9 (a single-trial run: no `attempt` or
#: `seed_values`, no `agent`/`model` when nothing set them), plus `cost` (issue 32).
FINISHED_KEYS = {
    "id", "run_id", "task", "bundle", "trial", "seed", "status", "outcome", "scores",
    "verifiers", "steps", "failure", "failure_class", "created_at", "started_at",
    "finished_at", "seconds", "resumes", "owner", "log", "outputs", "cost",
}  # fmt: skip


async def test_the_engine_stores_the_keys_it_always_stored(harness):
    inst = await harness.new([harness.Score(id="v", verifier_id="v", score=1)])
    pending = await harness.services.stores.documents.get(COLLECTION, inst.id)
    assert set(pending) == FINISHED_KEYS - {"outputs", "cost"}
    assert pending["status"] == "pending" and type(pending["status"]) is str
    await inst.run()
    stored = await harness.services.stores.documents.get(COLLECTION, inst.id)
    assert set(stored) == FINISHED_KEYS
    assert stored == inst.record
    assert inst.live.status is Status.PASSED
    assert set(stored["owner"]) == {"pid", "start_time", "host"}
    # the model reads back what was stored, and writes the same document again
    assert TaskInstanceRecord.from_dict(stored).to_dict() == stored


async def test_meta_fields_and_unknown_keys_round_trip(harness):
    steps = [harness.Score(id="v", verifier_id="v", score=0.5)]
    task = harness.FakeTask(name="t", id="@test/t", steps=steps)
    inst = await TaskInstance.create(
        harness.services,
        task=task,
        instance_id="ti-meta",
        run_id="run-meta",
        bundle={"name": "b"},
        meta={"agent": "oracle", "attempt": 0, "seed_values": {"trial": 0}, "note": "x"},
    )
    await inst.run()
    stored = await harness.services.stores.documents.get(COLLECTION, "ti-meta")
    assert (stored["agent"], stored["attempt"], stored["note"]) == ("oracle", 0, "x")
    assert "model" not in stored
    record = TaskInstanceRecord.from_dict(stored)
    assert record.extra == {"note": "x"} and record.status is Status.SCORED_BELOW
    row = record.to_row()
    assert (row["agent"], row["score"], row["failure_class"], row["passed"]) == (
        "oracle",
        0.5,
        "verifier",
        False,
    )
    resumed = await TaskInstance.load(harness.services, stored, task.steps)
    assert resumed.live.resumes == 1 and resumed.live.extra == {"note": "x"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"status": "pased"},
            "status: expected one of 'pending', 'running', 'passed', 'scored_below', 'unscored', "
            "'failed', 'cancelled', got 'pased' (did you mean 'passed'?)",
        ),
        ({"steps": []}, "steps: expected an object, got []"),
        ({"resumes": "1"}, "resumes: expected an integer, got '1'"),
        ({"task": {"nam": "t"}}, "task: unknown field 'nam' (did you mean 'name'?)"),
    ],
)
def test_a_malformed_record_names_the_record_and_the_field(change, message):
    doc = {"id": "ti-x", "run_id": "run-x", "task": {"name": "t"}, **change}
    with pytest.raises(StructureProblems) as caught:
        TaskInstanceRecord.from_dict(doc)
    assert any(
        p.startswith(f"task instance record 'ti-x': {message}") for p in caught.value.problems
    ), caught.value.problems


def test_a_run_record_from_before_trials_numbers_every_trial_0():
    run = RunRecord.from_dict({"id": "run-old", "instances": ["a", "b"], "tasks": ["t", "u"]})
    assert run.trial_numbers() == [0, 0] and run.trials == 1
    assert "trial_index" in run.to_dict()
