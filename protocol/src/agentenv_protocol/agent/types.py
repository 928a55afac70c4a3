"""Wire names and values shared by the A2A agent server, its client and the agent steps.

Extensions are advertised on the card as `{uri, description, params: {endpoint, methods:
{<op>: {method, endpoint?, request?}}}}`; a client looks the operation up by name.
"""

from __future__ import annotations

from typing import Any

import attrs

AGENT_CARD_PATH = "/.well-known/agent-card.json"
LEGACY_CARD_PATH = "/.well-known/agent.json"
A2A_PATH = "/a2a"
HEALTH_PATH = "/health"
MCP_CONFIG_URI = "urn:agentenv:mcp-config/v1"
AGENT_CONFIG_URI = "urn:agentenv:agent-config/v1"
TRAJECTORY_URI = "urn:agentenv:trajectory/v1"
DEFAULT_AGENT_PORT = 8000


@attrs.frozen(kw_only=True)
class Usage:
    """Token usage as the model reported it, summed over a prompt's model calls."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    model_calls: int = 0
    tool_call_count: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            **{f.name: getattr(self, f.name) + getattr(other, f.name) for f in attrs.fields(Usage)}
        )

    def to_json(self) -> dict[str, int]:
        return attrs.asdict(self)


#: The settings `urn:agentenv:agent-config/v1` accepts; anything else is refused.
CONFIG_FIELDS = (
    "model",
    "system_prompt",
    "max_turns",
    "timeout_seconds",
    "role",
    "model_base_url",
    "model_params",
    "tool_timeout_seconds",
    "harness",
)


@attrs.frozen(kw_only=True)
class AgentConfig:
    """What an agent is told to use: model, system prompt and limits."""

    model: str | None = None
    system_prompt: str | None = None
    max_turns: int = 30
    timeout_seconds: float = 600.0
    role: str | None = None
    model_base_url: str | None = None
    model_params: dict[str, Any] = attrs.field(factory=dict)
    tool_timeout_seconds: float = 120.0
    harness: str | None = None

    def merged(self, changes: dict[str, Any]) -> AgentConfig:
        """A copy with `changes` applied; ValueError naming an unknown key."""
        unknown = [k for k in changes if k not in CONFIG_FIELDS]
        if unknown:
            raise ValueError(
                f"unknown agent-config field {unknown[0]!r}; known: {', '.join(CONFIG_FIELDS)}"
            )
        clean = {k: v for k, v in changes.items() if v is not None}
        if "model_params" in clean and not isinstance(clean["model_params"], dict):
            raise ValueError("model_params must be an object")
        for key in ("max_turns",):
            if key in clean and (not isinstance(clean[key], int) or clean[key] < 1):
                raise ValueError(f"{key} must be a positive integer")
        return attrs.evolve(self, **clean)

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen(kw_only=True)
class McpServer:
    """An MCP endpoint the agent may use; `headers` carry its bearer token (never echoed)."""

    name: str
    url: str
    headers: dict[str, str] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class AgentRequest:
    """One prompt to an agent: its text, the conversation so far (OpenAI-style messages) and
    what the agent was configured with."""

    text: str
    context_id: str
    task_id: str
    config: AgentConfig
    mcp_servers: tuple[McpServer, ...] = ()
    history: tuple[dict[str, Any], ...] = ()
    metadata: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class AgentResult:
    """An agent's answer: final text, the conversation to keep, usage and trajectory events.

    `failure` is None on success, else `(failure_class, message)` with failure_class one of
    `agent` (the agent or its model misbehaved), `env` (the tools' side failed) or
    `infrastructure` (model endpoint unreachable, misconfigured)."""

    text: str
    messages: tuple[dict[str, Any], ...] = ()
    usage: Usage = attrs.field(factory=Usage)
    trajectory: tuple[dict[str, Any], ...] = ()
    failure: tuple[str, str] | None = None
