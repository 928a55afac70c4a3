"""The agent interface: what a kind of agent implements so the agent steps can deploy and prompt it.

Public API: a third-party agent kind subclasses `AgentKind` and registers it through
`agentenv_register_agents`. In the core steps, `deploy_agent` builds an `AgentSpec` and calls `deploy`, which returns the JSON the step keeps
under `agents.<name>` (journaled, so it must hold no secret). Each `prompt_agent` calls
`prompt` with that record and a `PromptRequest`; the returned `AgentResult` carries the answer,
the conversation to keep, usage and trajectory, or a classified failure.
"""

from __future__ import annotations

import abc
import builtins
from pathlib import Path
from typing import Any, ClassVar

import attrs

from agent_env.context import StepContext
from agent_env.models import compat_ignored

#: Why the existing product's agent.toml keys that have no counterpart here are accepted.
_EXISTING_KEY = "an agent.toml key of the existing product that this version does not use"


@attrs.frozen(kw_only=True)
class AgentSpec:
    """What `deploy_agent` hands an agent kind."""

    name: str
    role: str
    settings: dict[str, Any] = attrs.field(factory=dict)  # agent.toml config + step metadata
    folder: Path | None = None  # the bundle's agent folder, materialized on this host
    folder_id: str | None = None
    env_vars: dict[str, str] = attrs.field(factory=dict)
    system_prompt: str | None = None
    model: str | None = None
    model_base_url: str | None = None
    mcp_url: str | None = None  # the run gateway's MCP endpoint (host view), None without envs
    token: str | None = None  # the agent's role-bound gateway token (never journaled)
    sandbox_name: str | None = None
    sandbox_provider: str | None = None
    solution: Any = None  # the task's shipped solution (scripted / oracle)
    step_id: str = ""


@attrs.frozen(kw_only=True)
class AgentConfig:
    """The keys every agent folder's `agent.toml` may hold, whatever its type; an agent kind's
    `config_model` subclasses it and adds its own. The existing product's `image`,
    `default_env_vars` and `[metadata]` parse and are reported as ignored (a kind that uses one
    redeclares it)."""

    type: str | None = None
    id: str | None = None
    name: str | None = None
    description: str | None = None
    #: `deploy_agent` hands every kind these two (`AgentSpec.model`, `.system_prompt`).
    model: str | None = None
    system_prompt: str | None = None
    image: Any = compat_ignored(_EXISTING_KEY)
    default_env_vars: Any = compat_ignored(_EXISTING_KEY)
    metadata: Any = compat_ignored(_EXISTING_KEY)


@attrs.frozen(kw_only=True)
class PromptRequest:
    """One `prompt_agent` step's ask."""

    text: str
    prompt_id: str
    timeout_seconds: float
    agent_name: str = ""
    model: str | None = None
    system_prompt: str | None = None
    max_turns: int | None = None
    model_params: dict[str, Any] = attrs.field(factory=dict)
    token: str | None = None  # a fresh role-bound gateway token for in-process agents
    mcp_url: str | None = None


class AgentKind(abc.ABC):
    """A kind of agent. One instance per call; keep state in the returned records."""

    type: ClassVar[str] = ""
    #: True when the kind replays the task's shipped solution instead of solving it (an
    #: oracle): its deployment spec carries the solution, a run with it proves the task is
    #: solvable, and `run --agent` skips the tasks that ship none.
    needs_solution: ClassVar[bool] = False
    #: The bundle folder kind ("agent") this type is the default for, when a folder's
    #: `agent.toml` names no `type`; at most one installed agent kind should claim it.
    default_for: ClassVar[str | None] = None
    #: An attrs class the bundle parser structures the folder's `agent.toml` into (strict: unknown
    #: keys are errors with a did-you-mean; fields declared with `models.compat_ignored` are
    #: accepted and warned about once), usually a subclass of `AgentConfig`; None leaves the
    #: file to this type's own checks.
    config_model: ClassVar[builtins.type | None] = None

    @abc.abstractmethod
    async def deploy(self, ctx: StepContext, spec: AgentSpec) -> dict[str, Any]:
        """Start or prepare the agent; the JSON record to keep (no secrets)."""

    @abc.abstractmethod
    async def prompt(self, ctx: StepContext, record: dict[str, Any], request: PromptRequest) -> Any:
        """Prompt it; returns `agentenv_protocol.agent.AgentResult` plus `state` updates via
        `record_updates(result)` if the kind needs to remember something between prompts."""

    def record_updates(
        self, record: dict[str, Any], request: PromptRequest, result: Any
    ) -> dict[str, Any]:
        """Changes to `agents.<name>` after a prompt (e.g. the conversation); none by default."""
        return {}
