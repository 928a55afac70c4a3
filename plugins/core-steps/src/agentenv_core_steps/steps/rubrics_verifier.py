"""`rubrics_verifier`: an LLM judge grades an agent's answer (and, with `use_trajectory`, the
tool calls it made) against rubric criteria, through the same OpenAI-compatible client as the
tool-loop agent. Each criterion row keeps the judge's justification.

`output_format`: `rubric_binary` (each criterion passes or not) or `rubric_partial` (a score in
[0, 1]; passes at >= `pass_threshold` of the criterion, default 1). The judge must answer JSON
`{"criteria": [{"id", "score", "justification"}]}`; an answer that isn't is asked again once,
then fails the step (failure class `infrastructure`, the judge is not the agent). With
`judge_a2a_agent_id` (and `use_agent_judge`, the default) the judge is that agent folder of the
bundle, deployed as an A2A agent for this step, given the rubric prompt once.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, ClassVar

import anyio
import attrs

from agent_env.context import StepContext
from agent_env.errors import StepFailed
from agent_env.models import RunOverride, VerifierStep, compat_ignored
from agentenv_core_steps.steps.agent_prompt_response_verifier import prompt_record

FORMATS = ("rubric_binary", "rubric_partial")
JUDGE_SYSTEM = (
    "You are a strict grader. Grade the agent's work against each rubric criterion independently. "
    'Answer with JSON only: {"criteria": [{"id": <criterion id>, "score": <number>, '
    '"justification": <one or two sentences citing the evidence>}]}. {scale}'
)


@attrs.frozen(kw_only=True)
class RubricsVerifier(VerifierStep):
    type: ClassVar[str] = "rubrics_verifier"
    bundle_refs: ClassVar[dict[str, tuple[str, ...]]] = {"agent": ("judge_a2a_agent_id",)}
    run_overrides: ClassVar[dict[str, RunOverride]] = {
        "judge_model": RunOverride(("default_model",)),
        "provider": RunOverride(("judge_sandbox_type",)),
    }

    criteria: list[dict[str, Any]]
    prompt_id: str
    default_model: str = "claude-sonnet-4-6"
    default_model_api_base: str | None = None
    agent_name: str | None = None
    trajectory_filter: dict[str, Any] | None = None
    max_thinking_tokens: int | None = None
    effort: str | None = None
    use_agent_judge: bool = True
    use_trajectory: bool = True
    judge_a2a_agent_id: str | None = None
    judge_sandbox_type: str | None = None
    judge_priority: int | None = None
    judge_timeout_seconds: int | None = 1000
    output_format: str = "rubric_binary"
    grading_policy_prompt: str | None = None
    context_facts_for_judge: dict[str, str] | None = None
    grade_up_to_turn: int | None = compat_ignored(
        "the judge always grades the whole trajectory (no per-turn cut yet)"
    )
    run_context_for_judge: list[str] | None = compat_ignored(
        "the judge gets no extra run context parts yet"
    )
    judge_batch_size: int | None = compat_ignored("criteria are judged in one call (no batching)")
    judge_batch_concurrency: int | None = compat_ignored(
        "criteria are judged in one call (no batching)"
    )

    def check(self, bundle: Any) -> list[str]:
        problems = []
        if not self.criteria:
            problems.append("criteria: at least one rubric criterion is required")
        ids = [c.get("id") if isinstance(c, dict) else None for c in self.criteria]
        for i, (c, cid) in enumerate(zip(self.criteria, ids, strict=True)):
            if not isinstance(cid, str) or not cid:
                problems.append(f"criteria[{i}]: id: a non-empty string is required")
            elif ids.count(cid) > 1 and ids.index(cid) == i:
                problems.append(f"criteria[{i}]: id {cid!r} is used more than once")
            if isinstance(c, dict) and not (c.get("criterion") or c.get("description")):
                problems.append(f"criteria[{i}]: criterion: the rubric text is required")
        if self.output_format not in FORMATS:
            problems.append(
                f"output_format: {self.output_format!r} is not one of {', '.join(FORMATS)}"
            )
        return problems

    def _judge_prompt(self, record: dict[str, Any]) -> str:
        lines = [
            f"## Task given to the agent\n{record.get('prompt', '')}",
            f"## The agent's final answer\n{record.get('response', '')}",
        ]
        if self.use_trajectory:
            calls = record.get("tool_calls") or []
            shown = [
                {"tool": c.get("tool"), "arguments": c.get("arguments"), "error": c.get("error")}
                for c in calls
            ][:100]
            lines.append(
                f"## Tool calls the agent made ({len(calls)})\n{json.dumps(shown, indent=1)}"
            )
        if self.context_facts_for_judge:
            lines.append(
                "## Facts\n"
                + "\n".join(f"- {k}: {v}" for k, v in self.context_facts_for_judge.items())
            )
        if self.grading_policy_prompt:
            lines.append(f"## Grading policy\n{self.grading_policy_prompt}")
        rubric = [
            {"id": c["id"], "criterion": c.get("criterion") or c.get("description")}
            for c in self.criteria
        ]
        lines.append(f"## Rubric\n{json.dumps(rubric, indent=1)}")
        return "\n\n".join(lines)

    async def execute(self, ctx: StepContext) -> None:
        problems = self.check(None)
        if problems:
            raise StepFailed(self.id, "; ".join(problems))
        record = prompt_record(ctx, self.id, self.prompt_id)
        scale = (
            "Each score is 1 (met) or 0 (not met)."
            if self.output_format == "rubric_binary"
            else "Each score is a number from 0 (not met) to 1 (fully met)."
        )
        messages = [
            {"role": "system", "content": JUDGE_SYSTEM.replace("{scale}", scale)},
            {"role": "user", "content": self._judge_prompt(record)},
        ]
        if self.judge_a2a_agent_id and self.use_agent_judge:
            grades, problem = await self._grade_with_agent(ctx, self.judge_a2a_agent_id, messages)
        else:
            grades, problem = await self._grade_with_model(ctx, messages)
        if grades is None:
            raise StepFailed(
                self.id,
                f"the judge's answer is not a grading: {problem}",
                failure_class="infrastructure",
            )
        results = []
        for index, criterion in enumerate(self.criteria):
            grade = grades.get(criterion["id"])
            row = {**criterion, "criterion_index": index, "judge_model": self.default_model}
            if grade is None:
                row.update(
                    result=False, score=0.0, justification="the judge did not grade this criterion"
                )
            else:
                score = max(0.0, min(1.0, float(grade["score"])))
                if self.output_format == "rubric_binary":
                    score = 1.0 if score >= 0.5 else 0.0
                threshold = float(criterion.get("pass_threshold", 1.0))
                row.update(
                    result=score >= threshold,
                    score=score,
                    justification=str(grade.get("justification", "")),
                )
            results.append(row)
        passed = sum(r["result"] for r in results)
        self.record(ctx, results, f"judge {self.default_model} passed {passed}/{len(results)}")

    async def _grade_with_model(
        self, ctx: StepContext, messages: list[dict[str, Any]]
    ) -> tuple[Any, str]:
        """Ask `default_model` (asking again once when the answer is not a grading)."""
        from agentenv_core_steps.agents.tool_loop import model_endpoint
        from agentenv_protocol.agent.chat import ChatClient, ChatError

        base_url, api_key = await model_endpoint(ctx, self.default_model_api_base)
        try:
            chat = ChatClient(base_url, api_key, timeout=float(self.judge_timeout_seconds or 1000))
        except ChatError as e:
            raise StepFailed(self.id, f"judge: {e}", failure_class="infrastructure") from None
        problem = ""
        async with chat:
            for _ in range(2):
                try:
                    reply = await chat.complete(model=self.default_model, messages=messages)
                except ChatError as e:
                    raise StepFailed(
                        self.id, f"judge: {e}", failure_class="infrastructure"
                    ) from None
                content = reply.message.get("content") or ""
                try:
                    return self._parse(content), ""
                except ValueError as e:
                    problem = str(e)
                    messages = [
                        *messages,
                        {"role": "assistant", "content": content},
                        {
                            "role": "user",
                            "content": f"That was not usable ({e}). Answer with the JSON only.",
                        },
                    ]
        return None, problem

    async def _grade_with_agent(
        self, ctx: StepContext, judge_id: str, messages: list[dict[str, Any]]
    ) -> tuple[Any, str]:
        """Deploy the bundle's judge agent (`judge_a2a_agent_id`, an A2A agent), ask it once,
        tear its sandbox down."""
        from agent_env.agents import AgentSpec
        from agentenv_core_steps.agents.a2a import A2AAgentKind
        from agentenv_core_steps.agents.folder import load_agent
        from agentenv_protocol.agent.client import A2AClient, A2AError, task_text

        stored = await load_agent(ctx, judge_id)
        if stored is None:
            raise StepFailed(self.id, f"no judge agent {judge_id!r} among the bundle's agents")
        sandbox_name = f"judge:{self.verifier_id}"
        spec = AgentSpec(
            name=f"judge-{self.verifier_id}",
            role="judge",
            settings=dict(stored.config),
            folder=stored.folder,
            folder_id=stored.entity_id,
            model=self.default_model,
            system_prompt=messages[0]["content"],
            sandbox_name=sandbox_name,
            sandbox_provider=self.judge_sandbox_type,
            step_id=self.id,
        )
        timeout = float(self.judge_timeout_seconds or 1000)
        try:
            record = await A2AAgentKind().deploy(ctx, spec)
            async with A2AClient(record["url"]) as judge:
                with anyio.fail_after(timeout + 15):
                    task = await judge.send(messages[1]["content"], timeout=timeout)
            text = task_text(task)
        except (A2AError, TimeoutError, StepFailed) as e:
            raise StepFailed(
                self.id, f"judge agent {stored.name!r}: {e}", failure_class="infrastructure"
            ) from None
        finally:
            if sandbox_name in (ctx.get("sandboxes", default={}) or {}):
                await ctx.teardown_sandbox(sandbox_name)
        try:
            return self._parse(text), ""
        except ValueError as e:
            return None, str(e)

    @staticmethod
    def _parse(content: str) -> dict[str, dict[str, Any]]:
        match = re.search(r"\{.*\}", content, re.DOTALL)
        if match is None:
            raise ValueError("no JSON object in the answer")
        try:
            data = json.loads(match.group(0))
        except ValueError as e:
            raise ValueError(f"invalid JSON: {e}") from None
        rows = data.get("criteria") if isinstance(data, dict) else None
        if not isinstance(rows, list):
            raise ValueError("the JSON has no 'criteria' list")
        out = {}
        for row in rows:
            if not isinstance(row, dict) or not isinstance(row.get("id"), str):
                raise ValueError("each graded criterion needs a string 'id'")
            score: Any = row.get("score")  # JSON: anything; float() says if it is a number
            try:
                finite = math.isfinite(float(score))
            except (TypeError, ValueError):
                finite = False
            if not finite:  # NaN would pass every threshold once clamped
                raise ValueError(f"criterion {row['id']!r}: score {score!r} is not a finite number")
            out[row["id"]] = row
        return out
