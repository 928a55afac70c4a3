"""OpenCode (`opencode-ai`): `opencode run --format json`, an OpenAI-compatible provider
(`@ai-sdk/openai-compatible`, chat completions) and the gateway as a remote MCP server, both in
the config file `OPENCODE_CONFIG` names."""

from __future__ import annotations

import json
from typing import Any

from agentenv_cli_agents.harnesses import base


def invoke(ask: base.Ask) -> base.Invocation:
    config: dict[str, Any] = {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "permission": {"edit": "allow", "bash": "allow"},
    }
    name = ask.model or "default"
    if ask.base_url:
        config["provider"] = {
            "agentenv": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "agentenv",
                "options": {"baseURL": ask.base_url, "apiKey": f"{{env:{base.MODEL_KEY_ENV}}}"},
                "models": {name: {"name": name}},
            }
        }
        config["model"] = f"agentenv/{name}"
    if ask.mcp_url:
        config["mcp"] = {
            base.SERVER: {
                "type": "remote",
                "url": ask.mcp_url,
                "enabled": True,
                "headers": {"Authorization": f"Bearer {{env:{base.TOKEN_ENV}}}"},
            }
        }
    env = {
        "OPENCODE_CONFIG": f"{ask.home}/opencode.json",
        "XDG_DATA_HOME": f"{ask.home}/.local/share",
        "XDG_CONFIG_HOME": f"{ask.home}/.config",
        base.MODEL_KEY_ENV: ask.api_key or "unused",
    }
    return base.Invocation(
        files={"opencode.json": json.dumps(config, indent=1)},
        argv=[ask.exe, "run", "--format", "json", ask.text],
        env=env,
    )


def parse(stdout: str) -> base.Session:
    t = base.Tally()
    for event in base.lines(stdout):
        part = event.get("part") or {}
        kind = event.get("type")
        if kind == "step_finish":
            t.model_calls += 1
            tokens = part.get("tokens") or {}
            t.input_tokens += int(tokens.get("input") or 0)
            t.output_tokens += int(tokens.get("output") or 0)
        elif kind == "text" and part.get("text"):
            t.texts.append(part["text"])
            t.trajectory.append(base.model_event(part["text"]))
        elif kind == "tool_use":
            state = part.get("state") or {}
            t.tool_calls += 1
            t.trajectory.append(
                base.tool_event(
                    part.get("callID"),
                    part.get("tool"),
                    state.get("input"),
                    base.text_of(state.get("output")),
                    state.get("status") == "error",
                )
            )
        elif kind == "error":
            t.error = json.dumps(event.get("error") or event)
    return t.session()
