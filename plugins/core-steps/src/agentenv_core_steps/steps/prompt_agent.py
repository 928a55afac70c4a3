"""`prompt_agent`: send a prompt to a deployed agent, with a timeout, and record what happened.

Recorded under `prompts.<prompt_id>` (and `outputs.<step id>`): the answer, status, token
usage, the tool calls the agent made (read from the run gateway's call log, by the agent's
role and the prompt's time window) and the object-store key of the full trajectory
(`runs/<run>/<instance>/trajectories/<prompt_id>.json`: model turns, tool calls, gateway log).
A failure is classified (`agent`, `env`, `infrastructure`) in the step error and the record.
Several prompts to one agent continue one conversation.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any, ClassVar

import anyio
import attrs

from agent_env.context import StepContext
from agent_env.errors import PluginError, StepFailed
from agent_env.models import RunOverride, Step, compat_ignored
from agent_env.scoring import random_verifier_id
from agent_env.suggest import did_you_mean
from agentenv_core_steps.steps.deploy_agent import model_override
from agentenv_core_steps.targets import DEFAULT_AGENT

MAX_RESULT_CHARS = 2000


def _epoch(stamp: Any) -> float:
    """Seconds since the epoch of a gateway log time (`2026-01-01T00:00:00.5Z`); 0 if unreadable."""
    try:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


@attrs.frozen(kw_only=True)
class PromptAgent(Step):
    type: ClassVar[str] = "prompt_agent"
    run_overrides: ClassVar[dict[str, RunOverride]] = {
        "user_model": RunOverride(
            ("user_model",),
            unused="this version has no simulated user (a prompt_agent runs one turn), "
            "so nothing runs on it",
        )
    }

    prompt: str | None = None
    parts: list[dict[str, Any]] | None = None
    prompt_id: str = attrs.field(factory=random_verifier_id)
    agent_name: str = DEFAULT_AGENT
    timeout_seconds: int = 600
    trajectory_output_prefix: str | None = None
    model: str | None = None
    model_params: dict[str, Any] | None = None
    system_prompt: str | None = None
    max_turns: int | None = None
    output_format: dict[str, Any] | None = None
    max_thinking_tokens: int | None = None
    effort: str | None = None
    harness: str | None = None
    agentenv_tools: list[str] | None = None
    poll_interval_seconds: int = 2
    context_id: str | None = None
    live_trajectory: bool = compat_ignored(
        "no live trajectory streaming yet; the trajectory is recorded when the prompt ends",
        default=False,
    )
    max_conversation_turns: int = 1
    user_agent_name: str = "human_agent"
    user_a2a_url: str | None = None
    user_agent_timeout_seconds: int = 600
    user_output_format: dict[str, Any] | None = None
    user_model: str | None = None
    snapshot_config: dict[str, Any] | None = None

    def check(self, bundle: Any) -> list[str]:
        problems = []
        if (self.prompt is None) == (self.parts is None):
            problems.append("set exactly one of prompt and parts")
        if self.parts is not None and not all(
            isinstance(p, dict) and p.get("kind") for p in self.parts
        ):
            problems.append("parts: each part is an object with a 'kind' (text, data, file)")
        if self.timeout_seconds <= 0:
            problems.append("timeout_seconds must be positive")
        if self.max_turns is not None and self.max_turns < 1:
            problems.append("max_turns must be >= 1")
        return problems

    def text(self) -> str:
        if self.prompt is not None:
            return self.prompt
        out = []
        for part in self.parts or []:
            if part.get("kind") == "text":
                out.append(str(part.get("text", "")))
            elif part.get("kind") == "data":
                out.append(json.dumps(part.get("data")))
        return "\n".join(out)

    async def execute(self, ctx: StepContext) -> None:
        from agent_env.agents import PromptRequest
        from agentenv_protocol.agent.types import AgentResult

        name = self.agent_name
        agents = ctx.get("agents", default={}) or {}
        record = agents.get(name)
        if not isinstance(record, dict):
            raise StepFailed(
                self.id,
                f"agent {name!r} is not deployed in this task{did_you_mean(name, agents)}; "
                f"deployed: {', '.join(sorted(agents)) or 'none'} (add a deploy_agent step)",
            )
        try:
            kind = ctx.plugins.agents.get(record["type"])()
        except PluginError as e:
            raise StepFailed(self.id, str(e)) from None
        gateway = token = None
        if record.get("mcp_url") or ctx.get("envs"):  # envs deployed after the agent count too
            from agentenv_core_steps.gateway import gateway_for, issue_token

            gateway = await gateway_for(ctx)
            token = issue_token(ctx, gateway, record["role"], record.get("env_scope"))
        request = PromptRequest(
            text=self.text(),
            prompt_id=self.prompt_id,
            timeout_seconds=float(self.timeout_seconds),
            agent_name=name,
            model=model_override(ctx) or self.model,
            system_prompt=self.system_prompt,
            max_turns=self.max_turns,
            model_params=dict(self.model_params or {}),
            token=token,
            mcp_url=gateway.mcp_url if gateway is not None else None,
        )
        started = time.time()
        result: Any = None
        with anyio.move_on_after(self.timeout_seconds):
            result = await kind.prompt(ctx, record, request)
        seconds = time.time() - started
        failed = result is None or result.failure is not None
        waited = gateway.pending(record["role"]) if gateway is not None and failed else []
        if result is None and waited:  # out of time while an env had not answered a tool call
            call = waited[0]
            result = AgentResult(
                text="",
                failure=(
                    "env",
                    f"tool {call['tool']!r} of env {call['env']!r} had not answered after "
                    f"{time.time() - call['started']:.1f}s when the prompt's "
                    f"{self.timeout_seconds}s (timeout_seconds) ran out",
                ),
            )
        if result is None:
            result = AgentResult(
                text="",
                failure=(
                    "timeout",
                    f"agent {name!r} did not answer within "
                    f"{self.timeout_seconds}s (timeout_seconds)",
                ),
            )
        calls = self._gateway_calls(gateway, record["role"], started) if gateway is not None else []
        for key, value in kind.record_updates(record, request, result).items():
            ctx.set("agents", name, key, value=value)
        key = await self._store_trajectory(ctx, record, request, result, calls, seconds)
        summary = {
            "agent_name": name,
            "model": request.model or record.get("model"),
            "prompt": request.text,
            "response": result.text,
            "status": "failed" if result.failure else "completed",
            "usage": result.usage.to_json(),
            "tool_calls": [
                {
                    "tool": c.get("tool"),
                    "arguments": c.get("arguments"),
                    "error": c.get("error"),
                    **({"fault": c["fault"]} if c.get("fault") else {}),
                    "duration_ms": c.get("duration_ms"),
                }
                for c in calls
            ],
            "trajectory": key,
            "seconds": round(seconds, 3),
        }
        if result.failure:
            summary["failure"] = {"class": result.failure[0], "message": result.failure[1]}
        ctx.set("prompts", self.prompt_id, value=summary)
        ctx.set("outputs", self.id, value={"prompt_id": self.prompt_id, **summary})
        usage = result.usage
        ctx.log(
            f"{name}: {len(calls)} tool call(s), {usage.model_calls} model call(s), "
            f"{usage.total_tokens} tokens, {seconds:.2f}s -> {summary['status']}"
        )
        if result.failure:
            cls, message = blame(result.failure, calls, waited)
            raise StepFailed(self.id, f"{cls} error: {message}", failure_class=cls)

    @staticmethod
    def _gateway_calls(gateway: Any, role: str, started: float) -> list[dict[str, Any]]:
        since = started - 0.001
        out = []
        for call in gateway.calls():
            if call.get("role") != role or _epoch(call.get("time")) < since:
                continue
            call = dict(call)
            result = call.get("result")
            if result is not None:
                text = json.dumps(result)
                call["result"] = (
                    result if len(text) <= MAX_RESULT_CHARS else text[:MAX_RESULT_CHARS] + "..."
                )
            out.append(call)
        return out

    async def _store_trajectory(
        self,
        ctx: StepContext,
        record: dict[str, Any],
        request: Any,
        result: Any,
        calls: list[dict[str, Any]],
        seconds: float,
    ) -> str | None:
        prefix = (
            self.trajectory_output_prefix
            or f"runs/{ctx.run_id}/{ctx.task_instance_id}/trajectories"
        ).rstrip("/")
        key = f"{prefix}/{self.prompt_id}.json"
        doc = {
            "prompt_id": self.prompt_id,
            "agent_name": self.agent_name,
            "agent_type": record.get("type"),
            "role": record.get("role"),
            "model": request.model or record.get("model"),
            "system_prompt": request.system_prompt or record.get("system_prompt"),
            "prompt": request.text,
            "response": result.text,
            "usage": result.usage.to_json(),
            "failure": list(result.failure) if result.failure else None,
            "seconds": round(seconds, 3),
            "events": list(result.trajectory),
            "gateway_calls": calls,
        }
        redact = getattr(ctx, "redact", None)
        data = json.dumps(redact(doc) if redact is not None else doc, default=str)
        try:
            await ctx.stores.objects.put(key, data.encode())
        except Exception as e:  # the answer still counts; say the trajectory is missing
            ctx.log(f"trajectory not stored at {key}: {e}")
            return None
        return key


def blame(
    failure: tuple[str, str], calls: list[dict[str, Any]], waited: Sequence[dict[str, Any]] = ()
) -> tuple[str, str]:
    """The class and message of a failed prompt. An agent that failed (or ran out of time)
    after the gateway logged a tool call that failed by the env's or the infrastructure's
    fault (`fault` of the call log: the env's tool raised, the env stopped or did not answer)
    failed because of it: the first such call's fault is the class. An agent whose own call
    to the gateway broke off (`infrastructure`) while the gateway still waited on an env for
    one of its calls (`waited`) failed because that env did not answer: `env`. The gateway's
    log is ours, so an agent cannot shift the blame by what it reports."""
    cls, message = failure
    if cls in ("agent", "timeout", "infrastructure") and waited:
        call = waited[0]
        where = f"tool {call.get('tool')!r} of env {call.get('env')!r}"
        return "env", f"{where} had not answered when the agent gave up ({message})"
    if cls not in ("agent", "timeout"):
        return cls, message
    for call in calls:
        fault = call.get("fault")
        if fault in ("env", "infrastructure"):
            where = f"tool {call.get('tool')!r} of env {call.get('env')!r}"
            return fault, f"{where} failed: {call.get('error')} (then: {message})"
    return cls, message
