"""Gemini CLI (`@google/gemini-cli`): `gemini -p --output-format stream-json --yolo`, the
Gemini API (`generateContent`) at `GOOGLE_GEMINI_BASE_URL`, the gateway from
`$GEMINI_CLI_HOME/.gemini/settings.json`."""

from __future__ import annotations

import json
from typing import Any

from agentenv_cli_agents.harnesses import base


def invoke(ask: base.Ask) -> base.Invocation:
    settings: dict[str, Any] = {
        "general": {"disableAutoUpdate": True},
        "privacy": {"usageStatisticsEnabled": False},
        # the API key auth honours GOOGLE_GEMINI_BASE_URL (the `gateway` auth that variable
        # selects by default is refused by headless runs)
        "security": {"auth": {"selectedType": "gemini-api-key"}},
    }
    if ask.mcp_url:
        settings["mcpServers"] = {
            base.SERVER: {
                "httpUrl": ask.mcp_url,
                "trust": True,
                "headers": {"Authorization": f"Bearer ${base.TOKEN_ENV}"},
            }
        }
    argv = [ask.exe, "-p", ask.text, "--output-format", "stream-json", "--yolo"]
    if ask.model:
        argv += ["--model", ask.model]
    env = {
        "GEMINI_CLI_HOME": ask.home,
        "GEMINI_API_KEY": ask.api_key or "unused",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",  # headless runs refuse an untrusted folder
    }
    if ask.base_url:  # the Gemini API's root: the client adds `/v1beta/models/...` itself
        env["GOOGLE_GEMINI_BASE_URL"] = ask.base_url.rstrip("/").removesuffix("/v1")
    return base.Invocation(
        files={".gemini/settings.json": json.dumps(settings, indent=1)}, argv=argv, env=env
    )


def parse(stdout: str) -> base.Session:
    t = base.Tally()
    pending: dict[Any, dict[str, Any]] = {}
    for event in base.lines(stdout):
        kind = event.get("type")
        if kind == "message" and event.get("role") == "assistant":
            t.texts.append(event.get("content") or "")
        elif kind == "tool_use":
            pending[event.get("tool_id")] = event
            call = (event.get("tool_id"), event.get("tool_name"), event.get("parameters"))
            t.trajectory.append(base.model_event(None, [call]))
        elif kind == "tool_result":
            use = pending.pop(event.get("tool_id"), {})
            t.tool_calls += 1
            t.trajectory.append(
                base.tool_event(
                    event.get("tool_id"),
                    use.get("tool_name"),
                    use.get("parameters"),
                    base.text_of(event.get("output")),
                    event.get("status") != "success",
                )
            )
        elif kind == "result":
            stats = event.get("stats") or {}
            t.input_tokens = int(stats.get("input_tokens") or 0)
            t.output_tokens = int(stats.get("output_tokens") or 0)
            if event.get("status") not in (None, "success"):
                t.error = str(event.get("error") or event.get("status"))
    text = "".join(t.texts)  # the answer streams in pieces
    if text:
        t.trajectory.append(base.model_event(text))
    t.model_calls = sum(1 for e in t.trajectory if e["type"] == "model")
    return t.session(text)
