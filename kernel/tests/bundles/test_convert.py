"""The strict converter: what a bundle author sees for each kind of mistake in a step."""

from __future__ import annotations

from typing import Any

import pytest

from agent_env.convert import StructureProblems, structure, structure_step
from agent_env.models import RetryConfig
from agent_env.registry import Registry


@pytest.fixture
def registry(step_registry: Registry) -> Registry:
    return step_registry


def problems(data: Any, registry: Registry) -> list[str]:
    with pytest.raises(StructureProblems) as info:
        structure_step(data, registry)
    return info.value.problems


BOX = {"id": "box", "type": "deploy_sandbox", "sandbox_name": "b", "sandbox_mode": "vm"}


def test_valid_step_is_structured_into_its_registered_class(registry: Registry) -> None:
    step = structure_step({**BOX, "cpu": 4, "env_vars": {"TZ": "UTC"}}, registry)
    assert type(step).type == "deploy_sandbox"
    assert step.cpu == 4.0 and step.env_vars == {"TZ": "UTC"}
    assert step.depends_on is None and step.fail_task_on_error is True


def test_missing_required_field_names_step_and_field(registry: Registry) -> None:
    data = {"id": "box", "type": "deploy_sandbox", "sandbox_name": "b"}
    assert problems(data, registry) == ["step 'box': sandbox_mode: required"]


def test_unknown_field_gets_did_you_mean(registry: Registry) -> None:
    assert problems({**BOX, "sandbox_nmae": "x"}, registry) == [
        "step 'box': unknown field 'sandbox_nmae' (did you mean 'sandbox_name'?)"
    ]


def test_values_are_never_coerced(registry: Registry) -> None:
    data = {
        **BOX,
        "sandbox_name": 5,
        "cpu": "2",
        "fail_task_on_error": "false",
        "exposed_ports": [80, "81"],
        "env_vars": {"A": 1},
        "depends_on": "x",
    }
    found = problems(data, registry)
    assert "step 'box': sandbox_name: expected a string, got 5" in found
    assert "step 'box': cpu: expected a number, got '2'" in found
    assert "step 'box': fail_task_on_error: expected true or false, got 'false'" in found
    assert "step 'box': exposed_ports[1]: expected an integer, got '81'" in found
    assert "step 'box': env_vars.A: expected a string, got 1" in found
    assert "step 'box': depends_on: expected a list, got 'x'" in found
    assert len(found) == 6


def test_literal_choices_are_listed(registry: Registry) -> None:
    assert problems({**BOX, "sandbox_mode": "pod"}, registry) == [
        "step 'box': sandbox_mode: expected one of 'vm', 'container', got 'pod'"
    ]


def test_unknown_step_type_suggests_registered_one(registry: Registry) -> None:
    found = problems({"id": "box", "type": "deploy_sandbx"}, registry)
    assert found == [
        "step 'box': unknown step type 'deploy_sandbx' (did you mean 'deploy_sandbox'?); "
        "known: deploy_sandbox, load_artifact, teardown_sandboxes, verify_sandbox"
    ]


def test_step_without_type_or_object(registry: Registry) -> None:
    assert problems({"id": "a"}, registry) == ["step 'a': type: required"]
    assert problems(["x"], registry)[0].startswith("step: a step must be a JSON object")


def test_existing_bundle_spellings_are_accepted(registry: Registry) -> None:
    """depends_on objects, retry_config.go_to_step_id and a stored `version` load unchanged."""
    data = {
        **BOX,
        "version": 3,
        "depends_on": [{"task_step_id": "a"}, "b"],
        "retry_config": {"go_to_step_id": "a", "max_retries": 2},
    }
    step = structure_step(data, registry)
    assert step.depends_on == ["a", "b"]
    assert step.retry_config == RetryConfig(retry_from_step_id="a", max_retries=2)


def test_nested_model_errors_have_paths(registry: Registry) -> None:
    found = problems({**BOX, "retry_config": {"max_retries": "2", "from": "a"}}, registry)
    assert "step 'box': retry_config.retry_from_step_id: required" in found
    assert "step 'box': retry_config.max_retries: expected an integer, got '2'" in found
    assert any("unknown field 'from'" in p for p in found)


def test_a_nested_model_given_something_else_says_what_it_expected(registry: Registry) -> None:
    found = problems({**BOX, "retry_config": ["a"]}, registry)
    assert found == ["step 'box': retry_config: expected an object, got ['a']"]


def test_structure_plain_model() -> None:
    assert structure({"retry_from_step_id": "a"}, RetryConfig) == RetryConfig(
        retry_from_step_id="a"
    )
    with pytest.raises(StructureProblems) as info:
        structure({"retry_from_step_id": 1}, RetryConfig, where="x")
    assert info.value.problems == ["x: retry_from_step_id: expected a string, got 1"]


def test_core_step_type_missing_from_registry_says_where_it_comes_from(registry: Registry) -> None:
    from importlib.metadata import PackageNotFoundError, version

    found = problems({"id": "a", "type": "rubrics_verifier"}, registry)[0]
    try:
        installed = version("agentenv-core-steps")
        assert found.endswith(
            f"(a step type that agentenv-core-steps {installed} does not provide yet, or it is disabled)"
        )
    except PackageNotFoundError:
        assert found.endswith(
            "(a step type of agentenv-core-steps: pip install agentenv-core-steps)"
        )


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan"), 10**400])
def test_a_float_field_refuses_numbers_that_are_not_finite(registry: Registry, value: Any) -> None:
    """`cpu: 1e400` parses as infinity; no document or limit can hold it, so the step is
    refused naming the field instead of failing later in a store."""
    found = problems({**BOX, "cpu": value}, registry)
    assert len(found) == 1 and found[0].startswith("step 'box': cpu: expected a finite number")
