"""A task naming a step type of the existing agent-env that this version does not provide is
told so (not only "unknown"), and the list stays disjoint from what the in-tree plugins
register."""

from __future__ import annotations

import pytest

from agent_env.convert import StructureProblems, structure_step
from agent_env.plugins import get_plugin_manager
from agent_env.plugins.known import REFERENCE_ONLY_STEP_TYPES


@pytest.fixture(scope="module")
def step_types():
    return get_plugin_manager().step_types


@pytest.mark.parametrize("name", ["review", "verify_a2a_agent_card", "peer_agents"])
def test_a_reference_only_step_type_says_where_it_comes_from(step_types, name):
    with pytest.raises(StructureProblems) as err:
        structure_step({"id": "s", "type": name}, step_types)
    (problem,) = err.value.problems
    assert problem.startswith(f"step 's': unknown step type {name!r}")
    assert problem.endswith(
        "(a step type of the existing agent-env 0.9 that this version does not provide: "
        "see docs/compatibility.md)"
    )


def test_a_misspelling_gets_no_such_note(step_types):
    with pytest.raises(StructureProblems) as err:
        structure_step({"id": "s", "type": "reveiw"}, step_types)
    assert "existing agent-env" not in err.value.problems[0]


def test_none_of_them_is_provided_here(step_types):
    assert not REFERENCE_ONLY_STEP_TYPES & set(step_types.names())
    assert len(REFERENCE_ONLY_STEP_TYPES) == 24
