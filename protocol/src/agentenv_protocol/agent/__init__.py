"""Agents for AgentEnv: the A2A agent SDK (`A2AAgent`, `create_app`, `serve`), its client
(`A2AClient`), an OpenAI-compatible chat client with the tool loop every LLM agent shares, and
`testing.ScriptedModelServer`, a chat-completions server that plays back scripted answers.

Names load on first use, so importing the package stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "AGENT_CARD_PATH": "types",
    "A2A_PATH": "types",
    "MCP_CONFIG_URI": "types",
    "AGENT_CONFIG_URI": "types",
    "TRAJECTORY_URI": "types",
    "AgentConfig": "types",
    "McpServer": "types",
    "AgentRequest": "types",
    "AgentResult": "types",
    "Usage": "types",
    "ChatClient": "chat",
    "ChatError": "chat",
    "ModelUnavailable": "chat",
    "MalformedModelResponse": "chat",
    "ModelNotConfigured": "chat",
    "ToolLoop": "loop",
    "LoopResult": "loop",
    "MaxTurnsExceeded": "loop",
    "McpTools": "loop",
    "A2AAgent": "server",
    "create_app": "server",
    "serve": "server",
    "A2AClient": "client",
    "A2AError": "client",
    "ToolLoopAgent": "tool_loop_agent",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
