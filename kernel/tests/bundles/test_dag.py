"""The dependency rules of DESIGN.md §3.5, as `resolve_dependencies` reads a task's steps."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from agent_env.bundles import resolve_dependencies
from agent_env.errors import BundleError


def steps(*specs: tuple) -> list[SimpleNamespace]:
    return [SimpleNamespace(id=i, depends_on=d) for i, d in specs]


def test_no_depends_on_anywhere_is_a_chain() -> None:
    assert resolve_dependencies(steps(("a", None), ("b", None), ("c", None))) == {
        "a": [],
        "b": ["a"],
        "c": ["b"],
    }


def test_once_declared_a_step_without_it_waits_for_all_earlier() -> None:
    deps = resolve_dependencies(steps(("a", None), ("b", []), ("c", ["a"]), ("d", None)))
    assert deps == {"a": [], "b": [], "c": ["a"], "d": ["a", "b", "c"]}


def test_empty_list_means_no_dependencies() -> None:
    assert resolve_dependencies(steps(("a", []), ("b", []))) == {"a": [], "b": []}


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        ((("a", ["b"]), ("b", None)), "step 'a': depends_on: 'b' comes later in the task"),
        ((("a", None), ("b", ["x"])), "step 'b': depends_on: unknown step 'x'"),
        ((("a", None), ("a", None)), "step 'a': duplicate step id"),
    ],
)
def test_bad_references_are_rejected(specs: tuple, message: str) -> None:
    with pytest.raises(BundleError) as info:
        resolve_dependencies(steps(*specs))
    assert any(p.startswith(message) for p in info.value.problems)
