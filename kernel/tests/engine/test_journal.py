"""Journal, replay, redaction, outcomes and in-process resume."""

from __future__ import annotations

import anyio
import attrs
import pytest

from agent_env.engine.instance import TaskInstance
from agent_env.engine.journal import Journal
from agent_env.engine.records import COLLECTION
from agent_env.engine.state import apply_op, replay
from agent_env.models import Step
from agent_env.redact import REDACTED, Redactor, redact

pytestmark = pytest.mark.anyio


def test_replay_honours_rollbacks():
    entries = [
        {"kind": "step", "step_id": "a", "ops": [{"op": "set", "path": ["x", "y"], "value": 1}]},
        {"kind": "step", "step_id": "b", "ops": [{"op": "set", "path": ["x", "z"], "value": 2}]},
        {"kind": "rollback", "steps": ["b"]},
        {
            "kind": "step",
            "step_id": "b",
            "ops": [
                {"op": "set", "path": ["x", "w"], "value": 3},
                {"op": "del", "path": ["x", "y"]},
            ],
        },
    ]
    assert replay(entries) == {"x": {"w": 3}}


def test_a_write_through_a_non_object_is_refused():
    tree = {"a": 1}
    with pytest.raises(ValueError, match="'a' is not an object"):
        apply_op(tree, {"op": "set", "path": ["a", "b"], "value": 2})


async def test_one_journal_document_per_completed_step_and_replay_equals_state(harness):
    M, S = harness.Mark, harness.Score
    inst = await harness.run(
        [M(id="a", value={"n": 1}), M(id="b", value=[1, 2]), S(id="v", verifier_id="hello")]
    )
    docs = await harness.services.stores.documents.list("journal", f"{inst.id}/")
    assert [d["step_id"] for _, d in docs] == ["a", "b", "v"]
    assert [k for k, _ in docs] == [
        f"{inst.id}/00000000",
        f"{inst.id}/00000001",
        f"{inst.id}/00000002",
    ]
    assert replay([d for _, d in docs]) == inst.state
    assert inst.state["verifiers"]["hello"]["score"] == 1


async def test_secrets_are_redacted_in_journal_and_record(harness, monkeypatch):
    monkeypatch.setenv("AGENT_ENV_SECRET_LLM_KEY", "sk-very-secret-123")
    harness.services.redactor = await Redactor.from_stores(harness.services.stores)
    M = harness.Mark
    inst = await harness.run(
        [
            M(
                id="a",
                value={
                    "api_key": "plain-key-value",
                    "note": "uses sk-very-secret-123 today",
                    "max_tokens": 5,
                },
            ),
        ]
    )
    docs = await harness.services.stores.documents.list("journal", f"{inst.id}/")
    record = await harness.services.stores.documents.get(COLLECTION, inst.id)
    for persisted in (str(docs), str(record)):
        assert "sk-very-secret-123" not in persisted
        assert "plain-key-value" not in persisted
    value = docs[0][1]["ops"][0]["value"]
    assert value == {"api_key": REDACTED, "note": f"uses {REDACTED} today", "max_tokens": 5}
    # the live state is not mangled for the steps that run later
    assert inst.state["outputs"]["a"]["api_key"] == "plain-key-value"


def test_redact_keys_and_values():
    doc = {
        "OPENAI_API_KEY": "x1",
        "headers": {"Authorization": "Bearer abc"},
        "token_count": 3,
        "list": ["hunter2-long"],
        "password": None,
    }
    assert redact(doc, ["hunter2-long"]) == {
        "OPENAI_API_KEY": REDACTED,
        "headers": {"Authorization": REDACTED},
        "token_count": 3,
        "list": [REDACTED],
        "password": None,
    }


@pytest.mark.parametrize(
    ("scores", "outcome", "status"),
    [
        ({"hello": 1}, "passed (hello: 1)", "passed"),
        ({"hello": 1, "x": 0.5}, "scored below 1 (hello: 1, x: 0.5)", "scored_below"),
        ({"hello": None}, "unscored", "unscored"),
    ],
)
async def test_outcome_from_scores(harness, scores, outcome, status):
    S = harness.Score
    inst = await harness.run(
        [S(id=f"s_{vid}", verifier_id=vid, score=s) for vid, s in scores.items()]
    )
    assert (inst.record["outcome"], inst.record["status"]) == (outcome, status)
    stored = await harness.services.stores.documents.get(COLLECTION, inst.id)
    assert stored["outcome"] == outcome


async def test_when_an_aggregate_scores_only_aggregates_count(harness):
    S, A = harness.Score, harness.Aggregate
    inst = await harness.run(
        [
            S(id="a", verifier_id="a", score=0),
            S(id="b", verifier_id="b", score=1),
            A(id="all", verifier_id="total", score=1),
        ]
    )
    assert inst.record["outcome"] == "passed (total: 1)"


async def test_step_wrappers_and_run_finished_hooks_are_called(harness):
    import contextlib

    from agent_env import hookimpl

    seen: list = []

    class Plugin:
        @hookimpl
        def agentenv_step_wrapper(self, step, ctx):
            @contextlib.asynccontextmanager
            async def wrap():
                seen.append(("enter", step.id, ctx.task_instance_id))
                yield
                seen.append(("exit", step.id))

            return wrap()

        @hookimpl
        def agentenv_run_finished(self, record):
            seen.append(("finished", record["outcome"]))

    harness.services.plugins.register(Plugin(), "wrapper-test")
    inst = await harness.run([harness.Mark(id="a")])
    assert seen == [("enter", "a", inst.id), ("exit", "a"), ("finished", "unscored")]


async def test_cancelled_run_resumes_without_rerunning_completed_steps(harness):
    M = harness.Mark
    steps = [M(id="one", value=1), M(id="two", sleep=30), M(id="three", value=3)]
    inst = await harness.new(steps)
    with anyio.move_on_after(2):
        await inst.run()
    record = await harness.services.stores.documents.get(COLLECTION, inst.id)
    assert record["status"] == "cancelled" and record["outcome"] == "cancelled"
    assert record["steps"]["one"]["status"] == "completed"
    harness.events.clear()
    fast = [M(id="one", value=1), M(id="two"), M(id="three", value=3)]
    resumed = await TaskInstance.load(harness.services, record, fast)
    await resumed.run()
    assert harness.started() == ["two", "three"]
    assert resumed.state["outputs"] == {"one": 1, "two": True, "three": 3}
    assert resumed.record["resumes"] == 1 and resumed.record["status"] == "unscored"


async def test_second_writer_of_the_same_journal_is_detected(harness):
    docs = harness.services.stores.documents
    j1, j2 = Journal(docs, "ti-x"), Journal(docs, "ti-x")
    await j1.append({"kind": "step", "step_id": "a", "ops": []})
    with pytest.raises(Exception, match="another process"):
        await j2.append({"kind": "step", "step_id": "a", "ops": []})


async def test_redactor_learns_secret_env_vars_and_config_values(harness):
    class FakeConfig:
        values = {
            "models": {"api_key": "cfg-secret-value", "base_url": "http://x"},
            "hub": {"token": "env:MY_HUB_TOKEN"},
        }

    environ = {
        "OPENAI_API_KEY": "sk-openai-123456",
        "MY_HUB_TOKEN": "hf-tok-abcdef",
        "HOME": "/root",
    }
    red = await Redactor.from_stores(harness.services.stores, FakeConfig(), environ)
    text = "keys: sk-openai-123456 cfg-secret-value hf-tok-abcdef at http://x in /root"
    assert red(text) == f"keys: {REDACTED} {REDACTED} {REDACTED} at http://x in /root"


async def test_a_secret_a_step_adds_is_redacted_from_then_on(harness):
    @attrs.frozen(kw_only=True)
    class Mint(Step):
        type = "mint"

        async def execute(self, ctx) -> None:
            ctx.add_secret("minted-token-xyz")
            ctx.set("outputs", "url", value="http://h/?auth=minted-token-xyz")

    inst = await harness.run([Mint(id="mint")])
    docs = await harness.services.stores.documents.list("journal", f"{inst.id}/")
    assert docs[0][1]["ops"][0]["value"] == f"http://h/?auth={REDACTED}"
    assert "minted-token-xyz" not in str(inst.record)


async def test_progress_lines_and_step_errors_reach_the_reporter_redacted(harness):
    from agent_env.engine.services import Reporter
    from agent_env.errors import StepFailed

    shown: list[str] = []

    class Capture(Reporter):
        def log(self, instance, step_id, message):
            shown.append(message)

        def step_finished(self, instance, step_id, status, seconds, error):
            shown.append(str(error))

    @attrs.frozen(kw_only=True)
    class Leak(Step):
        type = "leak"

        async def execute(self, ctx) -> None:
            ctx.add_secret("minted-token-xyz")
            ctx.log("token is minted-token-xyz")
            raise StepFailed(self.id, "rejected minted-token-xyz")

    harness.services.reporter = Capture()
    inst = await harness.run([Leak(id="leak")])
    assert inst.record["outcome"].startswith("failed at step 'leak'")
    assert shown == [f"token is {REDACTED}", f"rejected {REDACTED}"]


async def test_a_value_json_cannot_hold_fails_the_step_that_set_it(harness):
    M = harness.Mark
    inst = await harness.run(
        [M(id="nan", value=float("nan"), fail_task_on_error=False), M(id="obj", value=object())]
    )
    assert inst.record["steps"]["nan"]["status"] == "tolerated"
    nan_error = inst.record["steps"]["nan"]["error"]
    assert "Out of range float values are not JSON compliant" in nan_error
    assert inst.record["outcome"].startswith("failed at step 'obj': cannot record state: ")
    assert "not JSON serializable" in inst.record["outcome"]
