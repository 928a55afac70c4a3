"""pi (`@earendil-works/pi-coding-agent`, the reference's `pi`): `pi -p --mode json`, an
`openai-completions` provider in `$PI_CODING_AGENT_DIR/models.json` and the gateway in its
`mcp.json` with `direct` exposure (the tools offered to the model as they are). pi needs
Node.js 22.19+: it runs with the Node.js installed beside every CLI (`install.NODE`)."""

from __future__ import annotations

import json

from agentenv_cli_agents.harnesses import base

PROVIDER = "agentenv"


def invoke(ask: base.Ask) -> base.Invocation:
    home = f"{ask.home}/.pi"
    files: dict[str, str] = {}
    argv = [ask.exe, "-p", "--mode", "json", "--no-session", "--no-approve", "--offline"]
    model = ask.model or "default"
    if ask.base_url:
        entry = {
            "id": model,
            "reasoning": False,
            "input": ["text"],
            "contextWindow": 128000,
            "maxTokens": 8192,
        }
        provider = {
            "baseUrl": ask.base_url,
            "api": "openai-completions",
            "apiKey": f"${{{base.MODEL_KEY_ENV}}}",
            "models": [entry],
        }
        files[".pi/models.json"] = json.dumps({"providers": {PROVIDER: provider}}, indent=1)
        argv += ["--provider", PROVIDER]
    if ask.model or ask.base_url:
        argv += ["--model", model]
    if ask.mcp_url:
        server = {
            "type": "http",
            "url": ask.mcp_url,
            "exposure": "direct",
            "headers": {"Authorization": f"Bearer ${{{base.TOKEN_ENV}}}"},
        }
        files[".pi/mcp.json"] = json.dumps({"mcpServers": {base.SERVER: server}}, indent=1)
    if ask.system_prompt:
        argv += ["--append-system-prompt", ask.system_prompt]
    env = {
        "PI_CODING_AGENT_DIR": home,
        "PI_OFFLINE": "1",
        "PI_SKIP_VERSION_CHECK": "1",
        "PI_TELEMETRY": "0",
        base.MODEL_KEY_ENV: ask.api_key or "unused",
    }
    return base.Invocation(files=files, argv=[*argv, "--", ask.prompt], env=env)


def parse(stdout: str) -> base.Session:
    t = base.Tally()
    for event in base.lines(stdout):
        kind = event.get("type")
        message = event.get("message") or {}
        if kind == "message_end" and message.get("role") == "assistant":
            t.model_calls += 1
            blocks = message.get("content") or []
            said = base.text_of([b for b in blocks if b.get("type") == "text"]) or None
            asked = [
                (b.get("id"), b.get("name"), b.get("arguments"))
                for b in blocks
                if b.get("type") == "toolCall"
            ]
            t.trajectory.append(base.model_event(said, asked, t.model_calls))
            if said:
                t.texts.append(said)
            usage = message.get("usage") or {}
            t.input_tokens += int(usage.get("input") or 0)
            t.output_tokens += int(usage.get("output") or 0)
            if message.get("stopReason") == "error" or message.get("errorMessage"):
                t.error = str(message.get("errorMessage") or "the model call failed")
        elif kind == "tool_execution_end":
            t.tool_calls += 1
            result = event.get("result")
            t.trajectory.append(
                base.tool_event(
                    event.get("toolCallId"),
                    event.get("toolName"),
                    event.get("args"),
                    base.text_of(result.get("content")) if isinstance(result, dict) else result,
                    bool(event.get("isError")),
                    t.model_calls,
                )
            )
    return t.session()
