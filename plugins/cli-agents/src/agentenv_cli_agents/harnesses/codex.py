"""Codex CLI (`@openai/codex`): `codex exec --json`, the OpenAI Responses API through a
`model_providers` entry in `$CODEX_HOME/config.toml`, the gateway as an HTTP MCP server."""

from __future__ import annotations

import json

from agentenv_cli_agents.harnesses import base


def _toml(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def invoke(ask: base.Ask) -> base.Invocation:
    config = [f"model = {_toml(ask.model)}"] if ask.model else []
    if ask.base_url:
        config += [
            'model_provider = "agentenv"',
            "",
            "[model_providers.agentenv]",
            'name = "agentenv"',
            f"base_url = {_toml(ask.base_url)}",
            'env_key = "OPENAI_API_KEY"',
            'wire_api = "responses"',
        ]
    if ask.mcp_url:
        config += [
            "",
            f"[mcp_servers.{base.SERVER}]",
            f"url = {_toml(ask.mcp_url)}",
            f"bearer_token_env_var = {_toml(base.TOKEN_ENV)}",
        ]
    argv = [
        ask.exe,
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
        ask.text,
    ]
    env = {"CODEX_HOME": f"{ask.home}/.codex", "OPENAI_API_KEY": ask.api_key or "unused"}
    return base.Invocation(
        files={".codex/config.toml": "\n".join(config) + "\n"}, argv=argv, env=env
    )


def parse(stdout: str) -> base.Session:
    t = base.Tally()
    for event in base.lines(stdout):
        kind = event.get("type")
        item = event.get("item") or {}
        done = kind == "item.completed"
        if kind == "turn.started":
            t.model_calls += 1
        elif done and item.get("type") == "agent_message":
            t.texts.append(item.get("text") or "")
            t.trajectory.append(base.model_event(item.get("text"), turn=t.model_calls))
        elif done and item.get("type") == "mcp_tool_call":
            t.tool_calls += 1
            result = item.get("result") or {}
            t.trajectory.append(
                base.tool_event(
                    item.get("id"),
                    item.get("tool"),
                    item.get("arguments"),
                    base.text_of(result.get("content")) if isinstance(result, dict) else result,
                    item.get("status") == "failed" or bool(item.get("error")),
                    t.model_calls,
                    server=item.get("server"),
                )
            )
        elif done and item.get("type") == "command_execution":
            t.trajectory.append(
                base.tool_event(
                    item.get("id"),
                    "shell",
                    {"command": item.get("command")},
                    item.get("aggregated_output"),
                    item.get("exit_code") not in (0, None),
                    t.model_calls,
                )
            )
        elif kind == "turn.completed":
            usage = event.get("usage") or {}
            t.input_tokens += int(usage.get("input_tokens") or 0)
            t.output_tokens += int(usage.get("output_tokens") or 0)
        elif kind in ("turn.failed", "error"):
            failure = event.get("error") or {}
            t.error = str(failure.get("message") or event.get("message") or kind)
            t.trajectory.append({"type": "error", "class": "agent", "message": t.error})
    return t.session()
