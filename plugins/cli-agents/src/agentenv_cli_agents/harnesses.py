"""How each CLI coding agent is installed, pointed at the model and the gateway, run headless,
and how its JSON session log becomes our trajectory (`user`/`model`/`tool`/`error` events, the
shape the tool loop records).

The gateway token never lands in a file: the MCP config names the environment variable
`AGENTENV_GATEWAY_TOKEN`, which each CLI expands itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import attrs

TOKEN_ENV = "AGENTENV_GATEWAY_TOKEN"
SERVER = "gateway"


@attrs.frozen(kw_only=True)
class Invocation:
    """What a prompt needs: files to write under the agent's home, argv, environment."""

    files: dict[str, str]
    argv: list[str]
    env: dict[str, str]


@attrs.frozen(kw_only=True)
class Session:
    """A finished run read from the CLI's session log."""

    text: str
    trajectory: list[dict[str, Any]]
    input_tokens: int = 0
    output_tokens: int = 0
    model_calls: int = 0
    tool_calls: int = 0
    error: str | None = None


@attrs.frozen(kw_only=True)
class Harness:
    """One CLI agent. `api` is the model API it speaks (`anthropic` or `openai`)."""

    type: str
    aliases: tuple[str, ...]
    package: str
    version: str
    binary: str
    api: str
    invoke: Callable[..., Invocation]
    parse: Callable[[str], Session]


def _lines(stdout: str) -> list[dict[str, Any]]:
    events = []
    for line in stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                events.append(json.loads(line))
            except ValueError:
                continue
    return events


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            _text_of(c.get("text", c.get("content", ""))) for c in content if isinstance(c, dict)
        )
    return "" if content is None else json.dumps(content)


# --- Claude Code ----------------------------------------------------------------------------
def claude_invoke(
    *,
    exe: str,
    home: str,
    prompt: str,
    model: str | None,
    system_prompt: str | None,
    base_url: str | None,
    api_key: str | None,
    mcp_url: str | None,
) -> Invocation:
    files: dict[str, str] = {}
    argv = [exe, "-p", prompt, "--output-format", "stream-json", "--verbose"]
    if mcp_url:
        config = {
            "mcpServers": {
                SERVER: {
                    "type": "http",
                    "url": mcp_url,
                    "headers": {"Authorization": f"Bearer ${{{TOKEN_ENV}}}"},
                }
            }
        }
        files["mcp.json"] = json.dumps(config, indent=1)
        argv += [
            "--mcp-config",
            f"{home}/mcp.json",
            "--strict-mcp-config",
            "--allowedTools",
            f"mcp__{SERVER}",
        ]
    if model:
        argv += ["--model", model]
    if system_prompt:
        argv += ["--append-system-prompt", system_prompt]
    env = {
        "CLAUDE_CONFIG_DIR": f"{home}/.claude",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "ENABLE_TOOL_SEARCH": "false",
        "DISABLE_TELEMETRY": "1",
    }
    if base_url:
        env["ANTHROPIC_BASE_URL"] = base_url.rstrip("/").removesuffix("/v1")
    if api_key or base_url:  # a keyless local endpoint still needs a key for the CLI to start
        env["ANTHROPIC_API_KEY"] = api_key or "unused"
    return Invocation(files=files, argv=argv, env=env)


def claude_parse(stdout: str) -> Session:
    trajectory: list[dict[str, Any]] = []
    pending: dict[str, dict[str, Any]] = {}
    text, error, usage, calls, turns = "", None, {}, 0, 0
    for event in _lines(stdout):
        kind = event.get("type")
        message = event.get("message") or {}
        if kind == "assistant":
            turns += 1
            blocks = message.get("content") or []
            uses = [b for b in blocks if b.get("type") == "tool_use"]
            trajectory.append(
                {
                    "type": "model",
                    "turn": turns,
                    "content": _text_of([b for b in blocks if b.get("type") == "text"]) or None,
                    "tool_calls": [
                        {
                            "id": b["id"],
                            "name": b["name"],
                            "arguments": json.dumps(b.get("input") or {}),
                        }
                        for b in uses
                    ],
                }
            )
            for b in uses:
                pending[b["id"]] = b
        elif kind == "user":
            for b in message.get("content") or []:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    use = pending.pop(b.get("tool_use_id"), {})
                    calls += 1
                    trajectory.append(
                        {
                            "type": "tool",
                            "turn": turns,
                            "id": b.get("tool_use_id"),
                            "name": use.get("name"),
                            "arguments": json.dumps(use.get("input") or {}),
                            "result": _text_of(b.get("content")),
                            "is_error": bool(b.get("is_error")),
                        }
                    )
        elif kind == "result":
            text = event.get("result") or ""
            usage = event.get("usage") or {}
            if event.get("is_error") or event.get("subtype") != "success":
                error = text or str(event.get("subtype"))
    return Session(
        text=text,
        trajectory=trajectory,
        input_tokens=int(usage.get("input_tokens") or 0),
        output_tokens=int(usage.get("output_tokens") or 0),
        model_calls=turns,
        tool_calls=calls,
        error=error,
    )


# --- Codex CLI ------------------------------------------------------------------------------
def _toml(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def codex_invoke(
    *,
    exe: str,
    home: str,
    prompt: str,
    model: str | None,
    system_prompt: str | None,
    base_url: str | None,
    api_key: str | None,
    mcp_url: str | None,
) -> Invocation:
    lines = []
    if model:
        lines.append(f"model = {_toml(model)}")
    if base_url:
        lines += [
            'model_provider = "agentenv"',
            "",
            "[model_providers.agentenv]",
            'name = "agentenv"',
            f"base_url = {_toml(base_url)}",
            'env_key = "OPENAI_API_KEY"',
            'wire_api = "responses"',
        ]
    if mcp_url:
        lines += [
            "",
            f"[mcp_servers.{SERVER}]",
            f"url = {_toml(mcp_url)}",
            f"bearer_token_env_var = {_toml(TOKEN_ENV)}",
        ]
    text = prompt if not system_prompt else f"{system_prompt}\n\n{prompt}"
    argv = [
        exe,
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
        text,
    ]
    env = {"CODEX_HOME": f"{home}/.codex", "OPENAI_API_KEY": api_key or "unused"}
    return Invocation(files={".codex/config.toml": "\n".join(lines) + "\n"}, argv=argv, env=env)


def codex_parse(stdout: str) -> Session:
    trajectory: list[dict[str, Any]] = []
    texts: list[str] = []
    error, inp, out, turns, calls = None, 0, 0, 0, 0
    for event in _lines(stdout):
        kind = event.get("type")
        item = event.get("item") or {}
        if kind == "turn.started":
            turns += 1
        elif kind == "item.completed" and item.get("type") == "agent_message":
            texts.append(item.get("text") or "")
            trajectory.append(
                {"type": "model", "turn": turns, "content": item.get("text"), "tool_calls": []}
            )
        elif kind == "item.completed" and item.get("type") == "mcp_tool_call":
            calls += 1
            result = item.get("result") or {}
            trajectory.append(
                {
                    "type": "tool",
                    "turn": turns,
                    "id": item.get("id"),
                    "name": item.get("tool"),
                    "server": item.get("server"),
                    "arguments": json.dumps(item.get("arguments") or {}),
                    "result": _text_of(result.get("content"))
                    if isinstance(result, dict)
                    else result,
                    "is_error": item.get("status") == "failed" or bool(item.get("error")),
                }
            )
        elif kind == "item.completed" and item.get("type") == "command_execution":
            trajectory.append(
                {
                    "type": "tool",
                    "turn": turns,
                    "id": item.get("id"),
                    "name": "shell",
                    "arguments": json.dumps({"command": item.get("command")}),
                    "result": item.get("aggregated_output"),
                    "is_error": item.get("exit_code") not in (0, None),
                }
            )
        elif kind == "turn.completed":
            usage = event.get("usage") or {}
            inp += int(usage.get("input_tokens") or 0)
            out += int(usage.get("output_tokens") or 0)
        elif kind in ("turn.failed", "error"):
            error = str((event.get("error") or {}).get("message") or event.get("message") or kind)
            trajectory.append({"type": "error", "class": "agent", "message": error})
    return Session(
        text=texts[-1] if texts else "",
        trajectory=trajectory,
        input_tokens=inp,
        output_tokens=out,
        model_calls=turns,
        tool_calls=calls,
        error=error,
    )


# --- Gemini CLI -----------------------------------------------------------------------------
def gemini_invoke(
    *,
    exe: str,
    home: str,
    prompt: str,
    model: str | None,
    system_prompt: str | None,
    base_url: str | None,
    api_key: str | None,
    mcp_url: str | None,
) -> Invocation:
    settings: dict[str, Any] = {
        "general": {"disableAutoUpdate": True},
        "privacy": {"usageStatisticsEnabled": False},
        # the API key auth honours GOOGLE_GEMINI_BASE_URL (the `gateway` auth that variable
        # selects by default is refused by headless runs)
        "security": {"auth": {"selectedType": "gemini-api-key"}},
    }
    if mcp_url:
        settings["mcpServers"] = {
            SERVER: {
                "httpUrl": mcp_url,
                "trust": True,
                "headers": {"Authorization": f"Bearer ${TOKEN_ENV}"},
            }
        }
    argv = [
        exe,
        "-p",
        prompt if not system_prompt else f"{system_prompt}\n\n{prompt}",
        "--output-format",
        "stream-json",
        "--yolo",
    ]
    if model:
        argv += ["--model", model]
    env = {
        "GEMINI_CLI_HOME": home,
        "GEMINI_API_KEY": api_key or "unused",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",  # headless runs refuse an untrusted folder
    }
    if base_url:  # the Gemini API's root: the client adds `/v1beta/models/...` itself
        env["GOOGLE_GEMINI_BASE_URL"] = base_url.rstrip("/").removesuffix("/v1")
    return Invocation(
        files={".gemini/settings.json": json.dumps(settings, indent=1)}, argv=argv, env=env
    )


def gemini_parse(stdout: str) -> Session:
    trajectory: list[dict[str, Any]] = []
    pending: dict[str, dict[str, Any]] = {}
    texts: list[str] = []
    error, calls, inp, out = None, 0, 0, 0
    for event in _lines(stdout):
        kind = event.get("type")
        if kind == "message" and event.get("role") == "assistant":
            texts.append(event.get("content") or "")
        elif kind == "tool_use":
            pending[event.get("tool_id")] = event
            trajectory.append(
                {
                    "type": "model",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": event.get("tool_id"),
                            "name": event.get("tool_name"),
                            "arguments": json.dumps(event.get("parameters") or {}),
                        }
                    ],
                }
            )
        elif kind == "tool_result":
            use = pending.pop(event.get("tool_id"), {})
            calls += 1
            trajectory.append(
                {
                    "type": "tool",
                    "id": event.get("tool_id"),
                    "name": use.get("tool_name"),
                    "arguments": json.dumps(use.get("parameters") or {}),
                    "result": _text_of(event.get("output")),
                    "is_error": event.get("status") != "success",
                }
            )
        elif kind == "result":
            stats = event.get("stats") or {}
            inp, out = int(stats.get("input_tokens") or 0), int(stats.get("output_tokens") or 0)
            if event.get("status") not in (None, "success"):
                error = str(event.get("error") or event.get("status"))
    text = "".join(texts)
    if text:
        trajectory.append({"type": "model", "content": text, "tool_calls": []})
    return Session(
        text=text,
        trajectory=trajectory,
        input_tokens=inp,
        output_tokens=out,
        model_calls=sum(1 for e in trajectory if e["type"] == "model"),
        tool_calls=calls,
        error=error,
    )


# --- OpenCode -------------------------------------------------------------------------------
def opencode_invoke(
    *,
    exe: str,
    home: str,
    prompt: str,
    model: str | None,
    system_prompt: str | None,
    base_url: str | None,
    api_key: str | None,
    mcp_url: str | None,
) -> Invocation:
    config: dict[str, Any] = {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "permission": {"edit": "allow", "bash": "allow"},
    }
    name = model or "default"
    if base_url:
        config["provider"] = {
            "agentenv": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "agentenv",
                "options": {"baseURL": base_url, "apiKey": "{env:AGENTENV_MODEL_KEY}"},
                "models": {name: {"name": name}},
            }
        }
        config["model"] = f"agentenv/{name}"
    if mcp_url:
        config["mcp"] = {
            SERVER: {
                "type": "remote",
                "url": mcp_url,
                "enabled": True,
                "headers": {"Authorization": f"Bearer {{env:{TOKEN_ENV}}}"},
            }
        }
    text = prompt if not system_prompt else f"{system_prompt}\n\n{prompt}"
    argv = [exe, "run", "--format", "json", text]
    env = {
        "OPENCODE_CONFIG": f"{home}/opencode.json",
        "XDG_DATA_HOME": f"{home}/.local/share",
        "XDG_CONFIG_HOME": f"{home}/.config",
        "AGENTENV_MODEL_KEY": api_key or "unused",
    }
    return Invocation(files={"opencode.json": json.dumps(config, indent=1)}, argv=argv, env=env)


def opencode_parse(stdout: str) -> Session:
    trajectory: list[dict[str, Any]] = []
    texts: list[str] = []
    error, calls, steps, inp, out = None, 0, 0, 0, 0
    for event in _lines(stdout):
        part = event.get("part") or {}
        kind = event.get("type")
        if kind == "step_finish":
            steps += 1
            tokens = part.get("tokens") or {}
            inp += int(tokens.get("input") or 0)
            out += int(tokens.get("output") or 0)
        elif kind == "text" and part.get("text"):
            texts.append(part["text"])
            trajectory.append({"type": "model", "content": part["text"], "tool_calls": []})
        elif kind == "tool_use":
            state = part.get("state") or {}
            calls += 1
            trajectory.append(
                {
                    "type": "tool",
                    "id": part.get("callID"),
                    "name": part.get("tool"),
                    "arguments": json.dumps(state.get("input") or {}),
                    "result": _text_of(state.get("output")),
                    "is_error": state.get("status") == "error",
                }
            )
        elif kind == "error":
            error = json.dumps(event.get("error") or event)
    return Session(
        text=texts[-1] if texts else "",
        trajectory=trajectory,
        input_tokens=inp,
        output_tokens=out,
        model_calls=steps,
        tool_calls=calls,
        error=error,
    )


HARNESSES = (
    Harness(
        type="claude-code",
        aliases=("claude",),
        package="@anthropic-ai/claude-code",
        version="2.1.332",
        binary="claude",
        api="anthropic",
        invoke=claude_invoke,
        parse=claude_parse,
    ),
    Harness(
        type="codex",
        aliases=("codex-cli",),
        package="@openai/codex",
        version="0.171.0",
        binary="codex",
        api="openai",
        invoke=codex_invoke,
        parse=codex_parse,
    ),
    Harness(
        type="gemini",
        aliases=("gemini-cli",),
        package="@google/gemini-cli",
        version="0.61.0",
        binary="gemini",
        api="gemini",
        invoke=gemini_invoke,
        parse=gemini_parse,
    ),
    Harness(
        type="opencode",
        aliases=(),
        package="opencode-ai",
        version="1.18.33",
        binary="opencode",
        api="openai",
        invoke=opencode_invoke,
        parse=opencode_parse,
    ),
)
