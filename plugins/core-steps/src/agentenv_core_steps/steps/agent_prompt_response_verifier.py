"""`agent_prompt_response_verifier`: deterministic checks of an agent's final answer (the
`response` a `prompt_agent` step recorded under `prompts.<prompt_id>`).

`response_contains` passes when every one of `needles` is a substring of the answer;
`response_regex_present` when `re.search(pattern, answer, flags)` matches (flags: names such as
`"IGNORECASE"`, default `DOTALL`). An unknown criterion type is an error, not skipped.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import attrs

from agent_env.context import StepContext
from agent_env.errors import StepFailed
from agent_env.models import VerifierStep
from agent_env.suggest import did_you_mean

TYPES = ("response_contains", "response_regex_present")


def _flags(names: Any) -> int:
    if names is None:
        return re.DOTALL
    names = [names] if isinstance(names, str) else list(names)
    value = 0
    for name in names:
        flag = getattr(re, str(name).upper(), None)
        if not isinstance(flag, re.RegexFlag):
            raise ValueError(
                f"unknown regex flag {name!r}{did_you_mean(str(name).upper(), [str(f.name) for f in re.RegexFlag])}"
            )
        value |= flag
    return value


def criterion_problems(criterion: Any, where: str) -> list[str]:
    if not isinstance(criterion, dict):
        return [f"{where}: must be an object"]
    kind = criterion.get("type")
    if kind not in TYPES:
        return [
            f"{where}: unknown criterion type {kind!r}{did_you_mean(str(kind), TYPES)}; known: {', '.join(TYPES)}"
        ]
    if kind == "response_contains":
        needles = criterion.get("needles")
        if (
            not isinstance(needles, list)
            or not needles
            or not all(isinstance(n, str) for n in needles)
        ):
            return [f"{where}: needles: a non-empty list of strings is required"]
        return []
    try:
        re.compile(criterion.get("pattern") or "", _flags(criterion.get("flags")))
    except (re.error, ValueError) as e:
        return [f"{where}: pattern: {e}"]
    if not criterion.get("pattern"):
        return [f"{where}: pattern: required"]
    return []


def prompt_record(ctx: StepContext, step_id: str, prompt_id: str) -> dict[str, Any]:
    """The recorded prompt `prompt_id`; StepFailed listing the recorded ones."""
    prompts = ctx.get("prompts", default={}) or {}
    record = prompts.get(prompt_id)
    if not isinstance(record, dict):
        raise StepFailed(
            step_id,
            f"no answer recorded for prompt_id {prompt_id!r}{did_you_mean(prompt_id, prompts)}; "
            f"recorded: {', '.join(sorted(prompts)) or 'none'}",
        )
    return record


@attrs.frozen(kw_only=True)
class AgentPromptResponseVerifier(VerifierStep):
    type: ClassVar[str] = "agent_prompt_response_verifier"

    prompt_id: str
    criteria: list[dict[str, Any]] = attrs.field(factory=list)

    def check(self, bundle: Any) -> list[str]:
        return [
            p for i, c in enumerate(self.criteria) for p in criterion_problems(c, f"criteria[{i}]")
        ]

    async def execute(self, ctx: StepContext) -> None:
        problems = self.check(None)
        if problems:
            raise StepFailed(self.id, "; ".join(problems))
        answer = str(prompt_record(ctx, self.id, self.prompt_id).get("response") or "")
        results = []
        for index, criterion in enumerate(self.criteria):
            row = {"id": str(criterion.get("id", index)), **criterion, "criterion_index": index}
            if criterion["type"] == "response_contains":
                missing = [n for n in criterion["needles"] if n not in answer]
                passed = not missing
                why = "contains every needle" if passed else f"missing: {missing}"
            else:
                found = re.search(criterion["pattern"], answer, _flags(criterion.get("flags")))
                passed = found is not None
                why = (
                    f"matched {found.group(0)[:100]!r}"
                    if found
                    else f"no match for {criterion['pattern']!r}"
                )
            row.update(result=passed, score=1.0 if passed else 0.0, justification=why)
            results.append(row)
        passed_count = sum(r["result"] for r in results)
        self.record(ctx, results, f"{passed_count}/{len(results)} criteria passed")
