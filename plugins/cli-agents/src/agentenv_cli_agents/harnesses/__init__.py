"""How each CLI coding agent is installed, pointed at the model and the gateway, run headless,
and how its JSON session log becomes our trajectory (`user`/`model`/`tool`/`error` events, the
shape the tool loop records). One module per CLI with its `invoke` and `parse`; `base` holds
what they share; `HARNESSES` below says which npm package each is and what API it speaks.

The gateway token never lands in a file: the MCP config names the environment variable
`AGENTENV_GATEWAY_TOKEN`, which each CLI expands itself.
"""

from __future__ import annotations

from agentenv_cli_agents.harnesses import claude, codex, gemini, opencode, pi
from agentenv_cli_agents.harnesses.base import TOKEN_ENV, Ask, Harness, Invocation, Session
from agentenv_cli_agents.names import KIND_NAMES

# name (its aliases: names.KIND_NAMES), npm package, its version, executable, model API, module
_TABLE = (
    ("claude-code", "@anthropic-ai/claude-code", "2.1.332", "claude", "anthropic", claude),
    ("codex", "@openai/codex", "0.171.0", "codex", "openai", codex),
    ("gemini", "@google/gemini-cli", "0.61.0", "gemini", "gemini", gemini),
    ("opencode", "opencode-ai", "1.18.33", "opencode", "openai", opencode),
    ("pi", "@earendil-works/pi-coding-agent", "1.6.0", "pi", "openai", pi),
)  # fmt: skip

HARNESSES: tuple[Harness, ...] = tuple(
    Harness(
        type=name,
        aliases=KIND_NAMES[name],
        package=package,
        version=version,
        binary=binary,
        api=api,
        invoke=module.invoke,
        parse=module.parse,
    )
    for name, package, version, binary, api, module in _TABLE
)

__all__ = ["HARNESSES", "TOKEN_ENV", "Ask", "Harness", "Invocation", "Session"]
