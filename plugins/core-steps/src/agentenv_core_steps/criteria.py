"""The shapes of verifier criteria, checked by the kernel's one converter before anything runs.

A criterion stays a plain JSON object at run time (its keys are copied into the result rows,
as the existing bundles expect); these models only say which keys each criterion type takes,
so a misspelled key (`pathz`) is a validation error with a did-you-mean instead of being
ignored. `criterion_shape_problems` is the one entry point the verifier steps use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from agent_env.bundles import read_model
from agent_env.suggest import did_you_mean


@attrs.frozen(kw_only=True)
class _Criterion:
    """The keys every criterion may carry: an id, its type, and words for people."""

    type: str
    id: str | int | None = None
    criterion: str | None = None
    description: str | None = None
    name: str | None = None
    weight: float | None = None
    metadata: dict[str, Any] | None = None


@attrs.frozen(kw_only=True)
class PathsCriterion(_Criterion):
    """`probe_file_exists` / `probe_dir_exists`: every one of `paths` exists."""

    paths: list[str]


@attrs.frozen(kw_only=True)
class FileContainsCriterion(_Criterion):
    """`probe_file_contains`: `re.search(expected, <the first path's text>)` (`value` is the
    older spelling of `expected`)."""

    paths: list[str]
    expected: str | None = None
    value: str | None = None


@attrs.frozen(kw_only=True)
class BashCriterion(_Criterion):
    """`bash_cmd_succeeds`: `bash -c bash_cmd` in the step's `base_dir` exits 0."""

    bash_cmd: str


SANDBOX_CRITERIA: Mapping[str, type] = {
    "probe_file_exists": PathsCriterion,
    "probe_dir_exists": PathsCriterion,
    "probe_file_contains": FileContainsCriterion,
    "bash_cmd_succeeds": BashCriterion,
}
#: The criterion types the tool-call verifier scores (their models: `tool_criteria`, imported
#: only where tool calls are verified).
TOOL_CALL_TYPES = ("tool_called", "tool_not_called", "tool_call_count", "no_tool_errors")
#: Types other verifiers score: a shared criteria list may hold them (they are skipped).
OTHER_VERIFIERS_TYPES = frozenset(
    {"response_contains", "response_regex_present", "rubric", "llm_judge", *TOOL_CALL_TYPES}
)


def criterion_shape_problems(
    criterion: Any, where: str, models: Mapping[str, type], *, skip_others: bool = False
) -> list[str]:
    """One message per problem of `criterion`'s shape, each led by `where` (`criteria[0]`):
    not an object, no type, an unknown type (did-you-mean), unknown or mistyped keys. With
    `skip_others`, types of other verifiers pass unchecked, and so does any type that is not
    close to one of `models` (the step keeps such rows as skipped)."""
    if not isinstance(criterion, dict):
        return [f"{where}: a criterion must be an object, got {criterion!r}"]
    kind = criterion.get("type")
    if not isinstance(kind, str) or not kind:
        return [f"{where}: type: required (one of {', '.join(models)})"]
    model = models.get(kind)
    if model is None:
        hint = did_you_mean(kind, list(models))
        if skip_others and (kind in OTHER_VERIFIERS_TYPES or not hint):
            return []
        return [f"{where}: type: unknown criterion type {kind!r}{hint}; known: {', '.join(models)}"]
    _, problems = read_model(criterion, model)
    return [f"{where}: {p}" for p in problems]
