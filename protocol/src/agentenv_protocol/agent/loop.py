"""The tool loop every LLM agent here shares: ask the model, run the tool calls it makes (in
parallel, each with a timeout) through MCP, feed the results back, until it answers in text
or `max_turns` model calls are used up.

Failures come back as `AgentResult.failure` (never a hang, never a bare exception): a model
that never stops calling tools is an `agent` failure, an unreachable MCP server an `env` one,
a missing or dead model endpoint `infrastructure`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

import anyio
import attrs

from agentenv_protocol.agent.chat import ChatClient, ChatError
from agentenv_protocol.agent.types import AgentResult, McpServer, Usage
from agentenv_protocol.client import EnvClient
from agentenv_protocol.errors import EnvUnavailable, ProtocolError


class MaxTurnsExceeded(Exception):
    """The model was still calling tools after `max_turns` model calls."""


@attrs.frozen(kw_only=True)
class LoopResult:
    text: str
    messages: list[dict[str, Any]]
    usage: Usage
    trajectory: list[dict[str, Any]]


class McpTools:
    """The tools of one or more MCP servers (e.g. the run's gateway), as OpenAI tool specs."""

    def __init__(self, servers: Sequence[McpServer], *, timeout: float = 120.0) -> None:
        self.servers = list(servers)
        self.timeout = timeout
        self.clients: dict[str, EnvClient] = {}
        self.https: list[Any] = []
        self.owner: dict[str, str] = {}
        self.specs: list[dict[str, Any]] = []

    async def __aenter__(self) -> McpTools:
        from agentenv_protocol import _http

        for server in self.servers:
            base, path = _split_mcp_url(server.url)
            http = _http.client(self.timeout, connect=5.0, headers=server.headers)
            self.https.append(http)
            self.clients[server.name] = EnvClient(
                base, mcp_path=path, timeout=self.timeout, http=http
            )
        for name, client in self.clients.items():
            for tool in await client.list_tools(timeout=30):
                if tool.name in self.owner:
                    continue
                self.owner[tool.name] = name
                self.specs.append(
                    {
                        "type": "function",
                        "function": {
                            "name": tool.name,
                            "description": tool.description or "",
                            "parameters": tool.inputSchema or {"type": "object", "properties": {}},
                        },
                    }
                )
        return self

    async def __aexit__(self, *exc: Any) -> None:
        for client in self.clients.values():
            await client.aclose()
        for http in self.https:
            await http.aclose()

    async def call(self, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        """(result text, is_error). An unknown tool is an error result the model sees."""
        server = self.owner.get(name)
        if server is None:
            return (
                f"unknown tool {name!r}; available: {', '.join(sorted(self.owner)) or 'none'}",
                True,
            )
        result = await self.clients[server].call_tool(name, arguments, timeout=self.timeout)
        text = result.text
        if not text and result.structured is not None:
            text = json.dumps(result.structured)
        return text, result.is_error


def _split_mcp_url(url: str) -> tuple[str, str]:
    """`http://h:p/mcp` -> (`http://h:p`, `/mcp`); a bare base gets `/mcp`."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    base = f"{parts.scheme}://{parts.netloc}"
    return base, (parts.path.rstrip("/") or "/mcp")


class ToolLoop:
    """Runs one prompt through the model and the tools; `history` keeps a conversation going."""

    def __init__(
        self,
        chat: ChatClient,
        *,
        model: str | None,
        max_turns: int = 30,
        params: dict[str, Any] | None = None,
    ) -> None:
        self.chat = chat
        self.model = model
        self.max_turns = max_turns
        self.params = dict(params or {})

    async def run(
        self,
        text: str,
        *,
        tools: McpTools | None,
        system_prompt: str | None = None,
        history: Sequence[dict[str, Any]] = (),
    ) -> AgentResult:
        messages: list[dict[str, Any]] = list(history)
        if system_prompt and not any(m.get("role") == "system" for m in messages):
            messages.insert(0, {"role": "system", "content": system_prompt})
        messages.append({"role": "user", "content": text})
        usage = Usage()
        trajectory: list[dict[str, Any]] = [{"type": "user", "content": text}]
        specs = tools.specs if tools is not None else []

        def done(answer: str, failure: tuple[str, str] | None = None) -> AgentResult:
            return AgentResult(
                text=answer,
                messages=tuple(messages),
                usage=usage,
                trajectory=tuple(trajectory),
                failure=failure,
            )

        for turn in range(1, self.max_turns + 1):
            try:
                reply = await self.chat.complete(
                    model=self.model, messages=messages, tools=specs, params=self.params
                )
            except ChatError as e:
                trajectory.append(
                    {"type": "error", "turn": turn, "class": e.failure_class, "message": str(e)}
                )
                return done("", (e.failure_class, str(e)))
            usage = usage + reply.usage
            message: dict[str, Any] = {"role": "assistant", "content": reply.message.get("content")}
            calls = reply.message.get("tool_calls") or []
            if calls:
                message["tool_calls"] = [_normal_call(c, turn, i) for i, c in enumerate(calls)]
            messages.append(message)
            trajectory.append(
                {
                    "type": "model",
                    "turn": turn,
                    "content": message["content"],
                    "tool_calls": [
                        {
                            "id": c["id"],
                            "name": c["function"]["name"],
                            "arguments": c["function"]["arguments"],
                        }
                        for c in message.get("tool_calls", [])
                    ],
                    "usage": reply.usage.to_json(),
                    "finish_reason": reply.finish_reason,
                }
            )
            if not calls:
                return done(message["content"] or "")
            usage = usage + Usage(tool_call_count=len(calls))
            if tools is None:
                failure = (
                    "agent",
                    f"the model called {calls[0]['function']['name']!r} but the agent has no tools",
                )
                return done(message["content"] or "", failure)
            results: list[Any] = [None] * len(message["tool_calls"])
            async with anyio.create_task_group() as tg:
                for i, call in enumerate(message["tool_calls"]):
                    tg.start_soon(self._one_call, tools, call, results, i)
            broken = next((r[3] for r in results if r[3] is not None), None)
            if broken is not None:
                # the gateway (or MCP server) could not be reached: transport between the
                # run's own processes, not the env's nor the agent's doing
                trajectory.append(
                    {"type": "error", "turn": turn, "class": "infrastructure", "message": broken}
                )
                return done("", ("infrastructure", f"the tools' MCP server failed: {broken}"))
            for call, (content, is_error, seconds, _) in zip(
                message["tool_calls"], results, strict=True
            ):
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
                trajectory.append(
                    {
                        "type": "tool",
                        "turn": turn,
                        "id": call["id"],
                        "name": call["function"]["name"],
                        "arguments": call["function"]["arguments"],
                        "result": content,
                        "is_error": is_error,
                        "seconds": round(seconds, 4),
                    }
                )
        failure = (
            "agent",
            f"the model kept calling tools for {self.max_turns} turns (max_turns) "
            "without a final answer",
        )
        trajectory.append({"type": "error", "class": "agent", "message": failure[1]})
        return done("", failure)

    async def _one_call(
        self, tools: McpTools, call: dict[str, Any], results: list, index: int
    ) -> None:
        started = time.perf_counter()
        raw = call["function"]["arguments"]
        try:
            arguments = json.loads(raw) if isinstance(raw, str) and raw.strip() else (raw or {})
            if not isinstance(arguments, dict):
                raise ValueError("arguments must be a JSON object")
        except ValueError as e:
            results[index] = (
                f"invalid arguments for {call['function']['name']!r}: {e}",
                True,
                time.perf_counter() - started,
                None,
            )
            return
        broken = None
        try:
            with anyio.fail_after(tools.timeout):
                text, is_error = await tools.call(call["function"]["name"], arguments)
        except TimeoutError:
            text, is_error = (
                f"tool {call['function']['name']!r} timed out after {tools.timeout:g}s",
                True,
            )
        except EnvUnavailable as e:
            text, is_error, broken = str(e), True, str(e)
        except ProtocolError as e:
            text, is_error = f"{type(e).__name__}: {e}", True
        results[index] = (text, is_error, time.perf_counter() - started, broken)


def _normal_call(call: dict[str, Any], turn: int, index: int) -> dict[str, Any]:
    function = call.get("function") or {}
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments if arguments is not None else {})
    return {
        "id": call.get("id") or f"call_{turn}_{index}",
        "type": "function",
        "function": {"name": function["name"], "arguments": arguments},
    }
