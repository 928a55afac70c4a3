"""The shapes of the tool-call verifier's criteria (`criteria.TOOL_CALL_TYPES`), apart from the
sandbox verifier's so that a run verifying only a sandbox does not build them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from agentenv_core_steps.criteria import TOOL_CALL_TYPES, _Criterion


@attrs.frozen(kw_only=True)
class ToolCalledCriterion(_Criterion):
    """`tool_called` / `tool_not_called`: a call of `tool` whose arguments include
    `arguments` (at least `min_times` of them for `tool_called`)."""

    tool: str
    arguments: dict[str, Any] | None = None
    min_times: int | None = None


@attrs.frozen(kw_only=True)
class ToolCallCountCriterion(_Criterion):
    """`tool_call_count`: between `min` and `max` calls (of `tool`, if given)."""

    tool: str | None = None
    arguments: dict[str, Any] | None = None
    min: int | None = None
    max: int | None = None


@attrs.frozen(kw_only=True)
class NoToolErrorsCriterion(_Criterion):
    """`no_tool_errors`: no call (of `tool`, if given) failed."""

    tool: str | None = None
    arguments: dict[str, Any] | None = None


TOOL_CALL_CRITERIA: Mapping[str, type] = dict(
    zip(
        TOOL_CALL_TYPES,
        (ToolCalledCriterion, ToolCalledCriterion, ToolCallCountCriterion, NoToolErrorsCriterion),
        strict=True,
    )
)
