"""The DAG rules of DESIGN.md §3.5 as the engine runs them."""

from __future__ import annotations

import pytest

from agent_env.bundles.dag import dependents, resolve_dependencies
from agent_env.errors import BundleError
from agent_env.models import RetryConfig

pytestmark = pytest.mark.anyio


def test_no_depends_on_is_a_chain(harness):
    M = harness.Mark
    steps = [M(id="a"), M(id="b"), M(id="c")]
    assert resolve_dependencies(steps) == {"a": [], "b": ["a"], "c": ["b"]}


def test_once_declared_missing_means_all_earlier_and_empty_means_none(harness):
    M = harness.Mark
    steps = [M(id="a"), M(id="b", depends_on=[]), M(id="c"), M(id="d", depends_on=["a"])]
    assert resolve_dependencies(steps) == {"a": [], "b": [], "c": ["a", "b"], "d": ["a"]}


def test_bad_references_are_all_reported_with_step_names(harness):
    M = harness.Mark
    steps = [
        M(id="a", depends_on=["b"]),
        M(id="b", depends_on=["zz"]),
        M(id="b"),
        M(id="c", depends_on=["c"]),
    ]
    with pytest.raises(BundleError) as err:
        resolve_dependencies(steps)
    text = str(err.value)
    assert "step 'a': depends_on: 'b' comes later" in text
    assert "step 'b': depends_on: unknown step 'zz'" in text
    assert "step 'b': duplicate step id" in text
    assert "step 'c': depends_on: a step cannot depend on itself" in text


def test_unknown_reference_suggests_a_close_name(harness):
    M = harness.Mark
    with pytest.raises(
        BundleError, match=r"unknown step 'deploy_box' \(did you mean 'deploy_boxes'\?\)"
    ):
        resolve_dependencies([M(id="deploy_boxes"), M(id="x", depends_on=["deploy_box"])])


def test_retry_span_is_the_step_and_its_transitive_dependents(harness):
    M = harness.Mark
    steps = [
        M(id="a"),
        M(id="b", depends_on=[]),
        M(id="c", depends_on=["a"]),
        M(id="d", depends_on=["c"]),
    ]
    assert dependents(resolve_dependencies(steps), "a") == ["a", "c", "d"]


async def test_chain_runs_strictly_in_order(harness):
    M = harness.Mark
    inst = await harness.run([M(id="a", sleep=0.01), M(id="b"), M(id="c")])
    kinds = [(k, s) for k, s, _ in harness.events]
    assert kinds == [
        ("start", "a"),
        ("end", "a"),
        ("start", "b"),
        ("end", "b"),
        ("start", "c"),
        ("end", "c"),
    ]
    assert inst.record["status"] == "unscored"


async def test_independent_steps_run_concurrently(harness):
    # Each step waits (up to 2 s) until all three have started: only a concurrent run passes.
    M = harness.Mark
    harness.barrier("fan", 3)
    inst = await harness.run(
        [
            M(id="a", depends_on=[], barrier="fan"),
            M(id="b", depends_on=[], barrier="fan"),
            M(id="c", depends_on=[], barrier="fan"),
            M(id="join"),
        ]
    )
    assert inst.record["status"] == "unscored", inst.record["outcome"]
    assert harness.started()[-1] == "join"


async def test_depends_on_list_waits_only_for_named_steps(harness):
    M = harness.Mark
    await harness.run(
        [
            M(id="slow", depends_on=[], sleep=0.3),
            M(id="fast", depends_on=[]),
            M(id="after_fast", depends_on=["fast"]),
        ]
    )
    ends = {s: t for k, s, t in harness.events if k == "end"}
    starts = {s: t for k, s, t in harness.events if k == "start"}
    assert starts["after_fast"] < ends["slow"]


async def test_fatal_failure_stops_new_steps_and_lets_running_ones_finish(harness):
    M = harness.Mark
    inst = await harness.run(
        [
            M(id="slow", depends_on=[], sleep=0.3),
            M(id="bad", depends_on=[], fail="boom"),
            M(id="after_slow", depends_on=["slow"]),
        ]
    )
    rec = inst.record
    assert rec["status"] == "failed"
    assert rec["outcome"] == "failed at step 'bad': boom"
    assert rec["steps"]["slow"]["status"] == "completed"
    assert rec["steps"]["after_slow"]["status"] == "skipped"
    assert "after_slow" not in harness.started()


async def test_tolerated_failure_is_recorded_and_dependents_go_on(harness):
    M, S = harness.Mark, harness.Score
    inst = await harness.run(
        [
            M(id="flaky", fail="meh", fail_task_on_error=False),
            M(id="next"),
            S(id="check", verifier_id="hello", score=1),
        ]
    )
    rec = inst.record
    assert rec["steps"]["flaky"] == {**rec["steps"]["flaky"], "status": "tolerated", "error": "meh"}
    assert rec["steps"]["next"]["status"] == "completed"
    assert rec["outcome"] == "passed (hello: 1)"


async def test_retry_rolls_the_span_back_and_runs_it_again(harness):
    M = harness.Mark
    inst = await harness.run(
        [
            M(id="base", value=1),
            M(id="setup", value="fresh"),
            M(id="side", depends_on=[]),
            M(
                id="work",
                depends_on=["setup"],
                fail="flake",
                fail_times=1,
                retry_config=RetryConfig(retry_from_step_id="setup", max_retries=2),
            ),
        ]
    )
    rec = inst.record
    assert rec["status"] == "unscored", rec["outcome"]
    started = harness.started()
    assert started.count("setup") == 2 and started.count("work") == 2
    assert started.count("base") == 1 and started.count("side") == 1
    # what the failed attempt wrote is gone: the state is the journal replayed without it
    assert "scratch" not in inst.state
    assert rec["steps"]["work"]["attempts"] == 2


async def test_retry_gives_up_after_max_retries(harness):
    M = harness.Mark
    inst = await harness.run(
        [
            M(
                id="work",
                fail="always",
                retry_config=RetryConfig(retry_from_step_id="work", max_retries=2),
            ),
        ]
    )
    assert harness.started().count("work") == 3
    assert inst.record["outcome"] == "failed at step 'work': always"
