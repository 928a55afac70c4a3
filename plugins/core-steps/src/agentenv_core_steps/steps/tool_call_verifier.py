"""`tool_call_verifier`: criteria over the tool calls an agent made, as the run gateway logged
them (time, role, tool, arguments, result, error).

Criterion types: `tool_called` (`tool`, optional `arguments`: every given key must equal the
call's, optional `min_times` default 1), `tool_not_called` (`tool`, optional `arguments`),
`tool_call_count` (optional `tool`; `min` and/or `max`), `no_tool_errors` (no call failed).
The calls are those recorded for `prompt_id`, else every call of `agent_name`'s role (default:
all agents' calls recorded by prompt steps).
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from agent_env.context import StepContext
from agent_env.errors import StepFailed
from agent_env.models import VerifierStep
from agent_env.suggest import did_you_mean
from agentenv_core_steps.criteria import criterion_shape_problems
from agentenv_core_steps.steps.agent_prompt_response_verifier import prompt_record
from agentenv_core_steps.tool_criteria import TOOL_CALL_CRITERIA

TYPES = tuple(TOOL_CALL_CRITERIA)


def _matches(call: dict[str, Any], criterion: dict[str, Any]) -> bool:
    if criterion.get("tool") is not None and call.get("tool") != criterion["tool"]:
        return False
    wanted = criterion.get("arguments") or {}
    got = call.get("arguments") or {}
    return all(k in got and got[k] == v for k, v in wanted.items())


@attrs.frozen(kw_only=True)
class ToolCallVerifier(VerifierStep):
    type: ClassVar[str] = "tool_call_verifier"
    bundle_refs: ClassVar[dict[str, tuple[str, ...]]] = {"tool": ("criteria[].tool",)}

    criteria: list[dict[str, Any]] = attrs.field(factory=list)
    prompt_id: str | None = None
    agent_name: str | None = None

    def check(self, bundle: Any) -> list[str]:
        problems = []
        if not self.criteria:
            problems.append("criteria: at least one criterion is required")
        for i, c in enumerate(self.criteria):
            where = f"criteria[{i}]"
            shape = criterion_shape_problems(c, where, TOOL_CALL_CRITERIA)
            if shape:
                problems.extend(shape)
                continue
            kind = c["type"]
            if kind in ("tool_called", "tool_not_called") and not isinstance(c.get("tool"), str):
                problems.append(f"{where}: tool: required (a tool name)")
            if c.get("arguments") is not None and not isinstance(c["arguments"], dict):
                problems.append(f"{where}: arguments: must be an object")
            if kind == "tool_call_count" and c.get("min") is None and c.get("max") is None:
                problems.append(f"{where}: give min and/or max")
        return problems

    def _calls(self, ctx: StepContext) -> list[dict[str, Any]]:
        if self.prompt_id:
            return list(prompt_record(ctx, self.id, self.prompt_id).get("tool_calls") or [])
        prompts = ctx.get("prompts", default={}) or {}
        if self.agent_name:
            agents = ctx.get("agents", default={}) or {}
            if self.agent_name not in agents:
                raise StepFailed(
                    self.id,
                    f"agent {self.agent_name!r} is not deployed{did_you_mean(self.agent_name, agents)}",
                )
            prompts = {k: v for k, v in prompts.items() if v.get("agent_name") == self.agent_name}
        return [c for p in prompts.values() for c in p.get("tool_calls") or []]

    async def execute(self, ctx: StepContext) -> None:
        problems = self.check(None)
        if problems:
            raise StepFailed(self.id, "; ".join(problems))
        calls = self._calls(ctx)
        results = []
        for index, c in enumerate(self.criteria):
            row = {"id": str(c.get("id", index)), **c, "criterion_index": index}
            hits = [x for x in calls if _matches(x, c)]
            kind = c["type"]
            if kind == "tool_called":
                need = int(c.get("min_times", 1))
                passed = len(hits) >= need
                why = f"{len(hits)} matching call(s) of {c['tool']!r} (need {need})"
            elif kind == "tool_not_called":
                passed = not hits
                why = (
                    "no matching call"
                    if passed
                    else f"{len(hits)} matching call(s): {[h.get('arguments') for h in hits][:3]}"
                )
            elif kind == "tool_call_count":
                low, high = c.get("min"), c.get("max")
                passed = (low is None or len(hits) >= low) and (high is None or len(hits) <= high)
                why = f"{len(hits)} call(s); allowed {low if low is not None else 0}..{high if high is not None else 'any'}"
            else:
                errors = [x for x in hits if x.get("error")]
                passed = not errors
                why = (
                    "no call failed"
                    if passed
                    else f"{len(errors)} failed: {errors[0].get('tool')}: {str(errors[0].get('error'))[:200]}"
                )
            row.update(result=passed, score=1.0 if passed else 0.0, justification=why)
            results.append(row)
        self.record(ctx, results, f"{len(calls)} tool call(s) checked")
