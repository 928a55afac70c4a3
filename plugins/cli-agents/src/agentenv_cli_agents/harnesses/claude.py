"""Claude Code (`@anthropic-ai/claude-code`): `claude -p --output-format stream-json`, the
Anthropic Messages API at `ANTHROPIC_BASE_URL`, the gateway from `--mcp-config`."""

from __future__ import annotations

import json
from typing import Any

from agentenv_cli_agents.harnesses import base


def invoke(ask: base.Ask) -> base.Invocation:
    files: dict[str, str] = {}
    argv = [ask.exe, "-p", ask.prompt, "--output-format", "stream-json", "--verbose"]
    if ask.mcp_url:
        server = {
            "type": "http",
            "url": ask.mcp_url,
            "headers": {"Authorization": f"Bearer ${{{base.TOKEN_ENV}}}"},
        }
        files["mcp.json"] = json.dumps({"mcpServers": {base.SERVER: server}}, indent=1)
        argv += [
            "--mcp-config",
            f"{ask.home}/mcp.json",
            "--strict-mcp-config",
            "--allowedTools",
            f"mcp__{base.SERVER}",
        ]
    if ask.model:
        argv += ["--model", ask.model]
    if ask.system_prompt:
        argv += ["--append-system-prompt", ask.system_prompt]
    env = {
        "CLAUDE_CONFIG_DIR": f"{ask.home}/.claude",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "ENABLE_TOOL_SEARCH": "false",
        "DISABLE_TELEMETRY": "1",
    }
    if ask.base_url:
        env["ANTHROPIC_BASE_URL"] = ask.base_url.rstrip("/").removesuffix("/v1")
    if ask.api_key or ask.base_url:  # a keyless local endpoint still needs a key to start
        env["ANTHROPIC_API_KEY"] = ask.api_key or "unused"
    return base.Invocation(files=files, argv=argv, env=env)


def parse(stdout: str) -> base.Session:
    t = base.Tally()
    pending: dict[Any, dict[str, Any]] = {}
    text = ""
    for event in base.lines(stdout):
        kind = event.get("type")
        message = event.get("message") or {}
        if kind == "assistant":
            t.model_calls += 1
            blocks = message.get("content") or []
            uses = [b for b in blocks if b.get("type") == "tool_use"]
            said = base.text_of([b for b in blocks if b.get("type") == "text"]) or None
            t.trajectory.append(
                base.model_event(
                    said, [(b["id"], b["name"], b.get("input")) for b in uses], t.model_calls
                )
            )
            pending.update((b["id"], b) for b in uses)
        elif kind == "user":
            for b in message.get("content") or []:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    use = pending.pop(b.get("tool_use_id"), {})
                    t.tool_calls += 1
                    t.trajectory.append(
                        base.tool_event(
                            b.get("tool_use_id"),
                            use.get("name"),
                            use.get("input"),
                            base.text_of(b.get("content")),
                            bool(b.get("is_error")),
                            t.model_calls,
                        )
                    )
        elif kind == "result":
            text = event.get("result") or ""
            usage = event.get("usage") or {}
            t.input_tokens = int(usage.get("input_tokens") or 0)
            t.output_tokens = int(usage.get("output_tokens") or 0)
            if event.get("is_error") or event.get("subtype") != "success":
                t.error = text or str(event.get("subtype"))
    return t.session(text)
