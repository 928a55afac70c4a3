"""Helpers for verifier scripts: a tool's answer as JSON, and an env's state.

A verifier artifact's `verify(mcp_url)` gets the run gateway's MCP URL for the `verifier`
role. With these it needs no MCP client code of its own::

    from agentenv_protocol.verifier import env_data, tool_json

    def verify(mcp_url):
        sent = tool_json(mcp_url, "list_sent")           # the tool's value, as JSON
        parts = env_data(mcp_url, "mail")                 # the env's `@get_data` parts
        return [{"id": "replied", "result": bool(sent["sent"])}]

Both are plain functions (each runs its own event loop); `tool_json_async` and
`env_data_async` are the coroutines, for an `async def verify`.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from agentenv_protocol._http import tls_context
from agentenv_protocol.client import ToolResult
from agentenv_protocol.constants import METHOD_GET
from agentenv_protocol.types import RPC_PATH

TIMEOUT = 30.0


class VerifierToolError(RuntimeError):
    """The tool answered with an error (its text is the message), or the env's data plane
    refused the read."""


def _wrapped(schema: dict | None) -> bool:
    """Whether a tool's output schema wraps a non-object value under `result` (as FastMCP and
    this SDK do for lists, scalars and the like)."""
    if not isinstance(schema, dict):
        return False
    if schema.get("x-fastmcp-wrap-result"):
        return True
    props = schema.get("properties") or {}
    return set(props) == {"result"} and str(schema.get("title", "")).endswith("Output")


def value_of(result: ToolResult, output_schema: dict | None = None) -> Any:
    """The JSON value a tool returned: its structured content (unwrapped when the schema
    wraps it), else its text blocks parsed (one block: its value; several, as servers send a
    list one item per block: the list of their values; text that is not JSON stays text)."""
    import json

    if result.is_error:
        raise VerifierToolError(result.text or "the tool failed without a message")
    if result.structured is not None:
        if _wrapped(output_schema) and isinstance(result.structured, dict):
            return result.structured.get("result")
        return result.structured
    texts = [c.get("text", "") for c in result.content if c.get("type") == "text"]

    def parsed(text: str) -> Any:
        try:
            return json.loads(text)
        except ValueError:
            return text

    if not texts:
        return None
    if len(texts) == 1:
        return parsed(texts[0])
    return [parsed(t) for t in texts]


async def tool_json_async(
    mcp_url: str, tool: str, arguments: dict[str, Any] | None = None, *, timeout: float = TIMEOUT
) -> Any:
    """Call `tool` through the gateway at `mcp_url`; its value as JSON (see `value_of`)."""
    from agentenv_protocol.tool_client import ToolSession

    async with ToolSession(mcp_url=mcp_url, timeout=timeout) as session:
        schemas = {t.name: getattr(t, "outputSchema", None) for t in await session.list_tools()}
        if tool not in schemas:
            from agentenv_protocol.schema import did_you_mean

            raise VerifierToolError(
                f"no tool {tool!r} at the gateway{did_you_mean(tool, schemas)}; "
                f"it serves: {', '.join(sorted(schemas))}"
            )
        result = await session.call_tool(tool, arguments or {})
    return value_of(result, schemas[tool])


def tool_json(
    mcp_url: str, tool: str, arguments: dict[str, Any] | None = None, *, timeout: float = TIMEOUT
) -> Any:
    """`tool_json_async` for a plain `verify(mcp_url)`."""
    return asyncio.run(tool_json_async(mcp_url, tool, arguments, timeout=timeout))


def _svc_url(mcp_url: str, env: str) -> str:
    base = mcp_url.rstrip("/")
    if not base.endswith("/mcp"):
        raise ValueError(f"{mcp_url!r} is not a gateway MCP URL (…/mcp)")
    return f"{base[: -len('/mcp')]}/svc/{env}{RPC_PATH}"


async def env_data_async(mcp_url: str, env: str, *, timeout: float = TIMEOUT) -> list[dict]:
    """The env's state as its `@get_data` handler gives it (a list of part dicts), read through
    the gateway with the verifier's own URL (the verifier role may `data/get`, nothing else)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": METHOD_GET, "params": {}}
    async with httpx.AsyncClient(timeout=timeout, verify=tls_context()) as http:
        response = await http.post(_svc_url(mcp_url, env), json=body)
    try:
        answer = response.json()
    except ValueError:
        answer = {"error": {"message": response.text[:300]}}
    if response.status_code >= 400 or "error" in answer:
        error = answer.get("error")
        message = error.get("message") if isinstance(error, dict) else error
        raise VerifierToolError(
            f"reading env {env!r} (HTTP {response.status_code}): {message or answer}"
        )
    return list((answer.get("result") or {}).get("parts") or [])


def env_data(mcp_url: str, env: str, *, timeout: float = TIMEOUT) -> list[dict]:
    """`env_data_async` for a plain `verify(mcp_url)`."""
    return asyncio.run(env_data_async(mcp_url, env, timeout=timeout))
