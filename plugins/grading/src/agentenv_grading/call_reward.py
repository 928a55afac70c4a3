"""`call_reward_verifier`: per-step rewards. Scores each gateway call the agent made (as the
prompt steps recorded them) by the first matching rule, and asks plugins
(`agentenv_score_call`) for their scores of the same call. Every score becomes a
`step_rewards` entry `{call_index, score, verifier}` of the trial record (`call_index`: the
call's position among all the trial's recorded calls, prompts in step order); the verifier's
own score is the weighted average of its per-call scores.

A rule: `{"tool": NAME?, "arguments": {...}?, "error": true|false?, "score": 0..1}`; every key
given must match (`arguments`: each given key equal). `default` scores a call no rule matches
(left unscored when null).
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from agent_env.context import StepContext
from agent_env.errors import StepFailed
from agent_env.models import VerifierStep
from agent_env.scoring import ScoreAggregator
from agent_env.suggest import did_you_mean

RULE_KEYS = ("tool", "arguments", "error", "score")
STEP_REWARDS = "step_rewards"


def rule_problems(rule: Any, where: str) -> list[str]:
    if not isinstance(rule, dict):
        return [f"{where}: must be an object"]
    out = [
        f"{where}: unknown key {k!r}{did_you_mean(str(k), RULE_KEYS)}; known: {', '.join(RULE_KEYS)}"
        for k in rule
        if k not in RULE_KEYS
    ]
    score = rule.get("score")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 1:
        out.append(f"{where}: score: a number from 0 to 1 is required, got {score!r}")
    if rule.get("arguments") is not None and not isinstance(rule["arguments"], dict):
        out.append(f"{where}: arguments: must be an object")
    if "error" in rule and not isinstance(rule["error"], bool):
        out.append(f"{where}: error: must be true or false")
    return out


def matches(rule: dict[str, Any], call: dict[str, Any]) -> bool:
    if rule.get("tool") is not None and call.get("tool") != rule["tool"]:
        return False
    if "error" in rule and bool(call.get("error")) != rule["error"]:
        return False
    got = call.get("arguments") or {}
    return all(k in got and got[k] == v for k, v in (rule.get("arguments") or {}).items())


def recorded_calls(ctx: StepContext) -> list[tuple[str, dict[str, Any]]]:
    """(prompt_id, call) for every call the trial's prompts recorded, in step order."""
    prompts = ctx.get("prompts", default={}) or {}
    return [
        (str(pid), call)
        for pid, prompt in prompts.items()
        if isinstance(prompt, dict)
        for call in prompt.get("tool_calls") or []
        if isinstance(call, dict)
    ]


@attrs.frozen(kw_only=True)
class CallRewardVerifier(VerifierStep):
    type: ClassVar[str] = "call_reward_verifier"
    #: A regrade can run it from the record alone.
    reads_only_the_record: ClassVar[bool] = True

    rules: list[dict[str, Any]] = attrs.field(factory=list)
    default: float | None = None
    prompt_id: str | None = None
    #: Also ask plugins (`agentenv_score_call`) to score each call.
    plugin_scores: bool = True
    score_aggregator: ScoreAggregator = "weighted_average"

    def check(self, bundle: Any) -> list[str]:
        problems = [p for i, r in enumerate(self.rules) for p in rule_problems(r, f"rules[{i}]")]
        if self.default is not None and not 0 <= self.default <= 1:
            problems.append(f"default: a number from 0 to 1, got {self.default!r}")
        if not self.rules and self.default is None and not self.plugin_scores:
            problems.append("give rules, a default or plugin_scores: nothing would score a call")
        return problems

    async def execute(self, ctx: StepContext) -> None:
        problems = self.check(None)
        if problems:
            raise StepFailed(self.id, "; ".join(problems))
        calls = recorded_calls(ctx)
        if self.prompt_id is not None and all(pid != self.prompt_id for pid, _ in calls):
            prompts = ctx.get("prompts", default={}) or {}
            if self.prompt_id not in prompts:
                raise StepFailed(
                    self.id,
                    f"no prompt {self.prompt_id!r} recorded{did_you_mean(self.prompt_id, prompts)}; "
                    f"recorded: {', '.join(sorted(prompts)) or 'none'}",
                )
        rewards: list[dict[str, Any]] = []
        rows: list[dict[str, Any]] = []
        for index, (pid, call) in enumerate(calls):
            if self.prompt_id is not None and pid != self.prompt_id:
                continue
            scored = self.score_call(call, index, ctx.plugins, ctx.task_id)
            rewards.extend(scored)
            if scored:
                mean = sum(r["score"] for r in scored) / len(scored)
                rows.append(
                    {
                        "id": f"call-{index}",
                        "tool": call.get("tool"),
                        "result": mean >= 1,
                        "score": mean,
                        "justification": ", ".join(
                            f"{r['verifier']}: {r['score']:g}" for r in scored
                        ),
                    }
                )
        mine = {self.verifier_id} | {r["verifier"] for r in rewards}
        kept = [r for r in ctx.get(STEP_REWARDS, default=[]) or [] if r.get("verifier") not in mine]
        ctx.set(STEP_REWARDS, value=kept + rewards)
        self.record(ctx, rows, f"{len(rows)} call(s) scored")

    def score_call(
        self, call: dict[str, Any], index: int, plugins: Any, task: str
    ) -> list[dict[str, Any]]:
        """The `step_rewards` entries of one call: this verifier's rule score (or default), and
        each plugin's (`agentenv_score_call`). Also what an OpenEnv step's observation carries
        (agentenv-openenv calls it on every step of a task that has this verifier)."""
        out: list[dict[str, Any]] = []
        rule_score = next((r["score"] for r in self.rules if matches(r, call)), self.default)
        if rule_score is not None:
            out.append(
                {"call_index": index, "score": float(rule_score), "verifier": self.verifier_id}
            )
        if self.plugin_scores:
            out.extend(
                {"call_index": index, "score": score, "verifier": name}
                for name, score in plugins.score_call(call, index, task)
            )
        return out
